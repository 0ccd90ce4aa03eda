import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setImmediate } from 'node:timers/promises';
import type { TargetPolicy } from '@merx/kit';
import { classifyFailure, parseRetryAfter, WebhookSender, type WebhookSenderOptions } from './sender.js';

/** Reaching the loopback test servers needs their literal exempted, as an operator would. */
const LOOPBACK_ALLOWED: TargetPolicy = { allowPrivateAddresses: false, allowedPrivateHosts: ['127.0.0.1'], requireHttps: false };
const STRICT: TargetPolicy = { allowPrivateAddresses: false, allowedPrivateHosts: [], requireHttps: false };

interface Receiver {
  url: string;
  port: number;
  /** TCP connections accepted, and requests received (method, headers, body). */
  connections: number;
  requests: Array<{ method: string; headers: IncomingMessage['headers']; body: string }>;
  close(): Promise<void>;
}

const receivers: Receiver[] = [];
const senders: WebhookSender[] = [];

async function startReceiver(respond: (request: IncomingMessage, response: ServerResponse) => void): Promise<Receiver> {
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    receiver.requests.push({ method: request.method!, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
    respond(request, response);
  });
  server.on('connection', () => (receiver.connections += 1));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const receiver: Receiver = {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    connections: 0,
    requests: [],
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
  receivers.push(receiver);
  return receiver;
}

function sender(options: Partial<WebhookSenderOptions> = {}): WebhookSender {
  const created = new WebhookSender({ policy: LOOPBACK_ALLOWED, ...options });
  senders.push(created);
  return created;
}

const REQUEST = { headers: { 'webhook-id': 'evt_1', 'webhook-timestamp': '1700000000', 'webhook-signature': 'v1,abc' }, body: '{"id":"evt_1"}' };

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

describe('delivery sender', function () {
  afterEach(async () => {
    await Promise.all(senders.splice(0).map((created) => created.close()));
    await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
  });

  it('POSTs the body with its headers and reports a 2xx as ok, with the response excerpt', async () => {
    const receiver = await startReceiver((_request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).end('thanks ✓'));
    const outcome = await sender().send({ url: receiver.url, ...REQUEST });
    assert.deepEqual(
      { ...outcome, durationMs: 0 },
      {
        ok: true,
        statusCode: 200,
        durationMs: 0,
        error: null,
        errorMessage: null,
        responseExcerpt: 'thanks ✓',
        retryAfterMs: null,
      },
    );
    assert.ok(Number.isInteger(outcome.durationMs) && outcome.durationMs >= 0);
    const [received] = receiver.requests;
    assert.equal(received?.method, 'POST');
    assert.equal(received?.body, REQUEST.body);
    assert.equal(received?.headers['content-type'], 'application/json');
    assert.equal(received?.headers['user-agent'], 'Merx-Webhooks/1');
    assert.equal(received?.headers['webhook-signature'], 'v1,abc');
  });

  it('reports a non-2xx as an http failure and ignores Retry-After outside 429 and 503', async () => {
    const receiver = await startReceiver((_request, response) => response.writeHead(500, { 'retry-after': '60' }).end('boom'));
    const outcome = await sender().send({ url: receiver.url, ...REQUEST });
    assert.equal(outcome.ok, false);
    assert.equal(outcome.statusCode, 500);
    assert.equal(outcome.error, 'http');
    assert.equal(outcome.errorMessage, 'HTTP 500');
    assert.equal(outcome.responseExcerpt, 'boom');
    assert.equal(outcome.retryAfterMs, null);
  });

  it('takes Retry-After in seconds from a 429', async () => {
    const receiver = await startReceiver((_request, response) => response.writeHead(429, { 'retry-after': '7' }).end());
    const outcome = await sender().send({ url: receiver.url, ...REQUEST });
    assert.equal(outcome.error, 'http');
    assert.equal(outcome.retryAfterMs, 7_000);
    assert.equal(outcome.responseExcerpt, '');
  });

  it('takes Retry-After as an HTTP-date from a 503', async () => {
    const retryAt = new Date(Date.now() + 30_000).toUTCString();
    const receiver = await startReceiver((_request, response) => response.writeHead(503, { 'retry-after': retryAt }).end());
    const { retryAfterMs, statusCode } = await sender().send({ url: receiver.url, ...REQUEST });
    assert.equal(statusCode, 503);
    // The date has whole seconds, so up to a second is lost.
    assert.ok(retryAfterMs !== null && retryAfterMs > 28_000 && retryAfterMs <= 30_000, String(retryAfterMs));
  });

  it('does not follow redirects: a 3xx is a failure and its target is never asked', async () => {
    const target = await startReceiver((_request, response) => response.writeHead(200).end());
    const receiver = await startReceiver((_request, response) => response.writeHead(307, { location: target.url }).end());
    const outcome = await sender().send({ url: receiver.url, ...REQUEST });
    assert.equal(outcome.error, 'http');
    assert.equal(outcome.errorMessage, 'HTTP 307 (redirects are not followed)');
    assert.equal(target.requests.length, 0);
  });

  it('keeps only the first 4 KiB of a 1 MB response', async () => {
    const receiver = await startReceiver((_request, response) => response.writeHead(200).end('x'.repeat(1024 * 1024)));
    const outcome = await sender().send({ url: receiver.url, ...REQUEST });
    assert.equal(outcome.ok, true);
    assert.equal(outcome.responseExcerpt, 'x'.repeat(4096));
    assert.ok(outcome.durationMs < 2_000, `took ${outcome.durationMs} ms`);
  });

  it('stops reading a response that never ends, well before the timeout', async () => {
    let streamClosed = false;
    const receiver = await startReceiver((_request, response) => {
      response.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 'y');
      const pump = () => {
        while (!response.destroyed && response.write(chunk));
      };
      response.on('drain', pump);
      response.on('close', () => (streamClosed = true));
      pump();
    });
    const outcome = await sender({ totalTimeoutMs: 10_000 }).send({ url: receiver.url, ...REQUEST });
    assert.equal(outcome.ok, true);
    assert.equal(Buffer.byteLength(outcome.responseExcerpt!), 4096);
    assert.ok(outcome.durationMs < 2_000, `took ${outcome.durationMs} ms`);
    // The sender hung up rather than draining the stream.
    while (!streamClosed) await setImmediate();
  });

  it('cuts the excerpt at a character boundary and replaces NUL', async () => {
    // 4095 ASCII bytes then "é" (2 bytes): the 4096-byte cut falls inside it.
    const receiver = await startReceiver((_request, response) => response.writeHead(200).end(`\u0000${'a'.repeat(4094)}é and more`));
    const outcome = await sender().send({ url: receiver.url, ...REQUEST });
    assert.equal(outcome.responseExcerpt, `\ufffd${'a'.repeat(4094)}`);
  });

  it('times out a receiver that never answers', async () => {
    const receiver = await startReceiver(() => {});
    const outcome = await sender({ totalTimeoutMs: 300 }).send({ url: receiver.url, ...REQUEST });
    assert.equal(outcome.error, 'timeout');
    assert.equal(outcome.statusCode, null);
    assert.equal(outcome.errorMessage, 'no complete response within 300 ms');
    assert.ok(outcome.durationMs >= 290 && outcome.durationMs < 2_000, `took ${outcome.durationMs} ms`);
  });

  it('times out a receiver that answers 200 but trickles its body past the total timeout', async () => {
    const receiver = await startReceiver((_request, response) => {
      response.writeHead(200).write('a');
      const trickle = setInterval(() => response.write('b'), 50);
      response.on('close', () => clearInterval(trickle));
    });
    const outcome = await sender({ totalTimeoutMs: 300 }).send({ url: receiver.url, ...REQUEST });
    assert.equal(outcome.ok, false);
    assert.equal(outcome.error, 'timeout');
    assert.equal(outcome.statusCode, 200);
  });

  it('reports a refused connection', async () => {
    const port = await closedPort();
    const outcome = await sender().send({ url: `http://127.0.0.1:${port}/`, ...REQUEST });
    assert.equal(outcome.error, 'connection');
    assert.equal(outcome.statusCode, null);
    assert.equal(outcome.responseExcerpt, null);
    assert.match(outcome.errorMessage!, /ECONNREFUSED/);
    assert.doesNotMatch(outcome.errorMessage!, /\n/);
  });

  it('blocks localhost when the policy does not exempt it, before any request', async () => {
    const receiver = await startReceiver((_request, response) => response.writeHead(200).end());
    const outcome = await sender({ policy: STRICT }).send({ url: `http://localhost:${receiver.port}/`, ...REQUEST });
    assert.equal(outcome.error, 'blocked');
    assert.match(outcome.errorMessage!, /^localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
    assert.equal(receiver.connections, 0);
  });

  it('reaches localhost when its name is exempt (net asks the guarded lookup for every address)', async () => {
    const receiver = await startReceiver((_request, response) => response.writeHead(204).end());
    const policy = { ...STRICT, allowedPrivateHosts: ['localhost'] };
    const outcome = await sender({ policy }).send({ url: `http://localhost:${receiver.port}/`, ...REQUEST });
    assert.equal(outcome.ok, true, outcome.errorMessage ?? '');
    assert.equal(outcome.statusCode, 204);
  });

  it('blocks a private IP literal without connecting', async () => {
    let lookups = 0;
    const lookup = async () => {
      lookups += 1;
      return [{ address: '93.184.215.14', family: 4 }];
    };
    const outcome = await sender({ policy: STRICT, lookup }).send({ url: 'http://10.0.0.1/hooks', ...REQUEST });
    assert.equal(outcome.error, 'blocked');
    assert.equal(outcome.errorMessage, '10.0.0.1 is a private address; webhooks go to public addresses only');
    assert.equal(lookups, 0);
    assert.equal((await sender({ policy: STRICT }).send({ url: 'http://[::ffff:127.0.0.1]/', ...REQUEST })).error, 'blocked');
  });

  it('blocks a name that resolves to loopback at connection time (DNS rebinding)', async () => {
    const receiver = await startReceiver((_request, response) => response.writeHead(200).end());
    const lookup = async (hostname: string) => {
      assert.equal(hostname, 'rebind.example');
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const outcome = await sender({ policy: STRICT, lookup }).send({ url: `http://rebind.example:${receiver.port}/`, ...REQUEST });
    assert.equal(outcome.error, 'blocked');
    assert.equal(outcome.errorMessage, 'rebind.example resolves to 127.0.0.1, a loopback address; webhooks go to public addresses only');
    assert.equal(receiver.connections, 0);
  });

  it('reports a name that does not resolve as dns', async () => {
    const outcome = await sender({ policy: STRICT }).send({ url: 'https://merx-webhook-test.invalid/hooks', ...REQUEST });
    assert.equal(outcome.error, 'dns');
    assert.match(outcome.errorMessage!, /^could not resolve merx-webhook-test\.invalid \((ENOTFOUND|EAI_AGAIN)\)$/);
  });

  it('keeps the connection alive between sends to the same receiver', async () => {
    const receiver = await startReceiver((_request, response) => response.writeHead(200).end('ok'));
    const keepAlive = sender();
    assert.equal((await keepAlive.send({ url: receiver.url, ...REQUEST })).ok, true);
    // undici hands a socket back to its pool one event-loop turn after the response ends (in case
    // the server closes it anyway); a worker's database write between two sends gives it that turn.
    await setImmediate();
    assert.equal((await keepAlive.send({ url: receiver.url, ...REQUEST })).ok, true);
    assert.equal(receiver.requests.length, 2);
    assert.equal(receiver.connections, 1);
  });

  it('reports an unusable URL instead of throwing', async () => {
    const outcome = await sender().send({ url: 'not a url', ...REQUEST });
    assert.equal(outcome.error, 'connection');
    assert.equal(outcome.errorMessage, 'not an http or https URL');
  });

  describe('classifyFailure', () => {
    const context = { hostname: 'hooks.example.com', connectTimeoutMs: 5_000 };
    const failure = (code: string, message = `failed ${code}`) => Object.assign(new Error(message), { code });
    const cases: Array<[unknown, string]> = [
      [failure('UND_ERR_CONNECT_TIMEOUT'), 'timeout'],
      [failure('UND_ERR_HEADERS_TIMEOUT'), 'timeout'],
      [failure('UND_ERR_BODY_TIMEOUT'), 'timeout'],
      [failure('ETIMEDOUT'), 'timeout'],
      [failure('ENOTFOUND'), 'dns'],
      [failure('EAI_AGAIN'), 'dns'],
      [failure('EMERX_BLOCKED_ADDRESS'), 'blocked'],
      [failure('ECONNREFUSED'), 'connection'],
      [failure('ECONNRESET'), 'connection'],
      [failure('EPIPE'), 'connection'],
      [failure('UND_ERR_SOCKET'), 'connection'],
      [failure('CERT_HAS_EXPIRED'), 'connection'],
      [failure('ERR_TLS_CERT_ALTNAME_INVALID'), 'connection'],
      [new AggregateError([failure('ECONNREFUSED')], ''), 'connection'],
      [new AggregateError([failure('ETIMEDOUT')], ''), 'timeout'],
      [new Error('wrapped', { cause: failure('ENOTFOUND') }), 'dns'],
      [new Error('something else'), 'connection'],
      ['a string', 'connection'],
    ];
    for (const [error, kind] of cases) {
      const label = error instanceof Error ? `${error.constructor.name} ${errorLabel(error)}` : String(error);
      it(`${label} is ${kind}`, () => assert.equal(classifyFailure(error, context).kind, kind));
    }

    it('keeps messages to one short line', () => {
      const long = classifyFailure(failure('ECONNRESET', `${'x'.repeat(500)}\n    at somewhere (file.js:1:1)`), context).message;
      assert.ok(long.length <= 200 && !long.includes('\n'), long);
      assert.equal(
        classifyFailure(new AggregateError([failure('ECONNREFUSED', 'connect ECONNREFUSED 1.2.3.4:443')], ''), context).message,
        'connect ECONNREFUSED 1.2.3.4:443',
      );
      assert.equal(classifyFailure(failure('UND_ERR_CONNECT_TIMEOUT'), context).message, 'could not connect within 5000 ms');
    });
  });

  describe('parseRetryAfter', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    it('reads delta seconds and HTTP-dates, never negative, null when unparsable', () => {
      assert.equal(parseRetryAfter('120', now), 120_000);
      assert.equal(parseRetryAfter(['5', '9'], now), 5_000);
      assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now), 60_000);
      assert.equal(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now), 0);
      assert.equal(parseRetryAfter(undefined, now), null);
      assert.equal(parseRetryAfter('soon', now), null);
      assert.equal(parseRetryAfter('-5', now), null);
      assert.equal(parseRetryAfter('1.5', now), null);
    });
  });
});

function errorLabel(error: Error): string {
  const code =
    (error as { code?: string }).code ??
    (error as { errors?: Array<{ code?: string }> }).errors?.[0]?.code ??
    (error.cause as { code?: string } | undefined)?.code;
  return code ?? error.message;
}
