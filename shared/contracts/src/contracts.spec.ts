import assert from 'node:assert/strict';
import {
  createContractValidator,
  eventCatalogue,
  eventNames,
  openApiDocument,
  problemTypes,
  problemTypeUri,
  resolvePointer,
  scopeNames,
  topicOf,
  type OperationObject,
  type ResponseObject,
} from './index.js';

const requestId = 'req_01jd3k7q8m2x4v6b9c0d1e2f3g';
const methods = ['get', 'post', 'put', 'patch', 'delete'] as const;

function everyOperation(): Array<{ method: string; path: string; operation: OperationObject }> {
  return Object.entries(openApiDocument.paths).flatMap(([path, item]) =>
    methods.flatMap((method) => (item[method] ? [{ method, path, operation: item[method] }] : [])),
  );
}

function collectRefs(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((child) => collectRefs(child, found));
  else if (typeof node === 'object' && node !== null) {
    for (const [key, child] of Object.entries(node)) {
      if (key === '$ref' && typeof child === 'string') found.push(child);
      else collectRefs(child, found);
    }
  }
  return found;
}

const aProduct = () => ({
  id: 'prod_01jd3k7q8m2x4v6b9c0d1e2f3g',
  object: 'product',
  sku: 'TSHIRT-BLK-M',
  title: 'T-shirt',
  description: null,
  price: '19.99',
  currency: 'USD',
  status: 'active',
  inventory_quantity: 12,
  attributes: { color: 'black' },
  version: 1,
  created_at: '2026-11-22T10:04:05.123Z',
  updated_at: '2026-11-22T10:04:05.123Z',
});

const aProblem = (code: keyof typeof problemTypes, extra: Record<string, unknown> = {}) => ({
  type: problemTypeUri(code),
  title: problemTypes[code].title,
  status: problemTypes[code].status,
  code,
  detail: 'Something about it.',
  request_id: requestId,
  ...extra,
});

const productHeaders = { 'X-Request-Id': requestId, ETag: '"1"' };

const anEvent = (overrides: Record<string, unknown> = {}) => ({
  id: 'evt_01jd3k7q8m2x4v6b9c0d1e2f3g',
  topic: 'products.created',
  merchant_id: 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g',
  created_at: '2026-11-22T10:04:05.123Z',
  api_version: 'v1',
  data: { object: aProduct() },
  context: { request_id: requestId, actor: { type: 'api_key', id: 'key_01jd3k7q8m2x4v6b9c0d1e2f3g' }, ip: '203.0.113.7' },
  ...overrides,
});

