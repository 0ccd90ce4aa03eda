import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { create, toBinary } from '@bufbuild/protobuf';
import {
  BatchCreateProductsRequestSchema,
  BatchCreateProductsResponseSchema,
  ProductService,
  type BatchCreateProductsRequest,
  type BatchCreateProductsResponse,
} from '@merx/contracts/grpc';
import { createLogger, grpc, grpcServiceDefinitionOf, newId, startGrpcServer, type RunningGrpcServer } from '@merx/kit';
import { DEFAULT_GRPC_CONNECTION_SETTINGS, grpcConnectionSettingsFromEnv, type GrpcConnectionSettings } from '../src/grpc/connections.js';
import { startGrpcEdge, type RunningGrpcEdge } from '../src/grpc/edge.js';
import { testTokens } from './test-tokens.js';

const BATCH_PATH = '/merx.v1.ProductService/BatchCreateProducts';

/** Resolves with the milliseconds until `emitter` says `event` (a socket's or session's close). */
const timeUntil = (emitter: NodeJS.EventEmitter, event: string, since: number) =>
  new Promise<number>((resolve) => emitter.once(event, () => resolve(Date.now() - since)));

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A TCP connection that sends nothing; resolves once it is connected. */
async function silentConnection(port: number): Promise<net.Socket> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.on('data', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  return socket;
}

/** An HTTP/2 session (preface and SETTINGS sent) that opens no stream unless asked. */
async function session(port: number): Promise<http2.ClientHttp2Session> {
  const opened = http2.connect(`http://127.0.0.1:${port}`);
  opened.on('error', () => undefined);
  await new Promise((resolve) => opened.once('remoteSettings', resolve));
  return opened;
}

/** One unary gRPC call on a raw session, framed by hand: its grpc-status (and message). */
function rawCall(on: http2.ClientHttp2Session, path: string, message: Uint8Array, token?: string): Promise<{ status: number; message: string }> {
  return new Promise((resolve, reject) => {
    const stream = on.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    });
    const frame = Buffer.alloc(5 + message.length);
    frame.writeUInt32BE(message.length, 1);
    frame.set(message, 5);
    stream.end(frame);
    stream.on('data', () => undefined);
    let headers: http2.IncomingHttpHeaders = {};
    stream.on('response', (received) => (headers = received));
    stream.on('trailers', (trailers) => (headers = { ...headers, ...trailers }));
    stream.on('error', reject);
    stream.on('close', () => resolve({ status: Number(headers['grpc-status'] ?? -1), message: decodeURIComponent(String(headers['grpc-message'] ?? '')) }));
  });
}

const oneProduct = toBinary(BatchCreateProductsRequestSchema, create(BatchCreateProductsRequestSchema, { products: [{ sku: 'A' }] }));

