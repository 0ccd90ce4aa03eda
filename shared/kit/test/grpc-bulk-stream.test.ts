import assert from 'node:assert/strict';
import {
  bulkMessageItems,
  bulkStreamHandler,
  createLogger,
  grpc,
  trustedMerchantId,
  ValidationFailed,
  type AccessClaims,
  type TokenVerifier,
} from '../src/index.js';

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
        // `x` is one item; `page:N` a page of N items; `both` a message that is neither (refused).
        itemsOf: (message, firstIndex) => {
          const text = message.toString();
          if (text === 'both') throw new ValidationFailed([{ field: 'product', code: 'not_allowed', message: 'set product or products, not both' }]);
          if (!text.startsWith('page:')) return { items: [firstIndex], paged: false };
          return { items: Array.from({ length: Number(text.slice(5)) }, (_, offset) => firstIndex + offset), paged: true };
        },
        pageOf: (answers) => Buffer.from(`[${answers.map(String).join(',')}]`),
        keyOf: () => undefined,
        write: async (_claims, items) => {
          chunksWritten += 1;
          await new Promise((resolve) => setTimeout(resolve, 50));
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

  /** Sends these messages in one stream and collects every answer and the final status. */
  async function exchange(messages: string[]): Promise<{ answers: string[]; error: grpc.ServiceError | undefined }> {
    const client = new grpc.Client(address, grpc.credentials.createInsecure());
    const call = open(client);
    const answers: string[] = [];
    call.on('data', (answer: Buffer) => answers.push(answer.toString()));
    const done = new Promise<grpc.ServiceError | undefined>((resolve) => {
      call.on('end', () => resolve(undefined));
      call.on('error', (error: grpc.ServiceError) => resolve(error));
    });
    for (const message of messages) call.write(Buffer.from(message));
    call.end();
    const error = await done;
    client.close();
    return { answers, error };
  }

  it('answers a page with one message holding its items in order, even when the page spans chunks', async () => {
    // Chunks hold 50 items: the page of 120 is written in three of them (with its neighbours).
    const { answers, error } = await exchange(['x', 'page:120', 'x', 'x', 'page:3', 'x']);
    assert.equal(error, undefined);
    const page = (from: number, length: number) => `[${Array.from({ length }, (_, offset) => from + offset).join(',')}]`;
    assert.deepEqual(answers, ['0', page(1, 120), '121', '122', page(123, 3), '126']);
  });

  it('ends the call INVALID_ARGUMENT at a message that is neither one item nor a page, after answering what came before', async () => {
    const { answers, error } = await exchange(['x', 'both', 'x']);
    assert.equal(error?.code, grpc.status.INVALID_ARGUMENT);
    assert.match(error?.details ?? '', /not both/);
    assert.ok(answers.length <= 1, `answered ${answers.length} items`);
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
    // How soon the server hears of the cancel depends on the machine's load, so this checks that
    // writing stops, not how many chunks started before it did.
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.ok(performance.now() - started < 5_000, 'timers still run after the cancel');
    const settled = chunksWritten;
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(chunksWritten, settled, 'no chunk starts once the cancel has arrived');
    assert.ok(chunksWritten < 2_000 / 50, `${chunksWritten - before} chunks written after the cancel, not the stream's remaining ${2_000 / 50 - before}`);
    client.close();
  });
});