describe('OpenAPI document', () => {
  it('is OpenAPI 3.1 with every operation named <resource>.<verb>, uniquely, with a summary and a description', () => {
    assert.match(openApiDocument.openapi, /^3\.1\.\d+$/);
    const ids = everyOperation().map(({ operation }) => operation.operationId);
    for (const { method, path, operation } of everyOperation()) {
      // snake_case resources as the lead named them (api_keys.create); camelCase within a name is also fine.
      assert.match(operation.operationId, /^[a-z][a-zA-Z_]*(\.[a-z][a-zA-Z_]*)+$/, `${method} ${path}`);
      assert.ok(operation.summary.length > 0 && operation.description.length > 0, `${operation.operationId} needs words`);
    }
    assert.equal(new Set(ids).size, ids.length, `duplicate operationId in ${ids.join(', ')}`);
  });

  it('tags every operation with a tag the document declares', () => {
    const declared = openApiDocument.tags.map((tag) => tag.name);
    assert.equal(new Set(declared).size, declared.length, `duplicate tag in ${declared.join(', ')}`);
    for (const { operation } of everyOperation()) {
      for (const tag of operation.tags) assert.ok(declared.includes(tag), `${operation.operationId}: undeclared tag ${tag}`);
    }
  });

  it('resolves every $ref', () => {
    const refs = collectRefs(openApiDocument);
    assert.ok(refs.length > 20);
    for (const ref of refs) assert.doesNotThrow(() => resolvePointer(openApiDocument, ref), ref);
  });

  it('gives every operation a security entry, error responses and X-Request-Id on every response', () => {
    const knownScopes = Object.keys(openApiDocument.components.securitySchemes.oauth2!.flows!.clientCredentials.scopes);
    assert.deepEqual(knownScopes.sort(), [...scopeNames].sort());
    for (const { operation } of everyOperation()) {
      const label = operation.operationId;
      assert.ok(Array.isArray(operation.security), `${label} has no security entry`);
      const statuses = Object.keys(operation.responses);
      assert.ok(
        statuses.some((status) => /^4\d\d$/.test(status) || status === 'default'),
        `${label} documents no errors`,
      );
      for (const requirement of operation.security) {
        for (const [scheme, scopes] of Object.entries(requirement)) {
          assert.ok(openApiDocument.components.securitySchemes[scheme], `${label}: unknown scheme ${scheme}`);
          for (const scope of scopes) assert.ok(knownScopes.includes(scope), `${label}: unknown scope ${scope}`);
        }
      }
      if (operation.security.length > 0) assert.ok(statuses.includes('401'), `${label} needs a 401`);
      if (operation.security.some((requirement) => 'oauth2' in requirement)) {
        assert.ok(statuses.includes('403'), `${label} needs a 403`);
        assert.equal(operation.security[0]?.oauth2?.length, 1, `${label} names exactly one scope`);
      }
      for (const [status, response] of Object.entries(operation.responses)) {
        const resolved = ('$ref' in response ? resolvePointer(openApiDocument, response.$ref) : response) as ResponseObject;
        assert.ok(resolved.headers?.['X-Request-Id'], `${label} ${status} lacks X-Request-Id`);
      }
    }
  });

  it('declares every path template parameter', () => {
    for (const [path, item] of Object.entries(openApiDocument.paths)) {
      const declared = collectRefs(item.parameters ?? [])
        .map((ref) => resolvePointer(openApiDocument, ref) as { name: string; in: string })
        .filter((parameter) => parameter.in === 'path')
        .map((parameter) => parameter.name);
      for (const [, name] of path.matchAll(/\{([^}]+)\}/g)) assert.ok(declared.includes(name!), `${path} does not declare ${name}`);
    }
  });

  it('compiles every response schema', () => {
    const validator = createContractValidator();
    for (const { method, path, operation } of everyOperation()) {
      for (const status of Object.keys(operation.responses).filter((s) => s !== 'default')) {
        const response = operation.responses[status]!;
        const resolved = ('$ref' in response ? resolvePointer(openApiDocument, response.$ref) : response) as ResponseObject;
        for (const mediaType of Object.keys(resolved.content ?? {})) {
          const concretePath = path.replace(/\{[^}]+\}/g, 'x');
          assert.doesNotThrow(() => validator.validateResponse({ method, path: concretePath, status: Number(status), contentType: mediaType, body: {} }));
        }
      }
    }
  });

  it('compiles every component schema and checks request bodies with them', () => {
    const validator = createContractValidator();
    for (const name of Object.keys(openApiDocument.components.schemas)) {
      assert.doesNotThrow(() => validator.validateComponent(name, {}), name);
    }
    const create = { sku: 'A-1', title: 'Mug', price: '8.50', currency: 'EUR', attributes: { glaze: 'blue' } };
    assert.deepEqual(validator.validateComponent('ProductCreate', create), []);
    assert.match(validator.validateComponent('ProductCreate', { ...create, price: '8.5.0' }).join('\n'), /ProductCreate\/price must match pattern/);
    assert.match(validator.validateComponent('ProductUpdate', { status: 'deleted' }).join('\n'), /status must be equal to one of/);
    assert.deepEqual(validator.validateComponent('Nope', {}), ['Nope is not a schema of the document']);
  });

  it('has one problem type per error code with a fixed status', () => {
    assert.equal(problemTypes.idempotency_key_in_use.status, 409);
    assert.equal(problemTypes.idempotency_key_reused.status, 422);
    assert.equal(problemTypeUri('validation_failed'), 'https://merx.dev/errors/validation_failed');
  });
});

