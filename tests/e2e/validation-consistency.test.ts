import assert from 'node:assert/strict';
import { openApiDocument, resolvePointer, type JsonSchema, type OperationObject, type ParameterObject, type Reference } from '@merx/contracts';
import { call, createMerchant, issueToken, sharedStack, type ApiResponse, type Stack, type TestMerchant } from '../src/harness/index.js';

/** The one grammar of `errors[].field`: `price`, `scopes[0]`, `settings.url`, `transform.set["customer.email"]`, or `(body)`. */
const FIELD_PATH = /^(\(body\)|(?:[A-Za-z_][A-Za-z0-9_-]*|\["(?:[^"\\]|\\.)*"\])(?:\.[A-Za-z_][A-Za-z0-9_-]*|\[\d+\]|\["(?:[^"\\]|\\.)*"\])*)$/;

function fieldErrors(response: ApiResponse): Array<[string, string]> {
  assert.equal(response.status, 422, response.text);
  assert.equal(response.body.code, 'validation_failed');
  for (const error of response.body.errors) assert.match(error.field, FIELD_PATH, `${error.field} is not written the one way`);
  return response.body.errors.map((error: { field: string; code: string }) => [error.field, error.code]);
}

describe('validation errors, the same in every service (through the gateway)', () => {
  let stack: Stack;
  let merchant: TestMerchant;

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });
  beforeEach(async () => {
    merchant = await createMerchant(stack);
  });

  const api = (method: string, path: string, body?: unknown, token = merchant.token) => call(stack, method, path, { token, body });

  it('refuses a query parameter no operation of any service declares, naming it, as it refuses an unknown body field', async () => {
    const product = await api('POST', '/api/v1/products', { sku: 'Q-1', title: 'Query', price: '1.00', currency: 'EUR' });
    assert.equal(product.status, 201, product.text);
    const source = await api('POST', '/api/v1/sources', { name: 'Shop', kind: 'storefront' });
    assert.equal(source.status, 201, source.text);
    const lists = [
      '/api/v1/products',
      '/api/v1/sources',
      '/api/v1/destinations',
      '/api/v1/rules',
      '/api/v1/connections',
      `/api/v1/sources/${source.body.id}/records`,
      '/api/v1/api-keys',
      '/api/v1/apps',
      '/api/v1/audit',
      '/api/v1/webhooks/subscriptions',
      '/api/v1/webhooks/deliveries',
      '/api/v1/webhooks/dead-letters',
      '/api/v1/events',
    ];
    for (const path of lists) {
      assert.equal((await api('GET', `${path}?limit=2`)).status, 200, `${path} takes limit`);
      const refused = await api('GET', `${path}?limit=2&stauts=active`);
      assert.deepEqual(fieldErrors(refused), [['stauts', 'unknown_parameter']], path);
      assert.match(refused.body.errors[0].message, /stauts is not a query parameter of [a-z_.]+; it takes limit, cursor/);
    }
    // Operations with no query parameters at all refuse any.
    for (const path of [`/api/v1/products/${product.body.id}`, '/api/v1/merchant', `/api/v1/audit/verify`]) {
      const refused = await api('GET', `${path}?expand=everything`);
      assert.deepEqual(fieldErrors(refused), [['expand', 'unknown_parameter']], path);
    }
    // A write with an unknown parameter changes nothing.
    const write = await api('POST', '/api/v1/products?dry_run=true', { sku: 'Q-2', title: 'Query', price: '1.00', currency: 'EUR' });
    assert.deepEqual(fieldErrors(write), [['dry_run', 'unknown_parameter']]);
    assert.equal((await api('GET', '/api/v1/products?sku=Q-2')).body.data.length, 0, 'nothing was created');
    // Odd names are quoted like odd body members.
    assert.deepEqual(fieldErrors(await api('GET', '/api/v1/products?page%5Bsize%5D=5')), [['["page[size]"]', 'unknown_parameter']]);
  });

  it('checks credentials and scope before the parameters, and refuses unknown parameters on operator operations too', async () => {
    assert.equal((await call(stack, 'GET', '/api/v1/products?stauts=x')).status, 401);
    const narrow = await issueToken(stack, merchant.apiKey, 'merchant:read');
    assert.equal((await api('GET', '/api/v1/products?stauts=x', undefined, narrow)).status, 403);
    const operator = { authorization: `Bearer ${stack.operatorToken}` };
    const throttle = await call(stack, 'GET', `/admin/v1/merchants/${merchant.merchantId}/throttle?verbose=1`, { headers: operator });
    assert.deepEqual(fieldErrors(throttle), [['verbose', 'unknown_parameter']]);
    assert.equal((await call(stack, 'GET', `/admin/v1/merchants/${merchant.merchantId}/throttle?verbose=1`)).status, 401);
    assert.equal((await call(stack, 'GET', `/admin/v1/merchants/${merchant.merchantId}/throttle`, { headers: operator })).status, 200);
  });

  it('writes field paths one way in every service: positions in brackets, members with dots, odd names quoted', async () => {
    // oauth: a scope the key may not have
    const key = await api('POST', '/api/v1/api-keys', { name: 'K', scopes: ['products:read', 'nope:write'], colour: 'red' });
    assert.deepEqual(fieldErrors(key).sort(), [
      ['colour', 'unknown_field'],
      ['scopes[1]', 'invalid_value'],
    ]);
    // oauth, operator: an app's redirect URIs and scopes, an owner's unknown member
    const operator = { authorization: `Bearer ${stack.operatorToken}` };
    const app = await call(stack, 'POST', '/admin/v1/apps', {
      headers: operator,
      body: { name: 'A', redirect_uris: ['https://ok.example/cb', 'ftp://x'], scopes: ['products:read', 'bad'] },
    });
    // Structure first (the unknown scope), at the edge; the redirect URI policy runs once the body is well formed.
    assert.deepEqual(fieldErrors(app).sort(), [['scopes[1]', 'invalid_value']]);
    const provisioning = await call(stack, 'POST', '/admin/v1/merchants', {
      headers: operator,
      body: { name: 'M', owner: { email: 'x@example.com', 'full name': 'X' } },
    });
    assert.deepEqual(fieldErrors(provisioning), [['owner["full name"]', 'unknown_field']]);
    // catalog: attribute keys
    const product = await api('POST', '/api/v1/products', { sku: 'P-1', title: 'T', price: '1.00', currency: 'EUR', attributes: { colour: 5, 'size.eu': 40 } });
    assert.deepEqual(fieldErrors(product).sort(), [
      ['attributes.colour', 'invalid_type'],
      ['attributes["size.eu"]', 'invalid_type'],
    ]);
    // webhooks: topics
    const subscription = await api('POST', '/api/v1/webhooks/subscriptions', { url: 'http://127.0.0.1:9/hooks', topics: ['orders', 'nope'] });
    assert.deepEqual(fieldErrors(subscription), [['topics[1]', 'unknown_topic']]);
    // merchants: a transform's dotted keys and list positions
    const rule = await api('POST', '/api/v1/rules', {
      name: 'R',
      action: 'transform',
      transform: { keep: ['a', 'b c'], set: { 'customer.email': 'x', 'customer..email': 1, 'bad key': 1 } },
    });
    assert.deepEqual(fieldErrors(rule).sort(), [
      ['transform.keep[1]', 'invalid_format'],
      // A member name the schema's propertyNames refuses is invalid_key, in every service (the kit's one code per keyword).
      ['transform.set["bad key"]', 'invalid_key'],
      ['transform.set["customer..email"]', 'invalid_key'],
    ]);
  });

  it("names each rejected record's fields relative to the record, in the same grammar", async () => {
    const source = await api('POST', '/api/v1/sources', { name: 'Shop', kind: 'storefront' });
    const batch = await api('POST', `/api/v1/sources/${source.body.id}/records`, {
      records: [
        { type: 'order', external_id: 'O-1', occurred_at: '2026-11-22T10:00:00Z', data: { total: '12.00', line_items: [{ sku: 'A' }, 'B'] } },
        { type: 'alert', external_id: 'A-1', occurred_at: '2026-11-22T10:00:00Z', data: { severity: 'loud' } },
      ],
    });
    assert.equal(batch.status, 200, batch.text);
    const fields = batch.body.results.map((result: { errors: Array<{ field: string; code: string }> }) =>
      result.errors.map((error) => [error.field, error.code]).sort(),
    );
    assert.deepEqual(fields, [
      [
        ['data.line_items[1]', 'invalid_type'],
        ['data.total', 'invalid_type'],
      ],
      [
        ['data.message', 'required'],
        ['data.severity', 'invalid_value'],
      ],
    ]);
    for (const result of batch.body.results) for (const error of result.errors) assert.match(error.field, FIELD_PATH);
  });
});

