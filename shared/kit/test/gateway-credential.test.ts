import assert from 'node:assert/strict';
import Router from '@koa/router';
import { request } from 'undici';
import { createServiceApp, GATEWAY_CREDENTIAL_HEADER, listen, mountRouter, type RunningServer } from '../src/index.js';
import { silentLogger } from './support.js';

const CREDENTIAL = 'a-service-credential-of-at-least-32-characters';

/** A service app with one route under each prefix, behind the gateway credential or not. */
async function serve(gatewayCredential: string | undefined): Promise<RunningServer> {
  const router = new Router();
  for (const path of ['/api/v1/things', '/admin/v1/things', '/oauth/jwks', '/internal/v1/things']) router.get(path, (ctx) => void (ctx.body = { path }));
  return listen(
    createServiceApp({ service: 'test', logger: silentLogger, routes: (app) => mountRouter(app, router), ...(gatewayCredential ? { gatewayCredential } : {}) }),
    0,
    '127.0.0.1',
  );
}

async function statusOf(server: RunningServer, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const answer = await request(`${server.url}${path}`, { headers });
  return { status: answer.statusCode, body: await answer.body.json() };
}

describe('the gateway credential on a service port', () => {
  const servers: RunningServer[] = [];
  after(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  it('refuses the merchant and operator APIs without it, with a problem that says where to go', async () => {
    const server = await serve(CREDENTIAL);
    servers.push(server);
    for (const path of ['/api/v1/things', '/admin/v1/things']) {
      const refused = await statusOf(server, path);
      assert.equal(refused.status, 401, path);
      assert.equal(refused.body.code, 'unauthenticated');
      assert.match(refused.body.detail, /serves the gateway only/);
      assert.equal((await statusOf(server, path, { [GATEWAY_CREDENTIAL_HEADER]: `${CREDENTIAL}x` })).status, 401, 'a near miss');
      assert.equal((await statusOf(server, path, { [GATEWAY_CREDENTIAL_HEADER]: CREDENTIAL })).status, 200, path);
    }
  });

  it('leaves health, the OAuth endpoints and the internal routes (which check their own credential) alone', async () => {
    const server = await serve(CREDENTIAL);
    servers.push(server);
    for (const path of ['/healthz', '/oauth/jwks', '/internal/v1/things']) assert.equal((await statusOf(server, path)).status, 200, path);
  });

  it('refuses nothing on a service started without a credential (alone, as in its component tests)', async () => {
    const server = await serve(undefined);
    servers.push(server);
    assert.equal((await statusOf(server, '/api/v1/things')).status, 200);
  });
});