describe('validateResponse', () => {
  const validator = createContractValidator();

  it('accepts a created product, with a trailing slash and a query string', () => {
    const problems = validator.validateResponse({
      method: 'POST',
      path: '/api/v1/products/?expand=none',
      status: 201,
      contentType: 'application/json; charset=utf-8',
      body: JSON.stringify(aProduct()),
      headers: productHeaders,
    });
    assert.deepEqual(problems, []);
  });

  it('accepts a retrieved product by its concrete path', () => {
    const product = aProduct();
    const problems = validator.validateResponse({
      method: 'GET',
      path: `/api/v1/products/${product.id}`,
      status: 200,
      contentType: 'application/json',
      body: product,
    });
    assert.deepEqual(problems, []);
  });

  it('rejects a float price', () => {
    const problems = validator.validateResponse({
      method: 'GET',
      path: '/api/v1/products/prod_01jd3k7q8m2x4v6b9c0d1e2f3g',
      status: 200,
      contentType: 'application/json',
      body: { ...aProduct(), price: 19.99 },
    });
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0]!, /body\/price must be string/);
  });

  it('rejects a missing field and an extra one', () => {
    const { currency: _currency, ...withoutCurrency } = aProduct();
    const problems = validator.validateResponse({
      method: 'POST',
      path: '/api/v1/products',
      status: 201,
      contentType: 'application/json',
      body: { ...withoutCurrency, merchant_id: 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g' },
    });
    assert.ok(
      problems.some((problem) => /required property 'currency'/.test(problem)),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((problem) => /additional properties: merchant_id/.test(problem)),
      problems.join('\n'),
    );
  });

  it('rejects a status the operation does not document', () => {
    const problems = validator.validateResponse({
      method: 'POST',
      path: '/api/v1/products',
      status: 200,
      contentType: 'application/json',
      body: aProduct(),
    });
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /status 200 is not documented for products\.create/);
  });

  it('rejects a missing documented header when headers are given', () => {
    const problems = validator.validateResponse({
      method: 'POST',
      path: '/api/v1/products',
      status: 201,
      contentType: 'application/json',
      body: aProduct(),
      headers: { 'x-request-id': requestId },
    });
    assert.deepEqual(problems, ['POST /api/v1/products → 201 (products.create): header ETag is missing']);
  });

  it('checks problem bodies: content type, status per code, required extensions', () => {
    const send = (status: number, contentType: string, body: unknown) =>
      validator.validateResponse({ method: 'POST', path: '/api/v1/products', status, contentType, body });
    assert.deepEqual(send(409, 'application/problem+json', aProblem('idempotency_key_in_use')), []);
    const fieldErrors = [{ field: 'price', code: 'invalid_decimal', message: 'price must be a decimal string' }];
    assert.deepEqual(send(422, 'application/problem+json', aProblem('validation_failed', { errors: fieldErrors })), []);
    assert.match(send(422, 'application/problem+json', aProblem('validation_failed')).join('\n'), /required property 'errors'/);
    assert.match(send(422, 'application/json', aProblem('idempotency_key_reused')).join('\n'), /content type application\/json is not documented/);
    assert.match(send(409, 'application/problem+json', aProblem('not_found')).join('\n'), /code must be equal to one of the allowed values/);
    assert.match(send(500, 'application/problem+json', aProblem('internal', { stack: 'Error: at x' })).join('\n'), /additional properties: stack/);
    const mismatched = validator.validateResponse({
      method: 'GET',
      path: '/api/v1/products/prod_01jd3k7q8m2x4v6b9c0d1e2f3g',
      status: 404,
      contentType: 'application/problem+json',
      body: aProblem('not_found'),
      headers: { 'X-Request-Id': 'req_01jd3k7q8m2x4v6b9c0d1e2zzz' },
    });
    assert.match(mismatched.join('\n'), /request_id req_\w+ differs from the X-Request-Id header/);
  });

  it('treats unknown paths and methods as undocumented unless answered 404 and 405', () => {
    const notFound = aProblem('not_found');
    assert.match(
      validator.validateResponse({ method: 'GET', path: '/api/v1/nothing', status: 200, contentType: 'application/json', body: {} })[0]!,
      /path is not in the OpenAPI document/,
    );
    assert.deepEqual(
      validator.validateResponse({ method: 'GET', path: '/api/v1/nothing', status: 404, contentType: 'application/problem+json', body: notFound }),
      [],
    );
    const put = { method: 'PUT', path: '/api/v1/products', contentType: 'application/problem+json' };
    assert.match(validator.validateResponse({ ...put, status: 404, body: notFound })[0]!, /PUT is not documented for \/api\/v1\/products/);
    assert.deepEqual(validator.validateResponse({ ...put, status: 405, body: aProblem('method_not_allowed') }), []);
  });

  it('wants no body on 204', () => {
    const remove = { method: 'DELETE', path: '/api/v1/products/prod_01jd3k7q8m2x4v6b9c0d1e2f3g', status: 204 };
    assert.deepEqual(validator.validateResponse({ ...remove, body: '' }), []);
    assert.match(validator.validateResponse({ ...remove, body: { ok: true } })[0]!, /a body was sent/);
  });

  it('documents no metrics on the public API: they are on the admin port', () => {
    assert.equal(openApiDocument.paths['/metrics'], undefined);
    const metrics = { method: 'GET', path: '/metrics', status: 200, contentType: 'text/plain; version=0.0.4; charset=utf-8', body: '# HELP up 1\n' };
    assert.match(validator.validateResponse(metrics)[0]!, /path is not in the OpenAPI document/);
  });

  it('accepts the document itself at /api/v1/openapi.json', () => {
    const served = { method: 'GET', path: '/api/v1/openapi.json', status: 200, contentType: 'application/json' };
    assert.deepEqual(validator.validateResponse({ ...served, body: JSON.stringify(openApiDocument) }), []);
  });
});

