import assert from 'node:assert/strict';
import type { Context } from 'koa';
import { ValidationFailed, type FieldError } from './errors.js';
import { assertMatchesSchema, schemaErrors, validateRequest } from './request-validation.js';

/** Just what validateRequest reads of a Koa context: the method, the path, the parsed query and body. */
function request(method: string, path: string, body?: unknown, query: Record<string, string> = {}): Context {
  return { method, path, query, request: { body } } as unknown as Context;
}

async function refusal(ctx: Context): Promise<Array<[string, string]>> {
  let reached = false;
  const error = await validateRequest(ctx, async () => {
    reached = true;
  }).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  assert.ok(error instanceof ValidationFailed, `expected a ValidationFailed, got ${String(error)}`);
  assert.equal(reached, false, 'the route must not run');
  for (const fieldError of error.errors) assert.ok(fieldError.message.length > 0);
  return error.errors.map((fieldError: FieldError) => [fieldError.field, fieldError.code]);
}

async function passes(ctx: Context): Promise<void> {
  let reached = false;
  await validateRequest(ctx, async () => {
    reached = true;
  });
  assert.ok(reached, 'the route runs');
}

describe('validateRequest: every request checked against its OpenAPI operation before the route runs', function () {
  // The first request compiles the document's schemas, which takes seconds on a busy machine.
  this.timeout(30_000);
  const product = { sku: 'TS-1', title: 'T-shirt', price: '19.99', currency: 'EUR' };

  it('lets a well-formed body through, untouched', async () => {
    const ctx = request('POST', '/api/v1/products', { ...product, attributes: { colour: 'black' } });
    await passes(ctx);
    assert.deepEqual((ctx.request as { body?: unknown }).body, { ...product, attributes: { colour: 'black' } });
  });

  it('names every structural problem of a body in one 422, one code per schema keyword', async () => {
    const errors = await refusal(
      request('POST', '/api/v1/products', { sku: 'bad sku!', title: '', price: 19.99, colour: 'red', inventory_quantity: -1, attributes: { 'size.eu': 40 } }),
    );
    assert.deepEqual(errors.sort(), [
      ['attributes["size.eu"]', 'invalid_type'],
      ['colour', 'unknown_field'],
      ['currency', 'required'],
      ['inventory_quantity', 'out_of_range'],
      ['price', 'invalid_decimal'],
      ['sku', 'invalid_format'],
      ['title', 'too_short'],
    ]);
  });

  it('calls a member the resource shows but its update does not take read_only, and any other unknown', async () => {
    assert.deepEqual((await refusal(request('PATCH', '/api/v1/merchant', { plan: 'scale', status: 'active', colour: 'red' }))).sort(), [
      ['colour', 'unknown_field'],
      ['plan', 'read_only'],
      ['status', 'read_only'],
    ]);
    assert.deepEqual(await refusal(request('PATCH', '/api/v1/products/prd_01jd3k7q8m2x4v6b9c0d1e2f3g', { id: 'prd_other' })), [['id', 'read_only']]);
    // A create takes what it takes: a resource's member it does not take is simply unknown there.
    assert.deepEqual(await refusal(request('POST', '/api/v1/products', { ...product, id: 'prd_other' })), [['id', 'unknown_field']]);
  });

  it('writes nested and listed members in the one field grammar', async () => {
    const errors = await refusal(
      request('POST', '/api/v1/rules', { name: 'R', action: 'transform', transform: { keep: ['a', 'b c'], set: { 'bad key': 1 } } }),
    );
    assert.deepEqual(errors.sort(), [
      ['transform.keep[1]', 'invalid_format'],
      ['transform.set["bad key"]', 'invalid_key'],
    ]);
    assert.deepEqual(await refusal(request('POST', '/api/v1/api-keys', { name: 'K', scopes: ['products:read', 'nope:write', 'products:read'] })), [
      ['scopes[1]', 'invalid_value'],
      ['scopes', 'duplicate_items'],
    ]);
  });

  it('refuses a body that is not an object, a required body that is missing, and an update that changes nothing', async () => {
    for (const body of [[], 'text', 7, null]) assert.deepEqual(await refusal(request('POST', '/api/v1/products', body)), [['(body)', 'invalid_type']]);
    assert.deepEqual(await refusal(request('POST', '/api/v1/products', undefined)), [['(body)', 'required']]);
    assert.deepEqual(await refusal(request('PATCH', '/api/v1/sources/src_01jd3k7q8m2x4v6b9c0d1e2f3g', {})), [['(body)', 'required']]);
  });

  it('lets an optional body be left out', async () => {
    await passes(request('POST', '/api/v1/sandbox/reset', undefined));
    assert.deepEqual(await refusal(request('POST', '/api/v1/sandbox/reset', { seed: 'yes' })), [['seed', 'invalid_type']]);
  });

  it('refuses query parameters the operation does not declare, naming them and what it takes', async () => {
    const ctx = request('GET', '/api/v1/products', undefined, { limit: '2', stauts: 'active' });
    const error = await validateRequest(ctx, async () => undefined).catch((thrown: unknown) => thrown);
    assert.ok(error instanceof ValidationFailed);
    assert.deepEqual(error.errors, [
      {
        field: 'stauts',
        code: 'unknown_parameter',
        message: 'stauts is not a query parameter of products.list; it takes limit, cursor, status, sku, currency',
      },
    ]);
    await passes(request('GET', '/api/v1/products', undefined, { limit: '2', status: 'active' }));
  });

  it('leaves the items of a batch judged one by one to the domain, but checks the batch itself', async () => {
    await passes(request('POST', '/api/v1/sources/src_01jd3k7q8m2x4v6b9c0d1e2f3g/records', { records: [{ type: 'order' }, 'not a record'] }));
    assert.deepEqual(await refusal(request('POST', '/api/v1/sources/src_01jd3k7q8m2x4v6b9c0d1e2f3g/records', { records: [], extra: 1 })), [
      ['extra', 'unknown_field'],
      ['records', 'too_short'],
    ]);
  });

  it('passes requests the document does not describe to the router, which answers 404 or 405', async () => {
    await passes(request('POST', '/api/v1/nowhere', { anything: true }));
    await passes(request('PUT', '/api/v1/products', { anything: true }));
  });
});

describe('assertMatchesSchema: the same rules for callers that do not come through HTTP', () => {
  it('checks a value against a component schema, prefixing the field paths', () => {
    assert.deepEqual(schemaErrors('ProductCreate', { sku: 'S', title: 'T', price: '1.00', currency: 'EUR' }), []);
    assert.throws(
      () => assertMatchesSchema('ProductCreate', { sku: 'S', title: 5, price: '1.00', currency: 'EUR' }, 'products[3]'),
      (error: unknown) =>
        error instanceof ValidationFailed &&
        error.errors.length === 1 &&
        error.errors[0]!.field === 'products[3].title' &&
        error.errors[0]!.code === 'invalid_type',
    );
    assert.throws(() => schemaErrors('NoSuchSchema', {}), /NoSuchSchema is not a schema/);
  });
});