describe('gRPC edge: connections are bounded (component, raw sockets)', function () {
  this.timeout(30_000);
  const logger = createLogger('grpc-connections-test', 'silent');
  let upstream: RunningGrpcServer;
  let token: string;
  let verifier: Awaited<ReturnType<typeof testTokens>>['verifier'];
  const edges: RunningGrpcEdge[] = [];
  const opened: Array<{ destroy(): void }> = [];

  const startEdge = async (settings: Partial<GrpcConnectionSettings>, trustedProxies?: string[]) => {
    const address = upstream.address;
    const edge = await startGrpcEdge({
      logger,
      verifier,
      upstreams: { catalog: address, merchants: address, webhooks: address },
      port: 0,
      connections: { ...DEFAULT_GRPC_CONNECTION_SETTINGS, ...settings },
      ...(trustedProxies ? { trustedProxies } : {}),
    });
    edges.push(edge);
    return edge;
  };
  const track = <T extends { destroy(): void }>(each: T): T => {
    opened.push(each);
    return each;
  };

  before(async () => {
    const tokens = await testTokens();
    verifier = tokens.verifier;
    token = await tokens.sign({ merchant_id: newId('mch'), client_id: 'mx_test_AAAAAAAAAAAAAAAA', scope: 'products:write', plan: 'sandbox' });
    const batchCreateProducts = (
      call: grpc.ServerUnaryCall<BatchCreateProductsRequest, BatchCreateProductsResponse>,
      callback: grpc.sendUnaryData<BatchCreateProductsResponse>,
    ) => callback(null, create(BatchCreateProductsResponseSchema, { results: call.request.products.map((_, index) => ({ index })) }));
    upstream = await startGrpcServer({
      port: 0,
      services: [
        {
          definition: grpcServiceDefinitionOf(ProductService),
          implementation: { BatchCreateProducts: batchCreateProducts } as grpc.UntypedServiceImplementation,
        },
      ],
    });
  });
  afterEach(() => {
    for (const each of opened.splice(0)) each.destroy();
  });
  after(async () => {
    for (const edge of edges) await edge.stop();
    await upstream.stop();
  });

  it('reads every setting from MERX_GRPC_*, and names each bad one', () => {
    assert.deepEqual(grpcConnectionSettingsFromEnv({}), DEFAULT_GRPC_CONNECTION_SETTINGS);
    assert.equal(grpcConnectionSettingsFromEnv({ MERX_GRPC_AUTH_DEADLINE_MS: '2500' }).authDeadlineMs, 2_500);
    assert.throws(
      () => grpcConnectionSettingsFromEnv({ MERX_GRPC_MAX_IDLE_MS: 'soon', MERX_GRPC_MAX_CONCURRENT_STREAMS: '0' }),
      /MERX_GRPC_MAX_IDLE_MS must be a whole number of at least 1000, not "soon"; MERX_GRPC_MAX_CONCURRENT_STREAMS must be a whole number of at least 1/,
    );
    assert.throws(() => grpcConnectionSettingsFromEnv({ MERX_GRPC_KEEPALIVE_TIME_MS: '5000', MERX_GRPC_KEEPALIVE_TIMEOUT_MS: '5000' }), /must be shorter/);
  });

  it('closes silent TCP connections and preface-only sessions at the deadline to authenticate', async () => {
    const edge = await startEdge({ authDeadlineMs: 500 });
    const started = Date.now();
    const sockets = await Promise.all(Array.from({ length: 10 }, () => silentConnection(edge.port).then(track)));
    const sessions = await Promise.all(Array.from({ length: 10 }, () => session(edge.port).then(track)));
    const lifetimes = await Promise.all([
      ...sockets.map((socket) => timeUntil(socket, 'close', started)),
      ...sessions.map((each) => timeUntil(each, 'close', started)),
    ]);
    for (const lifetime of lifetimes) assert.ok(lifetime >= 450 && lifetime < 2_500, `closed after ${lifetime} ms (deadline 500 ms)`);
    await until(() => edge.connections.open === 0, 2_000, 'the gateway forgets them');
  });

  it('closes a session whose every call is refused UNAUTHENTICATED, however often it calls', async () => {
    const edge = await startEdge({ authDeadlineMs: 600, maxIdleMs: 60_000 });
    const refused = track(await session(edge.port));
    const started = Date.now();
    const closed = timeUntil(refused, 'close', started);
    let calls = 0;
    while (!refused.closed && !refused.destroyed && Date.now() - started < 5_000) {
      const answer = await rawCall(refused, BATCH_PATH, oneProduct, 'not-a-token').catch(() => undefined);
      if (answer) assert.equal(answer.status, grpc.status.UNAUTHENTICATED);
      calls += 1;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const lifetime = await closed;
    assert.ok(calls >= 3, `only ${calls} calls were made`);
    assert.ok(lifetime >= 550 && lifetime < 2_500, `closed after ${lifetime} ms (deadline 600 ms)`);
  });

  it('keeps a connection that authenticated past the deadline, until it idles', async () => {
    const edge = await startEdge({ authDeadlineMs: 300, maxIdleMs: 1_500 });
    const client = track(await session(edge.port));
    const started = Date.now();
    const closed = timeUntil(client, 'close', started);
    assert.equal((await rawCall(client, BATCH_PATH, oneProduct, token)).status, grpc.status.OK);
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal(client.closed || client.destroyed, false, 'an authenticated connection outlived the deadline to authenticate');
    assert.equal((await rawCall(client, BATCH_PATH, oneProduct, token)).status, grpc.status.OK);
    const lifetime = await closed;
    assert.ok(lifetime >= 1_500 && lifetime < 5_000, `idle connection closed after ${lifetime} ms (idle 1.5 s after the last call)`);
  });

  it('sends GOAWAY at the maximum age', async () => {
    const edge = await startEdge({ maxAgeMs: 1_000, maxAgeGraceMs: 500 });
    const client = track(await session(edge.port));
    const started = Date.now();
    const goaway = timeUntil(client, 'goaway', started);
    assert.equal((await rawCall(client, BATCH_PATH, oneProduct, token)).status, grpc.status.OK);
    const at = await goaway;
    assert.ok(at >= 850 && at < 2_500, `GOAWAY after ${at} ms (age 1 s ± 10 %)`);
  });

  it('advertises the cap on concurrent streams per connection', async () => {
    const edge = await startEdge({ maxConcurrentStreams: 7 });
    const client = track(await session(edge.port));
    assert.equal(client.remoteSettings.maxConcurrentStreams, 7);
  });

  it('caps connections per address, and in all; trusted proxies count only in all', async () => {
    const perAddress = await startEdge({ maxConnectionsPerAddress: 3, maxConnections: 5 });
    const kept = await Promise.all(Array.from({ length: 3 }, () => silentConnection(perAddress.port).then(track)));
    const refused = track(await silentConnection(perAddress.port));
    const refusedAfter = await timeUntil(refused, 'close', Date.now());
    assert.ok(refusedAfter < 1_000, `the fourth connection from one address lived ${refusedAfter} ms`);
    assert.ok(
      kept.every((socket) => !socket.destroyed && socket.readyState === 'open'),
      'the first three stay',
    );

    const behindProxy = await startEdge({ maxConnectionsPerAddress: 3, maxConnections: 5 }, ['loopback']);
    const proxied = await Promise.all(Array.from({ length: 5 }, () => silentConnection(behindProxy.port).then(track)));
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(
      proxied.every((socket) => socket.readyState === 'open'),
      'five through a trusted proxy',
    );
    const sixth = track(await silentConnection(behindProxy.port));
    assert.ok((await timeUntil(sixth, 'close', Date.now())) < 1_000, 'the sixth is over the cap in all');
  });

  it('ends a ping flood with GOAWAY ENHANCE_YOUR_CALM "too_many_pings", and lets spaced pings be', async () => {
    const edge = await startEdge({ minPingIntervalMs: 200, authDeadlineMs: 60_000 });
    const flooding = track(await session(edge.port));
    const goaway = new Promise<{ code: number; data: string }>((resolve) =>
      flooding.once('goaway', (code, _last, data) => resolve({ code, data: data?.toString() ?? '' })),
    );
    let sent = 0;
    const flood = setInterval(() => {
      for (let index = 0; index < 5 && !flooding.closed && !flooding.destroyed; index++) {
        try {
          flooding.ping(() => undefined);
          sent += 1;
        } catch {
          // At most ten unanswered: skip until some are.
        }
      }
    }, 1);
    try {
      const received = await goaway;
      assert.deepEqual(received, { code: http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, data: 'too_many_pings' });
    } finally {
      clearInterval(flood);
    }
    assert.ok(sent < 100, `${sent} pings went before the connection was closed`);

    const spaced = track(await session(edge.port));
    for (let index = 0; index < 6; index++) {
      await new Promise((resolve) => spaced.ping((error) => resolve(error)));
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.equal(spaced.closed || spaced.destroyed, false, 'a ping every 250 ms (minimum 200 ms) keeps the connection');
  });
});