describe('event catalogue and validateEvent', () => {
  const validator = createContractValidator();

  it('holds every event of the domain catalogue once, with its topic', () => {
    const names = eventCatalogue.map((event) => event.name);
    assert.deepEqual([...names].sort(), [...eventNames].sort());
    assert.equal(new Set(names).size, names.length);
    for (const name of ['orders.created', 'merchants.created', 'connections.deleted', 'webhooks.secret_rotated', 'sandbox.reset']) {
      assert.ok(names.includes(name), name);
    }
    for (const event of eventCatalogue) assert.equal(event.topic, topicOf(event.name));
    assert.equal(topicOf('webhooks.subscription_created'), 'webhooks');
  });

  it('accepts a good products.created', () => {
    assert.deepEqual(validator.validateEvent(anEvent()), []);
  });

  it('accepts products.updated with the changed fields before the change', () => {
    const event = anEvent({ topic: 'products.updated', data: { object: aProduct(), previous: { price: '9.99', version: 1 } } });
    assert.deepEqual(validator.validateEvent(event), []);
  });

  it('rejects an unknown event name', () => {
    const problems = validator.validateEvent(anEvent({ topic: 'products.exploded' }));
    assert.deepEqual(problems, ['event evt_01jd3k7q8m2x4v6b9c0d1e2f3g products.exploded: products.exploded is not an event of the catalogue']);
  });

  it('rejects a missing merchant_id', () => {
    const { merchant_id: _merchantId, ...event } = anEvent();
    const problems = validator.validateEvent(event);
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /required property 'merchant_id'/);
  });

  it('checks data.object and data.previous against the event', () => {
    const badObject = anEvent({ data: { object: { ...aProduct(), price: 1 } } });
    assert.match(validator.validateEvent(badObject).join('\n'), /data\.object\/price must be string/);
    const previousOnCreate = anEvent({ data: { object: aProduct(), previous: { price: '1.00' } } });
    assert.match(validator.validateEvent(previousOnCreate).join('\n'), /data\.previous is not part of products\.created/);
    const leakyPrevious = anEvent({ topic: 'products.updated', data: { object: aProduct(), previous: { secret: 'x' } } });
    assert.match(validator.validateEvent(leakyPrevious).join('\n'), /additional properties: secret/);
  });

  it('holds ingested records and internal messages to their schemas', () => {
    const order = {
      id: 'rec_01jd3k7q8m2x4v6b9c0d1e2f3g',
      object: 'record',
      type: 'order',
      source_id: 'src_01jd3k7q8m2x4v6b9c0d1e2f3g',
      external_id: 'ORD-1',
      occurred_at: '2026-11-22T10:00:00.000Z',
      data: { total: 120 },
      received_at: '2026-11-22T10:00:01.000Z',
    };
    assert.deepEqual(validator.validateEvent(anEvent({ topic: 'orders.created', data: { object: order } })), []);
    assert.match(
      validator.validateEvent(anEvent({ topic: 'orders.created', data: { object: { ...order, anything: true } } })).join('\n'),
      /additional properties/,
    );
    const removed = { id: 'dst_01jd3k7q8m2x4v6b9c0d1e2f3g', object: 'destination_endpoint', version: 2 };
    assert.deepEqual(validator.validateEvent(anEvent({ topic: 'internal.destination_removed', data: { object: removed } })), []);
    assert.match(
      validator.validateEvent(anEvent({ topic: 'internal.destination_removed', data: { object: { ...removed, version: 0 } } })).join('\n'),
      /version/,
    );
    assert.match(
      validator.validateEvent(anEvent({ topic: 'internal.nothing_like_it', data: { object: removed } })).join('\n'),
      /not an event of the catalogue/,
    );
    // A destination's secret crosses the bus sealed; plaintext only from messages queued before sealing.
    const synced = {
      id: 'dst_01jd3k7q8m2x4v6b9c0d1e2f3g',
      object: 'destination_endpoint',
      kind: 'webhook',
      url: 'https://erp.example.com/hook',
      status: 'active',
      version: 3,
    };
    assert.deepEqual(
      validator.validateEvent(anEvent({ topic: 'internal.destination_synced', data: { object: { ...synced, secret: 'sealed:v1:k1:AbC-_09xyz' } } })),
      [],
    );
    assert.deepEqual(validator.validateEvent(anEvent({ topic: 'internal.destination_synced', data: { object: { ...synced, secret: 'whsec_c2VjcmV0' } } })), []);
    assert.match(
      validator.validateEvent(anEvent({ topic: 'internal.destination_synced', data: { object: { ...synced, secret: 'sealed:v2:k1:AAAA' } } })).join('\n'),
      /secret/,
    );
  });
});

describe('operations()', () => {
  it('walks the document with scopes and the kind of credential', () => {
    const operations = createContractValidator().operations();
    const byId = new Map(operations.map((operation) => [operation.operationId, operation]));
    assert.deepEqual(byId.get('products.create'), {
      method: 'POST',
      pathTemplate: '/api/v1/products',
      operationId: 'products.create',
      scopes: ['products:write'],
      security: 'oauth2',
    });
    assert.equal(byId.get('products.delete')?.method, 'DELETE');
    assert.equal(byId.get('merchants.admin.create')?.security, 'operator');
    assert.equal(byId.get('openapi.retrieve')?.security, 'none');
    assert.equal(operations.length, everyOperation().length);
  });
});
