import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import {
  ErrorInfoSchema,
  EventService,
  RetryInfoSchema,
  StreamEventsRequestSchema,
  StreamEventsResponseSchema,
  type StreamEventsRequest,
  type StreamEventsResponse,
} from '@merx/contracts/grpc';
import { createLogger, decodeGrpcStatusDetails, grpc, grpcServiceDefinitionOf, newId, startGrpcServer, type RunningGrpcServer } from '@merx/kit';
import { startGrpcEdge, type RunningGrpcEdge } from '../src/grpc/edge.js';
import { throttleSettingsFromEnv } from '../src/throttle/config.js';
import { createThrottle, type Throttle } from '../src/throttle/limiter.js';
import { purgeThrottleState } from '../src/throttle/redis-store.js';
import { testTokens } from './test-tokens.js';

const REDIS_URL = process.env.MERX_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

type Stream = grpc.ClientReadableStream<StreamEventsResponse> & { ended: Promise<grpc.StatusObject> };

/**
 * The StreamEvents cap at the edge, in front of a stand-in event service whose streams send one
 * event and then stay open (topic `end`: end after it; topic `fail`: fail after it), in both
 * throttle stores: memory (embedded) and Redis (distributed, leased as in production).
 */
for (const mode of ['memory', 'redis'] as const) {
  describe(`gRPC edge: StreamEvents cap per merchant (${mode} store)`, function () {
    this.timeout(30_000);
    const prefix = `merx:test:${randomBytes(6).toString('hex')}:`;
    const logger = createLogger('grpc-edge-streams-test', 'silent');
    let upstream: RunningGrpcServer;
    let upstreamOpen = 0;
    let sign: (claims: Record<string, unknown>) => Promise<string>;
    let verifier: Awaited<ReturnType<typeof testTokens>>['verifier'];
    let edge: RunningGrpcEdge;
    let throttle: Throttle;
    let client: grpc.Client & Record<string, any>;
    const streams: Stream[] = [];

    const startEdge = async () => {
      const env = { MERX_THROTTLE_PLANS: '{"sandbox":{"event_streams":{"concurrent":2}}}', ...(mode === 'redis' ? { REDIS_URL } : {}) };
      throttle = await createThrottle({ settings: { ...throttleSettingsFromEnv(env), keyPrefix: prefix }, logger });
      const address = upstream.address;
      edge = await startGrpcEdge({ logger, verifier, throttle, upstreams: { catalog: address, merchants: address, webhooks: address }, port: 0 });
      const Client = grpc.makeGenericClientConstructor(grpcServiceDefinitionOf(EventService), 'EventService');
      client = new Client(edge.address, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
    };
    const stopEdge = async () => {
      client.close();
      await edge.stop();
      await throttle.stop();
    };
    const tokenOf = (merchantId: string) => sign({ merchant_id: merchantId, client_id: 'mx_test_AAAAAAAAAAAAAAAA', scope: 'webhooks:read', plan: 'sandbox' });
    const metadataOf = (token: string) => {
      const metadata = new grpc.Metadata();
      metadata.set('authorization', `Bearer ${token}`);
      return metadata;
    };
    /** A stream, once its first event came (it holds a slot then), or its status when it was refused. */
    const open = (token: string, topics: string[] = []) =>
      new Promise<Stream | grpc.ServiceError>((resolve) => {
        const stream = client.StreamEvents(create(StreamEventsRequestSchema, { topics }), metadataOf(token)) as Stream;
        streams.push(stream);
        stream.ended = new Promise((ended) => stream.on('status', ended));
        stream.once('data', () => resolve(stream));
        stream.on('error', (error: grpc.ServiceError) => resolve(error));
      });
    const opened = async (token: string, topics: string[] = []) => {
      const stream = await open(token, topics);
      assert.ok(!(stream instanceof Error), `refused: ${(stream as grpc.ServiceError).details}`);
      return stream as Stream;
    };
    const refused = async (token: string) => {
      const error = await open(token);
      assert.ok(error instanceof Error, 'a stream past the cap was opened');
      return error as grpc.ServiceError;
    };

    before(async () => {
      ({ sign, verifier } = await testTokens());
      const streamEvents = (call: grpc.ServerWritableStream<StreamEventsRequest, StreamEventsResponse>) => {
        upstreamOpen += 1;
        let ended = false;
        const end = () => {
          if (!ended) upstreamOpen -= 1;
          ended = true;
        };
        call.on('cancelled', end);
        call.write(create(StreamEventsResponseSchema, { event: { id: newId('evt'), type: 'products.created' } }));
        if (call.request.topics.includes('end')) {
          end();
          call.end();
        } else if (call.request.topics.includes('fail')) {
          end();
          call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'the event store went away' });
        }
      };
      upstream = await startGrpcServer({
        port: 0,
        services: [{ definition: grpcServiceDefinitionOf(EventService), implementation: { StreamEvents: streamEvents } as grpc.UntypedServiceImplementation }],
      });
      await startEdge();
    });
    afterEach(() => {
      for (const stream of streams.splice(0)) stream.cancel();
    });
    after(async () => {
      await stopEdge();
      await upstream.stop();
      if (mode === 'redis') await purgeThrottleState(REDIS_URL, prefix);
    });

    it('refuses a stream past the cap with RESOURCE_EXHAUSTED naming the cap, RetryInfo, and no upstream call', async () => {
      const merchantId = newId('mch');
      const token = await tokenOf(merchantId);
      await opened(token);
      await opened(token);
      const upstreamBefore = upstreamOpen;
      const error = await refused(token);
      assert.equal(error.code, grpc.status.RESOURCE_EXHAUSTED);
      assert.match(error.details, /already has 2 StreamEvents streams open, its cap of 2 \(event_streams\.concurrent\)/);
      const details = decodeGrpcStatusDetails(error.metadata)!.details;
      assert.equal(details.map((detail) => anyUnpack(detail, ErrorInfoSchema)?.reason).find(Boolean), 'rate_limited');
      assert.ok(details.some((detail) => anyUnpack(detail, RetryInfoSchema)?.retryDelay));
      assert.equal(upstreamOpen, upstreamBefore, 'the refused stream reached no service');
      await opened(await tokenOf(newId('mch')));
    });

    it('frees a slot when the client cancels, when the service ends the stream and when it fails', async () => {
      const merchantId = newId('mch');
      const token = await tokenOf(merchantId);
      const cancelled = await opened(token);
      await opened(token);
      cancelled.cancel();
      await cancelled.ended;
      await until(() => throttle.slots.heldCount(merchantId) === 1, 5_000, 'the cancelled stream’s slot is released');
      const ending = await opened(token, ['end']);
      assert.equal((await ending.ended).code, grpc.status.OK);
      await until(() => throttle.slots.heldCount(merchantId) === 1, 5_000, 'the ended stream’s slot is released');
      const failing = await opened(token, ['fail']);
      assert.equal((await failing.ended).code, grpc.status.UNAVAILABLE);
      await until(() => throttle.slots.heldCount(merchantId) === 1, 5_000, 'the failed stream’s slot is released');
      await opened(token);
      await refused(token);
    });

    it("an operator override raises one merchant's cap", async () => {
      const merchantId = newId('mch');
      const token = await tokenOf(merchantId);
      await throttle.store.setOverride(merchantId, { 'event_streams.concurrent': 4 }, 1);
      for (let index = 0; index < 4; index++) await opened(token);
      const error = await refused(token);
      assert.match(error.details, /its cap of 4 /);
    });

    it('a stopping gateway releases every slot it holds', async () => {
      const merchantId = newId('mch');
      const token = await tokenOf(merchantId);
      await opened(token);
      await opened(token);
      const ends = streams.map((stream) => stream.ended);
      await stopEdge();
      await Promise.all(ends);
      await until(() => upstreamOpen === 0, 5_000, 'the upstream streams are cancelled');
      await startEdge();
      await opened(token);
      await opened(token);
    });
  });
}
