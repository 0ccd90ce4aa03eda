import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { PayloadTooLarge, readBoundedBody } from '../src/index.js';

/** A Koa app that reads each body with a limit of 1 KiB and reports what it got, or why not. */
function bodyReader(outcomes: Array<string>) {
  const app = new Koa();
  app.use(async (ctx) => {
    try {
      const body = await readBoundedBody(ctx, 1024);
      outcomes.push(`read ${body.length}`);
      ctx.body = `read ${body.toString('utf8')}`;
    } catch (error) {
      outcomes.push(error instanceof PayloadTooLarge ? 'too large' : `failed: ${(error as NodeJS.ErrnoException).code}`);
      ctx.status = error instanceof PayloadTooLarge ? 413 : 400;
      ctx.body = 'refused';
    }
  });
  return app;
}

describe('readBoundedBody', () => {
  const outcomes: string[] = [];
  const server = bodyReader(outcomes).listen(0, '127.0.0.1');
  const port = () => (server.address() as AddressInfo).port;
  after(() => server.close());

  /** Sends `chunks` as a chunked body (one write each), or ends early when `leaveAfter` is set. */
  function send(chunks: string[], leaveAfter?: number): Promise<{ status: number; text: string } | 'left'> {
    return new Promise((resolve, reject) => {
      const sent = httpRequest({ host: '127.0.0.1', port: port(), method: 'POST', path: '/', headers: { 'transfer-encoding': 'chunked' } }, (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      });
      sent.on('error', (error) => (leaveAfter === undefined ? reject(error) : resolve('left')));
      chunks.forEach((chunk, index) => {
        sent.write(chunk);
        if (index + 1 === leaveAfter) {
          // The client goes away without ending the body.
          setImmediate(() => sent.destroy());
        }
      });
      if (leaveAfter === undefined) sent.end();
    });
  }

  it('joins a body that comes in several chunks', async () => {
    const answer = await send(['{"a":', '"b"', '}']);
    assert.deepEqual(answer, { status: 200, text: 'read {"a":"b"}' });
  });

  it('answers 413 once a chunked body grows past the limit, and the answer still reaches the client', async () => {
    const answer = await send(['x'.repeat(600), 'x'.repeat(600), 'x'.repeat(600)]);
    assert.deepEqual(answer, { status: 413, text: 'refused' });
  });

  it('refuses a declared length over the limit before reading anything', async () => {
    const answer = await new Promise<number>((resolve, reject) => {
      const sent = httpRequest({ host: '127.0.0.1', port: port(), method: 'POST', path: '/', headers: { 'content-length': '5000' } }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      sent.on('error', reject);
      sent.write('x');
    });
    assert.equal(answer, 413);
  });

  it('fails when the client leaves mid-body, instead of waiting for ever', async () => {
    const before = outcomes.length;
    assert.equal(await send(['{"a":', 'never ends'], 1), 'left');
    const deadline = Date.now() + 5_000;
    while (outcomes.length === before && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
    // Node reports the reset as the request's error (ECONNRESET); a close without one is a premature close.
    assert.match(outcomes[before] ?? 'still waiting', /^failed: (ECONNRESET|ERR_STREAM_PREMATURE_CLOSE)$/);
  });
});