describe('bulk streams write two chunks at once and still answer in stream order', function () {
  this.timeout(30_000);
  interface Item {
    index: number;
    key: string;
    /** How long the chunk holding this item takes to write (the longest of its items). */
    ms: number;
    fails: boolean;
  }
  let server: grpc.Server;
  let address: string;
  /** What each write saw, in the order things happened. */
  let log: string[] = [];

  before(async () => {
    server = new grpc.Server();
    server.addService(definition, {
      Upsert: bulkStreamHandler<Buffer, Item, Buffer>({
        verifier,
        scope: 'bulk:test',
        logger: createLogger('kit-test', 'silent'),
        chunkSize: 2,
        readAhead: 8,
        itemsOf: (message, index) => ({ items: [{ index, ...(JSON.parse(message.toString()) as Omit<Item, 'index'>) }], paged: false }),
        pageOf: () => {
          throw new Error('no pages in this stream');
        },
        keyOf: (item) => item.key,
        write: async (_claims, items) => {
          const name = items.map((item) => item.key).join('+');
          log.push(`start ${name}`);
          await new Promise((resolve) => setTimeout(resolve, Math.max(...items.map((item) => item.ms))));
          log.push(`end ${name}`);
          if (items.some((item) => item.fails)) throw new Error(`chunk ${name} failed`);
          return items.map((item) => Buffer.from(`${item.index}:${item.key}`));
        },
      }),
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
    );
    address = `127.0.0.1:${port}`;
  });

  beforeEach(() => {
    log = [];
  });

  after(() => {
    server.forceShutdown();
  });

  /** Sends the items in one stream (all before the first answer) and collects the answers and the final status. */
  async function stream(items: Array<Omit<Item, 'index'>>): Promise<{ answers: string[]; error: grpc.ServiceError | undefined }> {
    const client = new grpc.Client(address, grpc.credentials.createInsecure());
    const metadata = new grpc.Metadata();
    metadata.set('authorization', 'Bearer test');
    const call = client.makeBidiStreamRequest(METHOD, identity.serialize, identity.deserialize, metadata);
    const answers: string[] = [];
    call.on('data', (answer: Buffer) => answers.push(answer.toString()));
    const done = new Promise<grpc.ServiceError | undefined>((resolve) => {
      call.on('end', () => resolve(undefined));
      call.on('error', (error: grpc.ServiceError) => resolve(error));
    });
    for (const item of items) call.write(Buffer.from(JSON.stringify(item)));
    call.end();
    const error = await done;
    client.close();
    return { answers, error };
  }

  /** Where in the log the write of the chunk holding `key` (its `nth` occurrence, from 0) started or ended. */
  const at = (event: 'start' | 'end', key: string, nth = 0) =>
    log
      .map((line, position) => ({ line, position }))
      .filter(
        ({ line }) =>
          line.startsWith(`${event} `) &&
          line
            .slice(event.length + 1)
            .split('+')
            .includes(key),
      )[nth]?.position ?? -1;

  // How many items the first chunk gets depends on how the messages arrive (the first is written
  // as soon as anything is read), so these check what must hold for any cut into chunks.
  it('starts the next chunk while a slow one is written, and answers the slow one first', async () => {
    const { answers, error } = await stream([
      // Long enough that c's chunk starts and ends inside it even on a loaded machine.
      { key: 'a', ms: 1_500, fails: false },
      { key: 'b', ms: 1, fails: false },
      { key: 'c', ms: 1, fails: false },
      { key: 'd', ms: 1, fails: false },
    ]);
    assert.equal(error, undefined);
    assert.deepEqual(answers, ['0:a', '1:b', '2:c', '3:d']);
    // The second chunk (c is in it however the first was cut) was written meanwhile and finished
    // first: pipelined, yet answered in order.
    assert.ok(at('start', 'c') < at('end', 'a'), log.join(', '));
    assert.ok(at('end', 'c') < at('end', 'a'), log.join(', '));
  });

  it('holds back a chunk that repeats a key of one under way until that one is written', async () => {
    const { answers } = await stream([
      { key: 'a', ms: 200, fails: false },
      { key: 'b', ms: 1, fails: false },
      { key: 'a', ms: 1, fails: false },
      { key: 'c', ms: 1, fails: false },
    ]);
    assert.deepEqual(answers, ['0:a', '1:b', '2:a', '3:c']);
    assert.ok(at('start', 'a', 1) > at('end', 'a', 0), log.join(', '));
  });

  it('answers the chunks before a failing one, then ends with its error', async () => {
    const { answers, error } = await stream([
      { key: 'a', ms: 1, fails: false },
      { key: 'b', ms: 1, fails: false },
      { key: 'c', ms: 100, fails: true },
      { key: 'd', ms: 1, fails: false },
      { key: 'e', ms: 1, fails: false },
      { key: 'f', ms: 1, fails: false },
    ]);
    assert.equal(error?.code, grpc.status.INTERNAL);
    // Whatever came before the failing chunk, in order; nothing of it or after it, though later chunks may have been written.
    assert.deepEqual(answers, ['0:a', '1:b'].slice(0, answers.length));
    assert.ok(at('end', 'c') >= 0);
  });
});

describe('bulkMessageItems: one item or a page, never both', () => {
  const fields = { single: 'product', page: 'products', max: 3 };
  const itemOf = (input: string | undefined, index: number) => `${index}:${input ?? '(unset)'}`;

  it('reads a message without a page as its one item, set or not (the item check says what is missing)', () => {
    assert.deepEqual(bulkMessageItems(fields, 'a', [], 7, itemOf), { items: ['7:a'], paged: false });
    assert.deepEqual(bulkMessageItems(fields, undefined, [], 0, itemOf), { items: ['0:(unset)'], paged: false });
  });

  it('numbers a page from the stream position it starts at', () => {
    assert.deepEqual(bulkMessageItems(fields, undefined, ['a', 'b', 'c'], 4, itemOf), { items: ['4:a', '5:b', '6:c'], paged: true });
  });

  it('refuses both fields at once and a page over the limit, naming each field', () => {
    assert.throws(
      () => bulkMessageItems(fields, 'a', ['b', 'c', 'd', 'e'], 0, itemOf),
      (error: unknown) =>
        error instanceof ValidationFailed &&
        JSON.stringify(error.errors.map((e) => [e.field, e.code])) ===
          JSON.stringify([
            ['product', 'not_allowed'],
            ['products', 'too_long'],
          ]),
    );
  });
});
