import assert from 'node:assert/strict';
import { createContractValidator, scopeNames, type ContractOperation } from '@merx/contracts';
import { call, createMerchant, installTestApp, issueToken, sharedStack, type ApiResponse, type Stack, type TestMerchant } from '../src/harness/index.js';

/**
 * Tenant isolation, proven for every operation of the OpenAPI document: the suite walks the
 * document, so an endpoint added later is covered without anyone remembering to add it here.
 * Only the fixtures below are hand-written: one factory per path template that makes a resource
 * for the owning merchant and names its path parameters.
 */
type Fixture = (stack: Stack, owner: TestMerchant) => Promise<Record<string, string>>;

/** Asks until `attempt` returns something; resources made from events appear shortly after the change. */
async function until<T>(attempt: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await attempt();
    if (result !== undefined) return result;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The first item of a list the owner can read, once there is one. */
const firstIdOf = (stack: Stack, owner: TestMerchant, path: string, what: string) =>
  until(
    async () => {
      const list = await call(stack, 'GET', path, { token: owner.token });
      assert.equal(list.status, 200, list.text);
      return list.body.data[0]?.id as string | undefined;
    },
    20_000,
    what,
  );

interface WebhookResources {
  subscription: string;
  event: string;
  delivery: string;
  deadLetter: string;
}

const webhookResources = new Map<string, Promise<WebhookResources>>();

/**
 * One subscription of the owner to every event, pointed at a port nothing answers on (9, discard):
 * a product change gives it an event and a delivery, and the e2e retry window (3 s) soon turns that
 * delivery into a dead letter. Made once per owner, shared by the webhook path templates.
 */
function webhookResourcesOf(stack: Stack, owner: TestMerchant): Promise<WebhookResources> {
  let resources = webhookResources.get(owner.merchantId);
  if (!resources) {
    resources = (async () => {
      const created = await call(stack, 'POST', '/api/v1/webhooks/subscriptions', { token: owner.token, body: { url: 'http://127.0.0.1:9/', topics: ['*'] } });
      assert.equal(created.status, 201, created.text);
      const subscription = created.body.id as string;
      await fixtures['/api/v1/products/{id}']!(stack, owner);
      const query = `subscription_id=${subscription}&limit=1`;
      const event = await firstIdOf(stack, owner, '/api/v1/events?limit=1', "an event of the owner's in /api/v1/events");
      const delivery = await firstIdOf(stack, owner, `/api/v1/webhooks/deliveries?${query}`, 'a delivery to the subscription');
      const deadLetter = await firstIdOf(
        stack,
        owner,
        `/api/v1/webhooks/dead-letters?${query}`,
        'a dead letter of the subscription (refused connections past the retry window)',
      );
      return { subscription, event, delivery, deadLetter };
    })();
    webhookResources.set(owner.merchantId, resources);
  }
  return resources;
}

const fixtures: Record<string, Fixture> = {
  '/api/v1/products/{id}': async (stack, owner) => {
    const created = await call(stack, 'POST', '/api/v1/products', {
      token: owner.token,
      body: { sku: `ISO-${Date.now()}`, title: 'Owned by A', price: '1.00', currency: 'USD' },
    });
    assert.equal(created.status, 201, created.text);
    return { id: created.body.id };
  },
  '/api/v1/api-keys/{id}': async (stack, owner) => {
    const created = await call(stack, 'POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'Owned by A', scopes: ['products:read'] } });
    assert.equal(created.status, 201, created.text);
    return { id: created.body.id };
  },
  '/api/v1/apps/{id}/grant': async (stack, owner) => ({ id: (await installTestApp(stack, owner)).appId }),
  '/api/v1/audit/{id}': async (stack, owner) => {
    // Entries come from events, so one exists shortly after any change the merchant makes.
    await fixtures['/api/v1/products/{id}']!(stack, owner);
    return { id: await firstIdOf(stack, owner, '/api/v1/audit?limit=1', 'an audit entry of the owner') };
  },
  '/api/v1/webhooks/subscriptions/{id}': async (stack, owner) => ({ id: (await webhookResourcesOf(stack, owner)).subscription }),
  '/api/v1/webhooks/subscriptions/{id}/rotate-secret': async (stack, owner) => ({ id: (await webhookResourcesOf(stack, owner)).subscription }),
  '/api/v1/webhooks/subscriptions/{id}/stats': async (stack, owner) => ({ id: (await webhookResourcesOf(stack, owner)).subscription }),
  '/api/v1/webhooks/deliveries/{id}': async (stack, owner) => ({ id: (await webhookResourcesOf(stack, owner)).delivery }),
  '/api/v1/webhooks/dead-letters/{id}': async (stack, owner) => ({ id: (await webhookResourcesOf(stack, owner)).deadLetter }),
  '/api/v1/webhooks/dead-letters/{id}/replay': async (stack, owner) => ({ id: (await webhookResourcesOf(stack, owner)).deadLetter }),
  '/api/v1/events/{id}': async (stack, owner) => ({ id: (await webhookResourcesOf(stack, owner)).event }),
  '/api/v1/sources/{id}': async (stack, owner) => ({ id: (await configurationOf(stack, owner)).source }),
  '/api/v1/sources/{id}/records': async (stack, owner) => ({ id: (await configurationOf(stack, owner)).source }),
  '/api/v1/destinations/{id}': async (stack, owner) => ({ id: (await configurationOf(stack, owner)).destination }),
  '/api/v1/destinations/{id}/rotate-secret': async (stack, owner) => ({ id: (await configurationOf(stack, owner)).destination }),
  '/api/v1/rules/{id}': async (stack, owner) => ({ id: (await configurationOf(stack, owner)).rule }),
  '/api/v1/connections/{id}': async (stack, owner) => ({ id: (await configurationOf(stack, owner)).connection }),
  '/api/v1/sandbox/resets/{id}': async (stack, owner) => {
    // A reset wipes the owner's data; fixtures made before it keep their ids, which is all the
    // 401/403/404 checks need. It is awaited to the end so no fixture made after it is wiped.
    const requested = await call(stack, 'POST', '/api/v1/sandbox/reset', { token: owner.token, body: {} });
    assert.equal(requested.status, 202, requested.text);
    await until(
      async () =>
        (await call(stack, 'GET', `/api/v1/sandbox/resets/${requested.body.id}`, { token: owner.token })).body.status === 'completed' ? true : undefined,
      20_000,
      "the owner's sandbox reset",
    );
    return { id: requested.body.id };
  },
};

const configurations = new Map<string, Promise<{ source: string; destination: string; rule: string; connection: string }>>();

/** One source, destination, rule and connection of the owner, made once and shared by their path templates. */
function configurationOf(stack: Stack, owner: TestMerchant) {
  let made = configurations.get(owner.merchantId);
  if (!made) {
    made = (async () => {
      const create = async (path: string, body: unknown) => {
        const created = await call(stack, 'POST', path, { token: owner.token, body });
        assert.equal(created.status, 201, created.text);
        return created.body.id as string;
      };
      const source = await create('/api/v1/sources', { name: 'Owned by A', kind: 'storefront' });
      const destination = await create('/api/v1/destinations', { name: 'Owned by A', url: 'http://127.0.0.1:9/a', status: 'paused' });
      const rule = await create('/api/v1/rules', { name: 'Owned by A', action: 'forward' });
      const connection = await create('/api/v1/connections', { source_id: source, destination_id: destination, rule_ids: [rule] });
      return { source, destination, rule, connection };
    })();
    configurations.set(owner.merchantId, made);
  }
  return made;
}

/** Bodies for writes, valid enough that only tenancy or scope can refuse them. */
const bodies: Record<string, unknown> = {
  'products.create': { sku: 'ISO-B', title: 'B', price: '1.00', currency: 'USD' },
  'products.update': { title: 'Taken over' },
  'api_keys.create': { name: 'B', scopes: ['products:read'] },
  'webhooks.subscriptions.create': { url: 'http://127.0.0.1:9/', topics: ['*'] },
  'webhooks.subscriptions.update': { description: 'Taken over' },
  'sources.update': { name: 'Taken over' },
  'destinations.update': { name: 'Taken over' },
  'rules.update': { name: 'Taken over' },
  'connections.update': { name: 'Taken over' },
  'sources.records.create': { records: [{ type: 'order', external_id: 'B-1', occurred_at: '2026-11-22T10:00:00Z', data: {} }] },
};

const operations = createContractValidator().operations();
const merchantOperations = operations.filter((operation) => operation.security === 'oauth2');
const operatorOperations = operations.filter((operation) => operation.security === 'operator');
const hasPathParameters = (operation: ContractOperation) => /\{[^}]+\}/.test(operation.pathTemplate);

function pathOf(operation: ContractOperation, params: Record<string, string>): string {
  return operation.pathTemplate.replace(/\{([^}]+)\}/g, (_match, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`the fixture for ${operation.pathTemplate} names no ${name}`);
    return encodeURIComponent(value);
  });
}