const resolve = <T>(value: T | Reference): T =>
  typeof value === 'object' && value !== null && '$ref' in value ? resolve(resolvePointer(openApiDocument, (value as Reference).$ref) as T) : (value as T);

interface BodyOperation {
  method: string;
  template: string;
  operation: OperationObject;
  schema: { required?: string[]; properties?: Record<string, JsonSchema> };
  example: Record<string, unknown>;
  bodyRequired: boolean;
}

/** Every operation of the document that takes a JSON body, with the example the document gives for it. */
function operationsWithJsonBodies(): BodyOperation[] {
  const found: BodyOperation[] = [];
  for (const [template, item] of Object.entries(openApiDocument.paths)) {
    for (const method of ['post', 'put', 'patch'] as const) {
      const operation = item[method];
      const requestBody = operation?.requestBody ? resolve(operation.requestBody) : undefined;
      const json = requestBody?.content['application/json'];
      if (!operation || !json) continue;
      const example = (Object.values(json.examples ?? {})[0] as { value?: Record<string, unknown> } | undefined)?.value;
      assert.ok(example, `${operation.operationId} has no request example to start from`);
      found.push({
        method: method.toUpperCase(),
        template,
        operation,
        schema: resolve(json.schema) as BodyOperation['schema'],
        example,
        bodyRequired: requestBody!.required === true,
      });
    }
  }
  return found;
}

