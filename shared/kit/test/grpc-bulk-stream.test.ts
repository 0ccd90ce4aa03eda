import assert from 'node:assert/strict';
import { bulkStreamHandler, createLogger, grpc, trustedMerchantId, type AccessClaims, type TokenVerifier } from '../src/index.js';

const identity = { serialize: (bytes: Buffer) => bytes, deserialize: (bytes: Buffer) => bytes };
const METHOD = '/merx.test.Bulk/Upsert';
const definition: grpc.ServiceDefinition = {
  Upsert: {
    path: METHOD,
    requestStream: true,
    responseStream: true,
    requestSerialize: identity.serialize,
    requestDeserialize: identity.deserialize,
    responseSerialize: identity.serialize,
    responseDeserialize: identity.deserialize,
  },
};
const claims: AccessClaims = {
  merchantId: trustedMerchantId('mch_01jd3k7q8m2x4v6b9c0d1e2f3g'),
  clientId: 'mx_test_bulk',
  scopes: new Set(['bulk:test']),
  tokenId: undefined,
  expiresAt: Date.now() / 1000 + 900,
  issuedAt: Math.floor(Date.now() / 1000),
  actor: { type: 'api_key', id: 'mx_test_bulk' },
};
const verifier: TokenVerifier = { verify: async () => claims };

describe('bulk streams (bulkStreamHandler) over a real gRPC connection', function () {
  this.timeout(30_000);
  let server: grpc.Server;
  let address: string;
  let chunksWritten = 0;

  before(async () => {
    server = new grpc.Server();
    server.addService(definition, {
      Upsert: bulkStreamHandler<Buffer, number, Buffer>({
        verifier,
        scope: 'bulk:test',
        logger: createLogger('kit-test', 'silent'),
        chunkSize: 50,
        readAhead: 200,
        itemOf: (_message, index) => index,
        write: async (_claims, items) => {
          chunksWritten += 1;
          await new Promise((resolve) => setTimeout(resolve, 20));
          return items.map((index) => Buffer.from(String(index)));
        },
      }),
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
    );
    address = `127.0.0.1:${port}`;
  });

  after(() => {
    server.forceShutdown();
  });

  const open = (client: grpc.Client) => {
    const metadata = new grpc.Metadata();
    metadata.set('authorization', 'Bearer test');
    return client.makeBidiStreamRequest(METHOD, identity.serialize, identity.deserialize, metadata);
  };

  it('answers every item in order', async () => {
    const client = new grpc.Client(address, grpc.credentials.createInsecure());
    const call = open(client);
    const answers: string[] = [];
    call.on('data', (answer: Buffer) => answers.push(answer.toString()));
    const ended = new Promise((resolve, reject) => {
      call.on('end', resolve);
      call.on('error', reject);
    });
    for (let i = 0; i < 300; i += 1) call.write(Buffer.from('x'));
    call.end();
    await ended;
    assert.deepEqual(
      answers,
      Array.from({ length: 300 }, (_, i) => String(i)),
    );
    client.close();
  });

  it('stops after a cancel with items still unread, and the process keeps serving', async () => {
    const client = new grpc.Client(address, grpc.credentials.createInsecure());
    const call = open(client);
    call.on('error', () => undefined);
    const firstAnswer = new Promise((resolve) => call.once('data', resolve));
    for (let i = 0; i < 2_000; i += 1) call.write(Buffer.from('x'));
    await firstAnswer;
    const before = chunksWritten;
    call.cancel();
    // A handler that spun on its leftover items would starve timers (this one included) for good.
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.ok(performance.now() - started < 5_000, 'timers still run after the cancel');
    assert.ok(chunksWritten - before <= 2, `${chunksWritten - before} chunks written after the cancel: at most the one under way`);
    client.close();
  });
});