const send = (stack: Stack, operation: ContractOperation, path: string, token?: string) =>
  call(stack, operation.method, path, {
    ...(token ? { token } : {}),
    ...(['POST', 'PATCH', 'PUT'].includes(operation.method) ? { body: bodies[operation.operationId] ?? {} } : {}),
  });

/** An id shaped like the real one that names nothing: what "it does not exist" looks like. */
const unknownIdLike = (id: string) => id.replace(/_[0-9a-z]{26}$/, `_${'0'.repeat(26)}`);

function problemShape(response: ApiResponse, id: string): Record<string, unknown> {
  const { request_id: _requestId, ...rest } = response.body as Record<string, unknown>;
  return { ...rest, detail: String(rest.detail).split(id).join('<id>') };
}

describe('tenant isolation, for every operation of the OpenAPI document', function () {
  this.timeout(120_000);
  let stack: Stack;
  let merchantA: TestMerchant;
  let merchantB: TestMerchant;
  const paramsOfA = new Map<string, Record<string, string>>();
  const idsOfA = new Set<string>();
  const tokensWithout = new Map<string, string>();

  before(async function () {
    this.timeout(120_000);
    stack = await sharedStack();
    [merchantA, merchantB] = await Promise.all([createMerchant(stack), createMerchant(stack)]);
    idsOfA.add(merchantA.merchantId);
    const templates = new Set(merchantOperations.filter(hasPathParameters).map((operation) => operation.pathTemplate));
    for (const template of templates) {
      const fixture = fixtures[template];
      if (!fixture) continue; // reported by the test of each operation that needs it
      const params = await fixture(stack, merchantA);
      paramsOfA.set(template, params);
      for (const value of Object.values(params)) idsOfA.add(value);
    }
  });

  /** A token of merchant A holding every scope but one, from a key made for the purpose. */
  async function tokenWithout(scope: string): Promise<string> {
    let token = tokensWithout.get(scope);
    if (!token) {
      const key = await call(stack, 'POST', '/api/v1/api-keys', {
        token: merchantA.token,
        body: { name: `All but ${scope}`, scopes: scopeNames.filter((s) => s !== scope) },
      });
      assert.equal(key.status, 201, key.text);
      idsOfA.add(key.body.id);
      token = await issueToken(stack, key.body.secret);
      tokensWithout.set(scope, token);
    }
    return token;
  }

  function paramsFor(operation: ContractOperation): Record<string, string> {
    if (!hasPathParameters(operation)) return {};
    const params = paramsOfA.get(operation.pathTemplate);
    assert.ok(
      params,
      `${operation.operationId} (${operation.method} ${operation.pathTemplate}) has no isolation fixture: add a factory for "${operation.pathTemplate}" to the fixtures map in tests/e2e/isolation.test.ts`,
    );
    return params;
  }

  function assertNothingOfA(response: ApiResponse, what: string) {
    for (const id of idsOfA) {
      assert.ok(!response.text.includes(id), `${what}: the body names ${id}, which belongs to merchant A:\n${response.text.slice(0, 500)}`);
    }
    assert.ok(!response.text.includes(merchantA.merchantId), `${what}: the body names merchant A`);
  }

  it('covers every operation', () => {
    assert.ok(merchantOperations.length > 0);
    assert.ok(merchantOperations.some((operation) => operation.operationId === 'api_keys.revoke'));
  });

  for (const operation of merchantOperations) {
    const label = `${operation.operationId} (${operation.method} ${operation.pathTemplate})`;
    describe(label, () => {
      it('answers 401 without a token', async () => {
        const response = await send(stack, operation, pathOf(operation, paramsFor(operation)));
        assert.equal(response.status, 401, response.text);
        assert.equal(response.body.code, 'unauthenticated');
        assertNothingOfA(response, `${label} without a token`);
      });

      if (hasPathParameters(operation)) {
        it("answers 404 to another merchant on this merchant's resource, exactly as to an unknown id", async () => {
          const params = paramsFor(operation);
          const response = await send(stack, operation, pathOf(operation, params), merchantB.token);
          assert.equal(response.status, 404, `${label} with merchant B's token on A's resource: ${response.text}`);
          const unknownParams = Object.fromEntries(Object.entries(params).map(([name, value]) => [name, unknownIdLike(value)]));
          const unknown = await send(stack, operation, pathOf(operation, unknownParams), merchantB.token);
          assert.equal(unknown.status, 404, unknown.text);
          const id = Object.values(params).at(-1)!;
          assert.deepEqual(problemShape(response, id), problemShape(unknown, unknownIdLike(id)));
          assert.ok(!response.text.includes(merchantA.merchantId));
        });
      }

      it('answers 403 insufficient_scope to a token of the same merchant without its scope', async () => {
        const [scope] = operation.scopes;
        assert.ok(scope, `${label} declares no scope`);
        const response = await send(stack, operation, pathOf(operation, paramsFor(operation)), await tokenWithout(scope));
        assert.equal(response.status, 403, response.text);
        assert.equal(response.body.code, 'insufficient_scope');
        assert.equal(response.body.required_scope, scope);
      });

      if (operation.method === 'GET' && !hasPathParameters(operation)) {
        it("never shows merchant B anything of merchant A's", async () => {
          const response = await send(stack, operation, operation.pathTemplate, merchantB.token);
          assert.equal(response.status, 200, response.text);
          if (response.body?.object === 'list') {
            const ids = (response.body.data as Array<{ id?: string }>).map((item) => item.id);
            for (const id of ids) assert.ok(!idsOfA.has(id ?? ''), `${label}: merchant B's list holds ${id} of merchant A`);
          }
          assertNothingOfA(response, `${label} as merchant B`);
        });
      }
    });
  }

  describe('operator operations', () => {
    for (const operation of operatorOperations) {
      it(`${operation.operationId} answers 401 without the operator credential, and to a merchant token`, async () => {
        const path = operation.pathTemplate;
        const anonymous = await send(stack, operation, path);
        assert.equal(anonymous.status, 401, anonymous.text);
        const asMerchant = await send(stack, operation, path, merchantA.token);
        assert.equal(asMerchant.status, 401, asMerchant.text);
      });
    }
  });
});