/** A JSON value none of the schema's types admits. */
function wrongTypeFor(schema: JsonSchema): unknown {
  const resolved = resolve(schema) as { type?: string | string[]; const?: unknown; enum?: unknown[] };
  const types = new Set(Array.isArray(resolved.type) ? resolved.type : resolved.type ? [resolved.type] : []);
  const candidates: Array<[string, unknown]> = [
    ['string', 'not-this-type'],
    ['integer', 12_345],
    ['boolean', true],
    ['array', []],
    ['object', {}],
  ];
  const admitted = (type: string) => types.has(type) || (type === 'integer' && types.has('number'));
  return candidates.find(([type]) => !admitted(type))![1];
}

describe('every JSON request body of the OpenAPI document, checked at the edge the same way by every service', () => {
  let stack: Stack;
  let merchant: TestMerchant;

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
    merchant = await createMerchant(stack);
    // A few hundred writes in a row: the requests must meet the validation, not the throttle.
    const roomy = {
      burst: { capacity: 1_000_000, refill_per_second: 1_000_000 },
      writes: { capacity: 1_000_000, refill_per_second: 1_000_000 },
      sensitive: { limit: 1_000_000, window_seconds: 60 },
    };
    const set = await call(stack, 'PUT', `/admin/v1/merchants/${merchant.merchantId}/throttle`, {
      headers: { authorization: `Bearer ${stack.operatorToken}` },
      body: roomy,
    });
    assert.equal(set.status, 200, set.text);
  });

  /** The path with every parameter filled by a well-formed id that names nothing: validation comes before any lookup. */
  const concretePath = (template: string, operation: OperationObject) => {
    const item = openApiDocument.paths[template]!;
    const parameters = [...(item.parameters ?? []), ...(operation.parameters ?? [])].map((parameter) => resolve<ParameterObject>(parameter));
    return parameters
      .filter((parameter) => parameter.in === 'path')
      .reduce((path, parameter) => path.replace(`{${parameter.name}}`, (parameter.example as string | undefined) ?? 'x_01jd3k7q8m2x4v6b9c0d1e2f3g'), template);
  };
  const send = (target: BodyOperation, body: unknown, raw?: string) => {
    const operator = target.operation.security[0] && 'operator' in target.operation.security[0];
    const path = concretePath(target.template, target.operation);
    return call(
      stack,
      target.method,
      path,
      operator
        ? { headers: { authorization: `Bearer ${stack.operatorToken}` }, ...(raw === undefined ? { body } : { rawBody: raw }) }
        : { token: merchant.token, ...(raw === undefined ? { body } : { rawBody: raw }) },
    );
  };
  /** The one 422 shape: problem+json, validation_failed, and errors of field, code and message. */
  const refusal = (response: ApiResponse, what: string): Array<[string, string]> => {
    assert.equal(response.status, 422, `${what}: ${response.text}`);
    assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/, what);
    assert.equal(response.body.code, 'validation_failed', what);
    assert.equal(response.body.type, 'https://merx.dev/errors/validation_failed', what);
    assert.ok(Array.isArray(response.body.errors) && response.body.errors.length > 0, `${what}: no errors list`);
    for (const error of response.body.errors) {
      assert.deepEqual(Object.keys(error).sort(), ['code', 'field', 'message'], what);
      assert.match(error.field, FIELD_PATH, what);
      assert.ok(error.message.length > 0, what);
    }
    return response.body.errors.map((error: { field: string; code: string }) => [error.field, error.code]);
  };

  it('walks every operation with a JSON body: unknown members, missing required members, wrong types and non-object bodies are one 422 naming the field', async function () {
    this.timeout(300_000);
    const operations = operationsWithJsonBodies();
    assert.ok(operations.length >= 20, `only ${operations.length} operations take a JSON body`);
    for (const target of operations) {
      const id = target.operation.operationId;
      assert.deepEqual(refusal(await send(target, { ...target.example, zz_unknown: 1 }), `${id} unknown member`), [['zz_unknown', 'unknown_field']], id);
      for (const member of target.schema.required ?? []) {
        const without = { ...target.example };
        delete without[member];
        assert.deepEqual(refusal(await send(target, without), `${id} without ${member}`), [[member, 'required']], `${id} without ${member}`);
      }
      const typed = (target.schema.required ?? []).length > 0 ? target.schema.required! : Object.keys(target.schema.properties ?? {});
      for (const member of typed) {
        const wrong = wrongTypeFor(target.schema.properties![member]!);
        // A kind of value with a documented code (x-merx-error: a price is invalid_decimal) keeps it however it fails.
        const expected = (resolve(target.schema.properties![member]!) as { 'x-merx-error'?: { code: string } })['x-merx-error']?.code ?? 'invalid_type';
        const errors = refusal(await send(target, { ...target.example, [member]: wrong }), `${id} ${member}=${JSON.stringify(wrong)}`);
        assert.ok(
          errors.some(([field, code]) => field === member && code === expected),
          `${id} ${member}=${JSON.stringify(wrong)}: ${JSON.stringify(errors)}`,
        );
        assert.ok(
          errors.every(([field]) => field === member),
          `${id} ${member}: only that member is named: ${JSON.stringify(errors)}`,
        );
      }
      for (const body of [[], 'text', 7]) {
        assert.deepEqual(refusal(await send(target, body), `${id} body ${JSON.stringify(body)}`), [['(body)', 'invalid_type']], id);
      }
      if (target.bodyRequired) assert.deepEqual(refusal(await send(target, undefined), `${id} without a body`), [['(body)', 'required']], id);
    }
  });

  it('leaves nothing behind: the refused creates wrote no product, key or subscription', async () => {
    for (const path of ['/api/v1/products', '/api/v1/sources', '/api/v1/webhooks/subscriptions']) {
      const list = await call(stack, 'GET', path, { token: merchant.token });
      assert.equal(list.status, 200, list.text);
      assert.equal(list.body.data.length, 0, `${path}: ${list.text}`);
    }
    assert.equal((await call(stack, 'GET', '/api/v1/api-keys', { token: merchant.token })).body.data.length, 1, "only the merchant's first key");
  });
});
