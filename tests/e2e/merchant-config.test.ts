import assert from 'node:assert/strict';
import { call, createMerchant, issueToken, sharedStack, type ApiResponse, type Stack, type TestMerchant } from '../src/harness/index.js';

/**
 * The merchant's configuration through the gateway: its profile, and sources, destinations,
 * rules and connections with the same conventions as products (versions, ETag/If-Match,
 * idempotency keys, one event per change, field errors), plus what ties them together.
 */
describe('merchant configuration through the gateway', () => {
  let stack: Stack;
  let merchant: TestMerchant;

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });
  beforeEach(async () => {
    merchant = await createMerchant(stack);
  });

  const api = (method: string, path: string, options: { body?: unknown; headers?: Record<string, string>; token?: string } = {}): Promise<ApiResponse> =>
    call(stack, method, path, { token: merchant.token, ...options });

  async function created(path: string, body: unknown): Promise<any> {
    const response = await api('POST', path, { body });
    assert.equal(response.status, 201, response.text);
    return response.body;
  }

  /** The merchants service hears of a merchant from merchants.created; until then it answers 503. */
  async function merchantOnceKnown(token = merchant.token): Promise<ApiResponse> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const response = await api('GET', '/api/v1/merchant', { token });
      if (response.status !== 503 || Date.now() > deadline) return response;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  describe('the merchant', () => {
    it('reads and changes its own profile, never its mode, plan or status, and announces the change', async () => {
      const read = await merchantOnceKnown();
      assert.equal(read.status, 200, read.text);
      assert.equal(read.body.id, merchant.merchantId);
      assert.equal(read.body.mode, 'sandbox');
      const etag = read.headers.get('etag')!;

      const changed = await api('PATCH', '/api/v1/merchant', {
        body: { name: 'Renamed shop', default_currency: 'EUR', timezone: 'Europe/Berlin' },
        headers: { 'if-match': etag },
      });
      assert.equal(changed.status, 200, changed.text);
      assert.deepEqual([changed.body.name, changed.body.default_currency, changed.body.timezone], ['Renamed shop', 'EUR', 'Europe/Berlin']);
      assert.equal(changed.body.version, read.body.version + 1);
      const event = await stack.events.waitFor(
        (e) => e.topic === 'merchants.updated' && e.merchant_id === merchant.merchantId && e.data.object.name === 'Renamed shop',
      );
      assert.deepEqual(event.data.previous, { name: read.body.name, default_currency: read.body.default_currency, timezone: read.body.timezone });

      const stale = await api('PATCH', '/api/v1/merchant', { body: { name: 'Again' }, headers: { 'if-match': etag } });
      assert.equal(stale.status, 412);
      const operatorOnly = await api('PATCH', '/api/v1/merchant', { body: { plan: 'scale', mode: 'live', status: 'suspended', timezone: 'Mars/Olympus' } });
      assert.equal(operatorOnly.status, 422);
      assert.deepEqual(operatorOnly.body.errors.map((e: any) => [e.field, e.code]).sort(), [
        ['mode', 'read_only'],
        ['plan', 'read_only'],
        ['status', 'read_only'],
      ]);
      assert.equal((await api('GET', '/api/v1/merchant')).body.name, 'Renamed shop', 'a refused PATCH changes nothing');
    });

    it('follows the operator: a plan change made by the operator shows in the merchant', async () => {
      assert.equal((await merchantOnceKnown()).status, 200);
      const replanned = await call(stack, 'PATCH', `/admin/v1/merchants/${merchant.merchantId}`, {
        headers: { authorization: `Bearer ${stack.operatorToken}` },
        body: { plan: 'scale' },
      });
      assert.equal(replanned.status, 200, replanned.text);
      const deadline = Date.now() + 10_000;
      let plan: string | undefined;
      while (Date.now() < deadline && plan !== 'scale') {
        plan = (await api('GET', '/api/v1/merchant')).body.plan;
        if (plan !== 'scale') await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(plan, 'scale');
    });

    it('asks for merchant:read and merchant:write', async () => {
      const readOnly = await issueToken(stack, merchant.apiKey, 'merchant:read');
      assert.equal((await merchantOnceKnown(readOnly)).status, 200);
      const refused = await api('PATCH', '/api/v1/merchant', { token: readOnly, body: { name: 'x' } });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.code, 'insufficient_scope');
    });
  });

  const resources = [
    {
      path: 'sources',
      topic: 'sources',
      valid: () => ({ name: 'Web shop', kind: 'storefront', settings: { domain: 'shop.example' } }),
      change: { name: 'Web shop EU', status: 'paused' },
      invalid: { name: '', kind: 'fax', status: 'sleeping', settings: [] },
      invalidFields: ['kind', 'name', 'settings', 'status'],
      filter: ['status=paused', 'kind=storefront'],
    },
    {
      path: 'destinations',
      topic: 'destinations',
      valid: () => ({ name: 'ERP', url: 'http://127.0.0.1:9/erp' }),
      change: { name: 'ERP (paused)', status: 'paused' },
      invalid: { name: 'x', kind: 'ftp', url: 'ftp://files.example', colour: 'red' },
      invalidFields: ['colour', 'kind', 'url'],
      filter: ['status=paused', 'kind=webhook'],
    },
    {
      path: 'rules',
      topic: 'rules',
      valid: () => ({ name: 'Big EUR orders', event_types: ['orders.created'], condition: 'data.total >= 100.0 && data.currency == "EUR"', action: 'forward' }),
      change: { name: 'Bigger EUR orders', condition: 'data.total >= 500.0' },
      invalid: { name: 'x', action: 'explode', event_types: ['products.created'], condition: 'data.total >=' },
      // Structure first, at the edge: the CEL condition is compiled once the body is well formed.
      invalidFields: ['action', 'event_types[0]'],
      filter: ['action=forward', 'enabled=true', 'event_type=orders.created'],
    },
  ] as const;

  for (const resource of resources) {
    describe(resource.path, () => {
      it('creates, reads, lists with filters, updates with If-Match and deletes, with one event per change', async () => {
        const response = await api('POST', `/api/v1/${resource.path}`, { body: resource.valid() });
        assert.equal(response.status, 201, response.text);
        assert.equal(response.headers.get('etag'), '"v1"');
        assert.equal(response.headers.get('location'), `/api/v1/${resource.path}/${response.body.id}`);
        const id = response.body.id as string;
        assert.equal((await api('GET', `/api/v1/${resource.path}/${id}`)).body.version, 1);

        const updated = await api('PATCH', `/api/v1/${resource.path}/${id}`, { body: resource.change, headers: { 'if-match': '"v1"' } });
        assert.equal(updated.status, 200, updated.text);
        assert.equal(updated.body.version, 2);
        assert.equal(updated.headers.get('etag'), '"v2"');
        const same = await api('PATCH', `/api/v1/${resource.path}/${id}`, { body: resource.change });
        assert.equal(same.body.version, 2, 'a PATCH that changes nothing makes no new version');
        assert.equal((await api('PATCH', `/api/v1/${resource.path}/${id}`, { body: { name: 'late' }, headers: { 'if-match': '"v1"' } })).status, 412);

        for (const filter of resource.filter) {
          const listed = await api('GET', `/api/v1/${resource.path}?${filter}`);
          assert.equal(listed.status, 200, listed.text);
          assert.deepEqual(
            listed.body.data.map((item: any) => item.id),
            [id],
            filter,
          );
        }
        // Rules have no status: there the parameter itself is refused, elsewhere its value.
        const nonsense = await api('GET', `/api/v1/${resource.path}?status=nonsense`);
        assert.equal(nonsense.status, 422, nonsense.text);
        assert.deepEqual(
          nonsense.body.errors.map((e: any) => [e.field, e.code]),
          [['status', resource.path === 'rules' ? 'unknown_parameter' : 'invalid_value']],
        );

        assert.equal((await api('DELETE', `/api/v1/${resource.path}/${id}`, { headers: { 'if-match': '"v1"' } })).status, 412);
        assert.equal((await api('DELETE', `/api/v1/${resource.path}/${id}`)).status, 204);
        assert.equal((await api('GET', `/api/v1/${resource.path}/${id}`)).status, 404);

        const topics = async () =>
          stack.events
            .forMerchant(merchant.merchantId)
            .filter((e) => e.topic.startsWith(`${resource.topic}.`) && e.data.object.id === id)
            .map((e) => e.topic);
        await stack.events.waitFor((e) => e.topic === `${resource.topic}.deleted` && e.data.object.id === id);
        assert.deepEqual(await topics(), [`${resource.topic}.created`, `${resource.topic}.updated`, `${resource.topic}.deleted`]);
        const change = stack.events.seen.find((e) => e.topic === `${resource.topic}.updated` && e.data.object.id === id)!;
        assert.deepEqual(Object.keys(change.data.previous!).sort(), Object.keys(resource.change).sort());
      });

      it('names every field error at once and writes nothing', async () => {
        const refused = await api('POST', `/api/v1/${resource.path}`, { body: resource.invalid });
        assert.equal(refused.status, 422, refused.text);
        assert.equal(refused.headers.get('content-type'), 'application/problem+json');
        assert.deepEqual([...new Set(refused.body.errors.map((e: any) => e.field))].sort(), [...resource.invalidFields].sort());
        assert.equal((await api('GET', `/api/v1/${resource.path}`)).body.data.length, 0);
        for (const [body, contentType] of [
          ['{"name":', 'application/json'],
          ['name=x', 'text/plain'],
        ] as const) {
          const bad = await call(stack, 'POST', `/api/v1/${resource.path}`, { token: merchant.token, rawBody: body, contentType });
          assert.equal(bad.status, contentType === 'text/plain' ? 415 : 400);
        }
      });

      it('replays a create with the same Idempotency-Key and refuses the key with another body', async () => {
        const headers = { 'idempotency-key': `create-${resource.path}` };
        const first = await api('POST', `/api/v1/${resource.path}`, { body: resource.valid(), headers });
        const again = await api('POST', `/api/v1/${resource.path}`, { body: resource.valid(), headers });
        assert.equal(first.status, 201);
        assert.equal(again.text, first.text);
        assert.equal(again.headers.get('idempotent-replayed'), 'true');
        assert.equal((await api('GET', `/api/v1/${resource.path}`)).body.data.length, 1);
        const other = await api('POST', `/api/v1/${resource.path}`, { body: { ...resource.valid(), name: 'different' }, headers });
        assert.equal(other.status, 422);
        assert.equal(other.body.code, 'idempotency_key_reused');
      });
    });
  }

  describe('destinations', () => {
    it('shows the signing secret on creation only, and never in events', async () => {
      const destination = await created('/api/v1/destinations', { name: 'ERP', url: 'http://127.0.0.1:9/erp', kind: 'http' });
      assert.match(destination.secret, /^whsec_/);
      assert.equal((await api('GET', `/api/v1/destinations/${destination.id}`)).body.secret, undefined);
      assert.equal((await api('GET', '/api/v1/destinations')).text.includes(destination.secret), false);
      const event = await stack.events.waitFor((e) => e.topic === 'destinations.created' && e.data.object.id === destination.id);
      assert.equal(JSON.stringify(event).includes(destination.secret), false);
    });

    it('refuses private addresses other than the allowed one, and plain http for live merchants', async () => {
      const refused = await api('POST', '/api/v1/destinations', { body: { name: 'metadata', url: 'http://169.254.169.254/latest' } });
      assert.equal(refused.status, 422);
      assert.equal(refused.body.errors[0].field, 'url');
      const live = await createMerchant(stack, { mode: 'live' });
      const plain = await call(stack, 'POST', '/api/v1/destinations', { token: live.token, body: { name: 'ERP', url: 'http://erp.example.com/hook' } });
      assert.equal(plain.status, 422);
      assert.match(JSON.stringify(plain.body.errors), /https/);
    });
  });

  describe('connections', () => {
    async function wiring(owner = merchant) {
      const token = owner.token;
      const make = async (path: string, body: unknown) => {
        const response = await call(stack, 'POST', path, { token, body });
        assert.equal(response.status, 201, response.text);
        return response.body.id as string;
      };
      return {
        source: await make('/api/v1/sources', { name: 'Shop', kind: 'storefront' }),
        destination: await make('/api/v1/destinations', { name: 'ERP', url: 'http://127.0.0.1:9/erp' }),
        rule: await make('/api/v1/rules', { name: 'All', action: 'forward' }),
      };
    }

    it('ties a source to a destination of the same merchant through ordered rules, with filters', async () => {
      const { source, destination, rule } = await wiring();
      const second = await created('/api/v1/rules', { name: 'Drop tests', action: 'drop', condition: 'external_id.startsWith("TEST-")' });
      const connection = await created('/api/v1/connections', {
        name: 'Shop to ERP',
        source_id: source,
        destination_id: destination,
        rule_ids: [second.id, rule],
      });
      assert.deepEqual(connection.rule_ids, [second.id, rule]);
      assert.deepEqual(connection.event_types, ['orders.created', 'reviews.submitted', 'campaign_spend.updated', 'system_alerts.raised']);
      assert.equal(connection.status, 'active');
      for (const filter of [`source_id=${source}`, `destination_id=${destination}`, 'status=active']) {
        assert.deepEqual(
          (await api('GET', `/api/v1/connections?${filter}`)).body.data.map((c: any) => c.id),
          [connection.id],
          filter,
        );
      }
      const reordered = await api('PATCH', `/api/v1/connections/${connection.id}`, { body: { rule_ids: [rule, second.id], status: 'paused' } });
      assert.equal(reordered.status, 200, reordered.text);
      assert.deepEqual(reordered.body.rule_ids, [rule, second.id]);
      const moved = await api('PATCH', `/api/v1/connections/${connection.id}`, { body: { source_id: source } });
      assert.equal(moved.status, 422);
      // ConnectionUpdate has no source_id but a connection shows one: the edge names it read-only.
      assert.deepEqual(
        moved.body.errors.map((e: any) => [e.field, e.code]),
        [['source_id', 'read_only']],
      );
    });

    it("refuses another merchant's or unknown source, destination and rules with 422, naming each", async () => {
      const ours = await wiring();
      const other = await createMerchant(stack);
      const theirs = await wiring(other);
      const refused = await api('POST', '/api/v1/connections', {
        body: { source_id: theirs.source, destination_id: theirs.destination, rule_ids: [ours.rule, theirs.rule] },
      });
      assert.equal(refused.status, 422, refused.text);
      assert.deepEqual(
        refused.body.errors.map((e: any) => [e.field, e.code]),
        [
          ['source_id', 'unknown_reference'],
          ['destination_id', 'unknown_reference'],
          ['rule_ids[1]', 'unknown_reference'],
        ],
      );
      assert.equal(refused.text.includes('Shop'), false, 'nothing of the other merchant is shown');
      assert.equal((await api('GET', '/api/v1/connections')).body.data.length, 0);
    });

    it('keeps what a connection uses: deleting its source, destination or rule is a 409 until the connection goes', async () => {
      const { source, destination, rule } = await wiring();
      const connection = await created('/api/v1/connections', { source_id: source, destination_id: destination, rule_ids: [rule] });
      for (const path of [`/api/v1/sources/${source}`, `/api/v1/destinations/${destination}`, `/api/v1/rules/${rule}`]) {
        const refused = await api('DELETE', path);
        assert.equal(refused.status, 409, path);
        assert.match(refused.body.detail, new RegExp(connection.id));
      }
      assert.equal((await api('DELETE', `/api/v1/connections/${connection.id}`)).status, 204);
      for (const path of [`/api/v1/sources/${source}`, `/api/v1/destinations/${destination}`, `/api/v1/rules/${rule}`])
        assert.equal((await api('DELETE', path)).status, 204, path);
    });

    it('never lets a delete and a new connection both win when they race', async () => {
      const { source, destination } = await wiring();
      const [connected, deleted] = await Promise.all([
        api('POST', '/api/v1/connections', { body: { source_id: source, destination_id: destination } }),
        api('DELETE', `/api/v1/sources/${source}`),
      ]);
      assert.ok((connected.status === 201) !== (deleted.status === 204), `one wins: connection ${connected.status}, delete ${deleted.status}`);
      assert.ok([201, 422].includes(connected.status) && [204, 409].includes(deleted.status));
    });
  });

  describe('rules', () => {
    it('checks CEL conditions when they are saved, saying what is wrong and where', async () => {
      const cases: Array<[string, RegExp]> = [
        ['data.total >= ', /.+/],
        ['unknown_var == 1', /unknown_var/],
        ['frobnicate(data.total)', /frobnicate/],
        ['data.a.all(x, data.b.all(y, data.c.exists(z, z == x)))', /.+/],
        ['type + 1', /.+/],
        ['"just a string"', /bool/],
      ];
      for (const [condition, message] of cases) {
        const refused = await api('POST', '/api/v1/rules', { body: { name: 'bad', action: 'forward', condition } });
        assert.equal(refused.status, 422, `${condition}: ${refused.text}`);
        assert.equal(refused.body.errors[0].field, 'condition');
        assert.match(refused.body.errors[0].message, message, condition);
      }
      const transform = await api('POST', '/api/v1/rules', { body: { name: 't', action: 'transform' } });
      assert.equal(transform.status, 422);
      assert.equal(transform.body.errors[0].field, 'transform');
      const strayTransform = await api('POST', '/api/v1/rules', { body: { name: 't', action: 'drop', transform: { remove: ['x'] } } });
      assert.equal(strayTransform.status, 422);
      const ok = await api('POST', '/api/v1/rules', {
        body: { name: 'Reshape', action: 'transform', transform: { keep: ['id', 'total'], rename: { total: 'amount' }, set: { channel: 'web' } } },
      });
      assert.equal(ok.status, 201, ok.text);
      assert.equal(ok.body.condition, 'true');
    });
  });
});
