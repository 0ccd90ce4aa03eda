import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import Koa from 'koa';
import proxyaddr from 'proxy-addr';
import { pino } from 'pino';
import { request } from 'undici';
import {
  clientAddress,
  currentContext,
  listen,
  parseProxyList,
  proxyTrust,
  requestContextMiddleware,
  type Logger,
  type ProxyTrust,
  type RunningServer,
} from '../src/index.js';

/** A service that answers with the client address its request context settled on. */
async function serveAddress(options: { trustedProxies?: ProxyTrust; logger?: Logger } = {}): Promise<RunningServer> {
  const app = new Koa();
  app.use(requestContextMiddleware('test', options));
  app.use((ctx) => {
    if (ctx.path === '/as-merchant') ctx.state.auth = { merchantId: 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g' };
    ctx.status = ctx.path === '/missing' ? 404 : 200;
    ctx.body = { ip: currentContext()?.ip };
  });
  return listen(app, 0, '127.0.0.1');
}

async function addressSeen(server: RunningServer, forwardedFor?: string): Promise<string> {
  const response = await request(`${server.url}/`, { headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {} });
  return ((await response.body.json()) as { ip: string }).ip;
}

const LOOPBACK = /^(127\.0\.0\.1|::ffff:127\.0\.0\.1)$/;

describe('client addresses behind proxies', () => {
  const servers: RunningServer[] = [];
  after(async () => {
    for (const server of servers) await server.close();
  });
  const start = async (options: Parameters<typeof serveAddress>[0]) => {
    const server = await serveAddress(options);
    servers.push(server);
    return server;
  };

  it('a service believes X-Forwarded-For only from the service network (the gateway), by default', async () => {
    const server = await start({});
    assert.equal(await addressSeen(server, '203.0.113.9'), '203.0.113.9', 'loopback is the service network');
    assert.match(await addressSeen(server), LOOPBACK);
  });

  it('a gateway that trusts nobody takes the socket peer and ignores the header', async () => {
    const server = await start({ trustedProxies: proxyTrust([]) });
    assert.match(await addressSeen(server, '203.0.113.9'), LOOPBACK);
  });

  it('behind a trusted ingress, takes the nearest address the proxies did not vouch for, so a client cannot spoof one', async () => {
    const server = await start({ trustedProxies: proxyTrust(parseProxyList('loopback, 10.0.0.0/8')) });
    // The client wrote 198.51.100.1 itself; the ingress (10.1.2.3) appended the real peer 203.0.113.9.
    assert.equal(await addressSeen(server, '198.51.100.1, 203.0.113.9, 10.1.2.3'), '203.0.113.9');
  });

  it('gives the same address as proxy-addr for each peer and header, asked once or again', () => {
    const trusts = [proxyTrust([]), proxyTrust(['loopback', 'linklocal', 'uniquelocal']), proxyTrust(['10.0.0.0/8'])];
    const peers = ['127.0.0.1', '10.1.2.3', '203.0.113.7', '::1', '::ffff:10.0.0.9'];
    const headers = [undefined, '', '198.51.100.1', '198.51.100.1, 10.0.0.2', 'not-an-address, 10.0.0.3', '2001:db8::1, 127.0.0.1'];
    for (const trust of trusts)
      for (const peer of peers)
        for (const forwardedFor of headers) {
          const request = {
            socket: { remoteAddress: peer },
            headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
          } as unknown as IncomingMessage;
          const expected = proxyaddr(request, trust);
          assert.equal(clientAddress(request, trust), expected, `${peer} / ${forwardedFor}`);
          assert.equal(clientAddress(request, trust), expected, `${peer} / ${forwardedFor}, again`);
        }
  });

  it('refuses a bad proxy list at configuration time', () => {
    assert.throws(() => parseProxyList('10.0.0.0/99'), /invalid range/i);
    assert.throws(() => parseProxyList('not-an-address'), /invalid IP address/i);
    assert.deepEqual(parseProxyList(' loopback ,, 10.0.0.0/8 '), ['loopback', '10.0.0.0/8']);
  });

  it('writes one access line per request with method, route, status, ms, request id and merchant id', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
        done();
      },
    });
    const server = await start({ logger: pino({ level: 'info' }, sink) });
    const answered = await request(`${server.url}/as-merchant`, { method: 'POST' });
    await answered.body.text();
    await (await request(`${server.url}/missing`)).body.text();
    await (await request(`${server.url}/healthz`)).body.text();
    assert.equal(lines.length, 2, 'health probes are not logged');
    const [first, second] = lines;
    assert.equal(first!.msg, 'request');
    assert.equal(first!.method, 'POST');
    assert.equal(first!.path, '/as-merchant');
    assert.equal(first!.status, 200);
    assert.equal(first!.merchant_id, 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g');
    assert.equal(first!.request_id, answered.headers['x-request-id']);
    assert.equal(typeof first!.ms, 'number');
    assert.equal(second!.status, 404);
    assert.equal(second!.merchant_id, null);
  });
});
