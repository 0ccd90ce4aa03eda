import assert from 'node:assert/strict';
import {
  createContractValidator,
  openApiDocument,
  problemTypes,
  problemTypeUri,
  resolvePointer,
  type OperationObject,
  type ParameterObject,
  type Reference,
} from './index.js';

const id = (prefix: string, tail = '01jd3k7q8m2x4v6b9c0d1e2f3g') => `${prefix}_${tail}`;
const at = '2026-11-22T10:04:05.123Z';
const later = '2026-11-22T10:05:06.456Z';
const requestId = id('req');
const sourceId = id('src');
const destinationId = id('dst');
const ruleId = id('rul');
const connectionId = id('con');
const recordId = id('rec');
const eventId = id('evt');
const resetId = id('rst');

const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

const aMerchant = (overrides: Record<string, unknown> = {}) => ({
  id: id('mch'),
  object: 'merchant',
  name: 'Acme Goods',
  mode: 'sandbox',
  plan: 'sandbox',
  default_currency: 'EUR',
  timezone: 'Europe/Berlin',
  status: 'active',
  version: 3,
  created_at: at,
  updated_at: later,
  ...overrides,
});

const aSource = (overrides: Record<string, unknown> = {}) => ({
  id: sourceId,
  object: 'source',
  name: 'Shopfront',
  kind: 'storefront',
  status: 'active',
  settings: { shop_domain: 'acme.example' },
  version: 1,
  created_at: at,
  updated_at: at,
  ...overrides,
});

const aDestination = (overrides: Record<string, unknown> = {}) => ({
  id: destinationId,
  object: 'destination',
  name: 'ERP import',
  kind: 'http',
  url: 'https://erp.example.com/import',
  status: 'active',
  disabled_reason: null,
  version: 1,
  created_at: at,
  updated_at: at,
  ...overrides,
});

const aTransform = (overrides: Record<string, unknown> = {}) => ({
  keep: ['total', 'currency', 'customer.email'],
  remove: ['customer.email'],
  rename: { total: 'amount' },
  set: { channel: 'web', 'meta.imported': true },
  ...overrides,
});

const aRule = (overrides: Record<string, unknown> = {}) => ({
  id: ruleId,
  object: 'rule',
  name: 'Big EUR orders',
  event_types: ['orders.created'],
  condition: 'data.total >= 100.0 && data.currency == "EUR"',
  action: 'forward',
  transform: null,
  enabled: true,
  version: 1,
  created_at: at,
  updated_at: at,
  ...overrides,
});

const aConnection = (overrides: Record<string, unknown> = {}) => ({
  id: connectionId,
  object: 'connection',
  name: null,
  source_id: sourceId,
  destination_id: destinationId,
  rule_ids: [ruleId],
  event_types: ['orders.created', 'reviews.submitted'],
  status: 'active',
  version: 1,
  created_at: at,
  updated_at: at,
  ...overrides,
});

const anIngestedRecord = (overrides: Record<string, unknown> = {}) => ({
  id: recordId,
  object: 'record',
  type: 'order',
  source_id: sourceId,
  external_id: 'ORD-1001',
  occurred_at: at,
  data: { total: 120.5, currency: 'EUR' },
  received_at: later,
  ...overrides,
});

const aRoute = (overrides: Record<string, unknown> = {}) => ({
  connection_id: connectionId,
  destination_id: destinationId,
  outcome: 'routed',
  rule_id: ruleId,
  reason: null,
  routed_at: later,
  ...overrides,
});

const aRecord = (overrides: Record<string, unknown> = {}) => ({ ...anIngestedRecord(), event_id: eventId, routes: [aRoute()], ...overrides });

const aResult = (index: number, overrides: Record<string, unknown> = {}) => ({
  index,
  status: 'accepted',
  type: 'order',
  external_id: `ORD-${1001 + index}`,
  record_id: recordId,
  event_id: eventId,
  errors: [],
  ...overrides,
});

const aBatchResult = (results: unknown[] = [aResult(0)], overrides: Record<string, unknown> = {}) => ({
  object: 'record_batch',
  source_id: sourceId,
  accepted: 1,
  duplicates: 0,
  rejected: 0,
  results,
  ...overrides,
});

const aServicePart = (service: string, overrides: Record<string, unknown> = {}) => ({
  service,
  status: 'pending',
  removed: {},
  seeded: {},
  completed_at: null,
  ...overrides,
});

const aReset = (overrides: Record<string, unknown> = {}) => ({
  id: resetId,
  object: 'sandbox_reset',
  status: 'running',
  seed: true,
  services: ['catalog', 'merchants', 'webhooks'].map((service) => aServicePart(service)),
  requested_at: at,
  completed_at: null,
  ...overrides,
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

const envelope = (topic: string, data: Record<string, unknown>) => ({
  id: eventId,
  topic,
  merchant_id: id('mch'),
  created_at: at,
  api_version: 'v1',
  data,
  context: { request_id: requestId, actor: { type: 'api_key', id: id('key') } },
});

const json = { contentType: 'application/json' };
const problem = { contentType: 'application/problem+json' };
const list = (data: unknown[]) => ({ object: 'list', data, has_more: false, next_cursor: null });
const etagHeaders = { 'X-Request-Id': requestId, ETag: '"v1"' };

type Method = 'get' | 'post' | 'patch' | 'delete';
// Every bearer operation may answer 422: a query parameter it does not declare is refused.
// And 400: a path not in canonical form is refused at the edge, whatever the operation.
const base = ['400', '401', '403', '422', '429', '500', '503'];
const withBase = (...codes: string[]) => [...new Set([...codes, ...base])].sort();
const statuses = (path: string, method: Method) => Object.keys(openApiDocument.paths[path]![method]!.responses);
const parameterNames = (path: string, method: Method) => {
  const operation: OperationObject = openApiDocument.paths[path]![method]!;
  return (operation.parameters ?? []).map((parameter) =>
    '$ref' in parameter ? (resolvePointer(openApiDocument, (parameter as Reference).$ref) as ParameterObject).name : parameter.name,
  );
};
const queryParameter = (path: string, method: Method, name: string) => {
  const operation: OperationObject = openApiDocument.paths[path]![method]!;
  return (operation.parameters ?? [])
    .map((parameter) => ('$ref' in parameter ? (resolvePointer(openApiDocument, (parameter as Reference).$ref) as ParameterObject) : parameter))
    .find((parameter) => parameter.name === name && parameter.in === 'query');
};

const configResources = ['sources', 'destinations', 'rules', 'connections'] as const;

describe('merchants contract: the document', () => {
  const operations = createContractValidator().operations();
  const byId = new Map(operations.map((operation) => [operation.operationId, operation]));

  it('documents every merchants-service operation with its method, path and scope', () => {
    const expected: Array<[string, string, string, string]> = [
      ['merchant.retrieve', 'GET', '/api/v1/merchant', 'merchant:read'],
      ['merchant.update', 'PATCH', '/api/v1/merchant', 'merchant:write'],
      ...configResources.flatMap((collection): Array<[string, string, string, string]> => [
        [`${collection}.create`, 'POST', `/api/v1/${collection}`, 'config:write'],
        [`${collection}.list`, 'GET', `/api/v1/${collection}`, 'config:read'],
        [`${collection}.retrieve`, 'GET', `/api/v1/${collection}/{id}`, 'config:read'],
        [`${collection}.update`, 'PATCH', `/api/v1/${collection}/{id}`, 'config:write'],
        [`${collection}.delete`, 'DELETE', `/api/v1/${collection}/{id}`, 'config:write'],
      ]),
      ['destinations.rotate_secret', 'POST', '/api/v1/destinations/{id}/rotate-secret', 'config:write'],
      ['sources.records.create', 'POST', '/api/v1/sources/{id}/records', 'config:write'],
      ['sources.records.list', 'GET', '/api/v1/sources/{id}/records', 'config:read'],
      ['sandbox.reset', 'POST', '/api/v1/sandbox/reset', 'sandbox:reset'],
      ['sandbox.resets.retrieve', 'GET', '/api/v1/sandbox/resets/{id}', 'merchant:read'],
    ];
    for (const [operationId, method, pathTemplate, scope] of expected) {
      assert.deepEqual(byId.get(operationId), { method, pathTemplate, operationId, scopes: [scope], security: 'oauth2' }, operationId);
      const operation = openApiDocument.paths[pathTemplate]![method.toLowerCase() as Method]!;
      assert.match(operation.description, new RegExp(`Requires the scope \`${scope}\``), operationId);
    }
    const documented = operations.filter((operation) => /^\/api\/v1\/(merchant|sources|destinations|rules|connections|sandbox)\b/.test(operation.pathTemplate));
    assert.equal(documented.length, expected.length, documented.map((operation) => operation.operationId).join(', '));
  });

  it("answers the merchant's operations with the statuses they can give", () => {
    assert.deepEqual(statuses('/api/v1/merchant', 'get'), withBase('200'));
    assert.deepEqual(statuses('/api/v1/merchant', 'patch'), withBase('200', '400', '412', '413', '415'));
  });

  it('answers each configuration operation with the statuses it can give', () => {
    for (const collection of configResources) {
      const path = `/api/v1/${collection}`;
      assert.deepEqual(statuses(path, 'post'), withBase('201', '400', '409', '413', '415'), `${collection}.create`);
      assert.deepEqual(statuses(path, 'get'), withBase('200', '400'), `${collection}.list`);
      assert.deepEqual(statuses(`${path}/{id}`, 'get'), withBase('200', '404'), `${collection}.retrieve`);
      assert.deepEqual(statuses(`${path}/{id}`, 'patch'), withBase('200', '400', '404', '412', '413', '415'), `${collection}.update`);
      // Connections use sources, destinations and rules; nothing uses a connection.
      const deleteStatuses = collection === 'connections' ? ['204', '404', '412'] : ['204', '404', '409', '412'];
      assert.deepEqual(statuses(`${path}/{id}`, 'delete'), withBase(...deleteStatuses), `${collection}.delete`);
    }
  });

  it('answers records and sandbox operations with the statuses they can give', () => {
    assert.deepEqual(statuses('/api/v1/sources/{id}/records', 'post'), withBase('200', '400', '404', '409', '413', '415'));
    assert.deepEqual(statuses('/api/v1/sources/{id}/records', 'get'), withBase('200', '400', '404'));
    assert.deepEqual(statuses('/api/v1/sandbox/reset', 'post'), withBase('202', '400', '409', '413', '415'));
    assert.deepEqual(statuses('/api/v1/sandbox/resets/{id}', 'get'), withBase('200', '404'));
  });

  it('takes the documented filters on every list', () => {
    assert.deepEqual(parameterNames('/api/v1/sources', 'get'), ['limit', 'cursor', 'status', 'kind']);
    assert.deepEqual(parameterNames('/api/v1/destinations', 'get'), ['limit', 'cursor', 'status', 'kind']);
    assert.deepEqual(parameterNames('/api/v1/rules', 'get'), ['limit', 'cursor', 'action', 'enabled', 'event_type']);
    assert.deepEqual(parameterNames('/api/v1/connections', 'get'), ['limit', 'cursor', 'source_id', 'destination_id', 'status']);
    assert.deepEqual(parameterNames('/api/v1/sources/{id}/records', 'get'), ['limit', 'cursor', 'type', 'external_id', 'since', 'until']);
    assert.deepEqual(queryParameter('/api/v1/rules', 'get', 'enabled')?.schema, { type: 'string', enum: ['true', 'false'] });
    assert.deepEqual(queryParameter('/api/v1/rules', 'get', 'event_type')?.schema.enum, [
      'orders.created',
      'reviews.submitted',
      'campaign_spend.updated',
      'system_alerts.raised',
    ]);
    assert.equal(queryParameter('/api/v1/connections', 'get', 'destination_id')?.schema.pattern, '^dst_[0-9a-z]{26}$');
    assert.deepEqual(queryParameter('/api/v1/sources', 'get', 'status')?.schema.enum, ['active', 'paused', 'disabled']);
  });

  it('takes Idempotency-Key on every POST and If-Match on every PATCH and DELETE', () => {
    assert.deepEqual(parameterNames('/api/v1/merchant', 'patch'), ['If-Match']);
    for (const collection of configResources) {
      assert.deepEqual(parameterNames(`/api/v1/${collection}`, 'post'), ['Idempotency-Key'], collection);
      assert.deepEqual(parameterNames(`/api/v1/${collection}/{id}`, 'patch'), ['If-Match'], collection);
      assert.deepEqual(parameterNames(`/api/v1/${collection}/{id}`, 'delete'), ['If-Match'], collection);
    }
    assert.deepEqual(parameterNames('/api/v1/sources/{id}/records', 'post'), ['Idempotency-Key']);
    assert.deepEqual(parameterNames('/api/v1/sandbox/reset', 'post'), ['Idempotency-Key']);
  });

  it("names the request body component of every write, the reset's body optional", () => {
    const body = (path: string, method: Method) => {
      const requestBody = openApiDocument.paths[path]![method]!.requestBody;
      return { required: requestBody?.required, schema: requestBody?.content['application/json']?.schema };
    };
    const named = (name: string, required = true) => ({ required, schema: { $ref: `#/components/schemas/${name}` } });
    assert.deepEqual(body('/api/v1/merchant', 'patch'), named('MerchantUpdate'));
    for (const [collection, schema] of [
      ['sources', 'Source'],
      ['destinations', 'Destination'],
      ['rules', 'Rule'],
      ['connections', 'Connection'],
    ] as const) {
      assert.deepEqual(body(`/api/v1/${collection}`, 'post'), named(`${schema}Create`), collection);
      assert.deepEqual(body(`/api/v1/${collection}/{id}`, 'patch'), named(`${schema}Update`), collection);
    }
    assert.deepEqual(body('/api/v1/sources/{id}/records', 'post'), named('RecordBatchRequest'));
    assert.deepEqual(body('/api/v1/sandbox/reset', 'post'), named('SandboxResetRequest', false));
  });

  it('registers every wire schema of the merchants service as a component', () => {
    const names = [
      'Merchant',
      'MerchantUpdate',
      'Source',
      'SourceCreate',
      'SourceUpdate',
      'SourceList',
      'Destination',
      'DestinationWithSecret',
      'DestinationCreate',
      'DestinationUpdate',
      'DestinationList',
      'Rule',
      'RuleCreate',
      'RuleUpdate',
      'RuleTransform',
      'RuleList',
      'Connection',
      'ConnectionCreate',
      'ConnectionUpdate',
      'ConnectionList',
      'Record',
      'RecordRoute',
      'RecordList',
      'IngestedRecord',
      'RecordInput',
      'OrderRecordInput',
      'ReviewRecordInput',
      'CampaignSpendRecordInput',
      'AlertRecordInput',
      'RecordBatchRequest',
      'RecordBatchResult',
      'RecordResult',
      'SandboxReset',
      'SandboxResetRequest',
    ];
    for (const name of names) assert.ok(openApiDocument.components.schemas[name], name);
  });

  it('declares the new tags, with the rule and destination semantics spelled out', () => {
    const tags = new Map(openApiDocument.tags.map((tag) => [tag.name, tag.description]));
    for (const name of ['merchant', 'sources', 'destinations', 'rules', 'connections', 'sandbox']) assert.ok(tags.get(name), name);
    for (const words of [/CEL/, /forward/, /drop/, /transform/, /in order/, /filtered/]) assert.match(tags.get('rules')!, words);
    for (const words of [/same engine as webhook/, /\/api\/v1\/webhooks\/deliveries\?destination_id=/]) assert.match(tags.get('destinations')!, words);
    assert.match(openApiDocument.paths['/api/v1/sandbox/reset']!.post!.description, /`sensitive` throttle class/);
  });

  it('lets webhook deliveries and dead letters be filtered by destination', () => {
    for (const path of ['/api/v1/webhooks/deliveries', '/api/v1/webhooks/dead-letters']) {
      assert.equal(queryParameter(path, 'get', 'destination_id')?.schema.pattern, '^dst_[0-9a-z]{26}$', path);
    }
  });
});

describe('merchants contract: responses', () => {
  const validator = createContractValidator();

  it('answers the merchant with its ETag, and refuses one without', () => {
    const retrieved = { method: 'GET', path: '/api/v1/merchant', status: 200, ...json, headers: etagHeaders };
    assert.deepEqual(validator.validateResponse({ ...retrieved, body: aMerchant() }), []);
    assert.deepEqual(validator.validateResponse({ ...retrieved, method: 'PATCH', body: aMerchant({ name: 'Acme', version: 4 }) }), []);
    assert.match(validator.validateResponse({ ...retrieved, headers: { 'X-Request-Id': requestId }, body: aMerchant() }).join('\n'), /header ETag is missing/);
    const readOnly = aProblem('validation_failed', { errors: [{ field: 'plan', code: 'read_only', message: 'plan is set by the operator' }] });
    assert.deepEqual(validator.validateResponse({ method: 'PATCH', path: '/api/v1/merchant', status: 422, ...problem, body: readOnly }), []);
    assert.deepEqual(
      validator.validateResponse({ method: 'PATCH', path: '/api/v1/merchant', status: 412, ...problem, body: aProblem('precondition_failed') }),
      [],
    );
  });

  it('accepts a created destination with its secret, ETag and Location', () => {
    const created = {
      method: 'POST',
      path: '/api/v1/destinations',
      status: 201,
      ...json,
      headers: { ...etagHeaders, Location: `/api/v1/destinations/${destinationId}` },
    };
    assert.deepEqual(validator.validateResponse({ ...created, body: aDestination({ secret }) }), []);
    assert.match(validator.validateResponse({ ...created, body: aDestination() }).join('\n'), /required property 'secret'/);
    assert.match(validator.validateResponse({ ...created, body: aDestination({ secret }), headers: etagHeaders }).join('\n'), /header Location is missing/);
  });

  it("never shows a destination's secret outside its creation", () => {
    const path = `/api/v1/destinations/${destinationId}`;
    const check = (method: string, where: string, body: unknown) => validator.validateResponse({ method, path: where, status: 200, ...json, body }).join('\n');
    assert.equal(check('GET', path, aDestination()), '');
    assert.equal(check('PATCH', path, aDestination({ status: 'disabled', disabled_reason: 'endpoint_gone' })), '');
    assert.match(check('GET', path, aDestination({ secret })), /additional properties: secret/);
    assert.match(check('PATCH', path, aDestination({ secret })), /additional properties: secret/);
    assert.match(
      check('GET', '/api/v1/destinations?status=active', list([aDestination({ secret })])),
      /body\/data\/0 must NOT have additional properties: secret/,
    );
    assert.match(validator.validateEvent(envelope('destinations.created', { object: aDestination({ secret }) })).join('\n'), /additional properties: secret/);
  });

  it('accepts sources, rules and connections on create, retrieve, list and update', () => {
    const cases: Array<[string, string, unknown]> = [
      ['sources', sourceId, aSource()],
      ['rules', ruleId, aRule({ action: 'transform', transform: aTransform() })],
      ['connections', connectionId, aConnection({ name: 'Orders to ERP' })],
    ];
    for (const [collection, resourceId, resource] of cases) {
      const headers = { ...etagHeaders, Location: `/api/v1/${collection}/${resourceId}` };
      assert.deepEqual(
        validator.validateResponse({ method: 'POST', path: `/api/v1/${collection}`, status: 201, ...json, headers, body: resource }),
        [],
        collection,
      );
      assert.deepEqual(
        validator.validateResponse({ method: 'GET', path: `/api/v1/${collection}/${resourceId}`, status: 200, ...json, headers: etagHeaders, body: resource }),
        [],
        collection,
      );
      assert.deepEqual(
        validator.validateResponse({
          method: 'PATCH',
          path: `/api/v1/${collection}/${resourceId}`,
          status: 200,
          ...json,
          headers: etagHeaders,
          body: resource,
        }),
        [],
        collection,
      );
      assert.deepEqual(
        validator.validateResponse({ method: 'GET', path: `/api/v1/${collection}?limit=5`, status: 200, ...json, body: list([resource]) }),
        [],
        collection,
      );
      assert.deepEqual(validator.validateResponse({ method: 'DELETE', path: `/api/v1/${collection}/${resourceId}`, status: 204, body: '' }), [], collection);
    }
  });

  it("rejects a connection with too many rules, repeated rules or another resource's id", () => {
    const path = `/api/v1/connections/${connectionId}`;
    const check = (body: unknown) => validator.validateResponse({ method: 'GET', path, status: 200, ...json, body }).join('\n');
    const ruleIds = Array.from({ length: 21 }, (_, index) => id('rul', `01jd3k7q8m2x4v6b9c0d1e2f${String(index).padStart(2, '0')}`));
    assert.equal(check(aConnection({ rule_ids: ruleIds.slice(0, 20) })), '');
    assert.match(check(aConnection({ rule_ids: ruleIds })), /rule_ids must NOT have more than 20 items/);
    assert.match(check(aConnection({ rule_ids: [ruleId, ruleId] })), /rule_ids must NOT have duplicate items/);
    assert.match(check(aConnection({ destination_id: sourceId })), /destination_id must match pattern/);
    assert.match(check(aConnection({ status: 'disabled' })), /status must be equal to one of the allowed values/);
  });

  it('rejects a rule with an unknown transform operation, action or event type', () => {
    const path = `/api/v1/rules/${ruleId}`;
    const check = (body: unknown) => validator.validateResponse({ method: 'GET', path, status: 200, ...json, body }).join('\n');
    assert.match(
      check(aRule({ action: 'transform', transform: { ...aTransform(), uppercase: ['name'] } })),
      /transform must NOT have additional properties: uppercase/,
    );
    assert.match(check(aRule({ action: 'transform', transform: {} })), /transform must NOT have fewer than 1 properties/);
    assert.match(check(aRule({ action: 'route' })), /action must be equal to one of the allowed values/);
    assert.match(check(aRule({ event_types: ['products.created'] })), /event_types\/0 must be equal to one of the allowed values/);
  });

  it('answers a record batch per record, and refuses a result status outside the contract', () => {
    const ingest = { method: 'POST', path: `/api/v1/sources/${sourceId}/records`, status: 200, ...json, headers: { 'X-Request-Id': requestId } };
    const results = [
      aResult(0),
      aResult(1, { status: 'duplicate' }),
      aResult(2, {
        status: 'rejected',
        type: null,
        external_id: null,
        record_id: null,
        event_id: null,
        errors: [{ field: 'type', code: 'required', message: 'type is required' }],
      }),
    ];
    assert.deepEqual(validator.validateResponse({ ...ingest, body: aBatchResult(results, { accepted: 1, duplicates: 1, rejected: 1 }) }), []);
    assert.match(
      validator.validateResponse({ ...ingest, body: aBatchResult([aResult(0, { status: 'queued' })]) }).join('\n'),
      /results\/0\/status must be equal to one of the allowed values/,
    );
    assert.match(
      validator.validateResponse({ ...ingest, body: aBatchResult([aResult(0, { record_id: eventId })]) }).join('\n'),
      /results\/0\/record_id must match pattern/,
    );
    assert.match(
      validator.validateResponse({ ...ingest, status: 201, body: aBatchResult() }).join('\n'),
      /status 201 is not documented for sources\.records\.create/,
    );
  });

  it('answers refused record batches with problems', () => {
    const refused = (status: number, body: unknown) =>
      validator.validateResponse({ method: 'POST', path: `/api/v1/sources/${sourceId}/records`, status, ...problem, body });
    assert.deepEqual(refused(409, aProblem('conflict', { detail: 'The source is paused.' })), []);
    assert.deepEqual(refused(409, aProblem('idempotency_key_in_use')), []);
    assert.deepEqual(refused(404, aProblem('not_found')), []);
    assert.deepEqual(refused(413, aProblem('payload_too_large')), []);
    assert.deepEqual(refused(415, aProblem('unsupported_media_type')), []);
    assert.deepEqual(refused(422, aProblem('validation_failed', { errors: [{ field: 'records', code: 'too_many', message: 'at most 500 records' }] })), []);
    assert.deepEqual(refused(422, aProblem('idempotency_key_reused')), []);
  });

  it("lists a source's records with their event and routes", () => {
    const listed = { method: 'GET', path: `/api/v1/sources/${sourceId}/records?type=order&since=${at}`, status: 200, ...json };
    const records = [
      aRecord(),
      aRecord({ routes: [] }),
      aRecord({ routes: [aRoute({ outcome: 'filtered', rule_id: null, reason: 'no forward rule matched' })] }),
    ];
    assert.deepEqual(validator.validateResponse({ ...listed, body: list(records) }), []);
    assert.match(
      validator.validateResponse({ ...listed, body: list([aRecord({ routes: [aRoute({ outcome: 'sent' })] })]) }).join('\n'),
      /routes\/0\/outcome must be equal to one of the allowed values/,
    );
    assert.match(validator.validateResponse({ ...listed, body: list([anIngestedRecord()]) }).join('\n'), /required property 'event_id'/);
    assert.deepEqual(validator.validateResponse({ ...listed, status: 404, ...problem, body: aProblem('not_found') }), []);
  });

  it('answers a delete of a used source, destination or rule with 409 conflict', () => {
    for (const [collection, resourceId] of [
      ['sources', sourceId],
      ['destinations', destinationId],
      ['rules', ruleId],
    ] as const) {
      const used = { method: 'DELETE', path: `/api/v1/${collection}/${resourceId}`, status: 409, ...problem };
      assert.deepEqual(
        validator.validateResponse({ ...used, body: aProblem('conflict', { detail: `The ${collection.slice(0, -1)} is used by ${connectionId}.` }) }),
        [],
        collection,
      );
      assert.match(
        validator.validateResponse({ ...used, body: aProblem('idempotency_key_in_use') }).join('\n'),
        /code must be equal to one of the allowed values/,
        collection,
      );
    }
    const connection = { method: 'DELETE', path: `/api/v1/connections/${connectionId}`, status: 409, ...problem, body: aProblem('conflict') };
    assert.match(validator.validateResponse(connection).join('\n'), /status 409 is not documented for connections\.delete/);
  });

  it("answers a connection naming another merchant's source with a 422", () => {
    const unknown = aProblem('validation_failed', { errors: [{ field: 'source_id', code: 'not_found', message: 'no such source' }] });
    assert.deepEqual(validator.validateResponse({ method: 'POST', path: '/api/v1/connections', status: 422, ...problem, body: unknown }), []);
    assert.deepEqual(validator.validateResponse({ method: 'PATCH', path: `/api/v1/connections/${connectionId}`, status: 422, ...problem, body: unknown }), []);
  });

  it('answers a sandbox reset with 202 and its Location, and refuses an unknown service', () => {
    const reset = {
      method: 'POST',
      path: '/api/v1/sandbox/reset',
      status: 202,
      ...json,
      headers: { 'X-Request-Id': requestId, Location: `/api/v1/sandbox/resets/${resetId}` },
    };
    assert.deepEqual(validator.validateResponse({ ...reset, body: aReset() }), []);
    assert.match(validator.validateResponse({ ...reset, headers: { 'X-Request-Id': requestId }, body: aReset() }).join('\n'), /header Location is missing/);
    const unknownService = aReset({ services: [aServicePart('catalog'), aServicePart('billing')] });
    assert.match(validator.validateResponse({ ...reset, body: unknownService }).join('\n'), /services\/1\/service must be equal to one of the allowed values/);
    assert.deepEqual(
      validator.validateResponse({
        ...reset,
        status: 409,
        ...problem,
        headers: undefined,
        body: aProblem('conflict', { detail: 'Only sandbox merchants can be reset.' }),
      }),
      [],
    );
    const completed = aReset({
      status: 'completed',
      completed_at: later,
      services: ['catalog', 'merchants', 'webhooks'].map((service) =>
        aServicePart(service, { status: 'completed', removed: { things: 2 }, seeded: { things: 1 }, completed_at: later }),
      ),
    });
    const retrieved = { method: 'GET', path: `/api/v1/sandbox/resets/${resetId}`, status: 200, ...json };
    assert.deepEqual(validator.validateResponse({ ...retrieved, body: completed }), []);
    assert.match(
      validator.validateResponse({ ...retrieved, body: aReset({ status: 'failed' }) }).join('\n'),
      /body\/status must be equal to one of the allowed values/,
    );
    assert.match(
      validator.validateResponse({ ...retrieved, body: aReset({ services: [aServicePart('catalog', { removed: { products: -1 } })] }) }).join('\n'),
      /removed\/products must be >= 0/,
    );
  });
});

describe('merchants contract: request bodies and components', () => {
  const validator = createContractValidator();
  const errorsOf = (name: string, value: unknown) => validator.validateComponent(name, value).join('\n');

  it('checks a merchant patch body: settings only, at least one', () => {
    assert.equal(errorsOf('MerchantUpdate', { name: 'Acme', default_currency: 'JPY', timezone: 'Asia/Tokyo' }), '');
    assert.match(errorsOf('MerchantUpdate', {}), /must NOT have fewer than 1 properties/);
    for (const field of ['mode', 'plan', 'status'])
      assert.match(errorsOf('MerchantUpdate', { [field]: 'live' }), new RegExp(`additional properties: ${field}`));
    assert.match(errorsOf('MerchantUpdate', { default_currency: 'eur' }), /default_currency must match pattern/);
  });

  it('checks source bodies', () => {
    assert.equal(errorsOf('SourceCreate', { name: 'POS', kind: 'pos' }), '');
    assert.equal(errorsOf('SourceCreate', { name: 'Ads', kind: 'ads', status: 'paused', settings: { account: '42' } }), '');
    assert.match(errorsOf('SourceCreate', { name: 'POS' }), /required property 'kind'/);
    assert.match(errorsOf('SourceCreate', { name: 'POS', kind: 'fax' }), /kind must be equal to one of the allowed values/);
    assert.equal(errorsOf('SourceUpdate', { status: 'disabled' }), '');
    assert.match(errorsOf('SourceUpdate', { id: sourceId }), /additional properties: id/);
  });

  it('checks destination bodies: no secret, no disabled on create', () => {
    assert.equal(errorsOf('DestinationCreate', { name: 'ERP', url: 'https://erp.example.com/import' }), '');
    assert.equal(errorsOf('DestinationCreate', { name: 'ERP', url: 'https://erp.example.com/import', kind: 'http', status: 'paused' }), '');
    assert.match(
      errorsOf('DestinationCreate', { name: 'ERP', url: 'https://erp.example.com/import', status: 'disabled' }),
      /status must be equal to one of the allowed values/,
    );
    assert.match(errorsOf('DestinationCreate', { name: 'ERP', url: 'ftp://erp.example.com' }), /url must match pattern/);
    assert.match(errorsOf('DestinationCreate', { name: 'ERP', url: 'https://erp.example.com/import', secret }), /additional properties: secret/);
    assert.equal(errorsOf('DestinationUpdate', { status: 'active' }), '');
    assert.match(errorsOf('DestinationUpdate', { secret }), /additional properties: secret/);
  });

  it('checks rule bodies and the transform mapping', () => {
    assert.equal(errorsOf('RuleCreate', { name: 'All', action: 'forward' }), '');
    const transform = { name: 'Strip PII', action: 'transform', condition: 'type == "order"', event_types: ['orders.created'], transform: aTransform() };
    assert.equal(errorsOf('RuleCreate', transform), '');
    assert.match(errorsOf('RuleCreate', { ...transform, transform: { lowercase: ['email'] } }), /transform must NOT have additional properties: lowercase/);
    assert.match(errorsOf('RuleCreate', { ...transform, transform: { keep: ['a..b'] } }), /transform\/keep\/0 must match pattern/);
    assert.match(errorsOf('RuleCreate', { ...transform, condition: 'x'.repeat(4097) }), /condition must NOT have more than 4096 characters/);
    assert.match(errorsOf('RuleCreate', { name: 'No action' }), /required property 'action'/);
    assert.equal(errorsOf('RuleUpdate', { enabled: false, transform: null }), '');
    assert.equal(errorsOf('RuleTransform', aTransform()), '');
    assert.match(errorsOf('RuleTransform', { replace: { a: 'b' } }), /additional properties: replace/);
  });

  it('checks connection bodies', () => {
    assert.equal(errorsOf('ConnectionCreate', { source_id: sourceId, destination_id: destinationId }), '');
    assert.equal(
      errorsOf('ConnectionCreate', {
        name: 'Orders',
        source_id: sourceId,
        destination_id: destinationId,
        rule_ids: [ruleId],
        event_types: ['orders.created'],
        status: 'paused',
      }),
      '',
    );
    assert.match(errorsOf('ConnectionCreate', { source_id: sourceId }), /required property 'destination_id'/);
    const tooMany = Array.from({ length: 21 }, (_, index) => id('rul', `01jd3k7q8m2x4v6b9c0d1e2f${String(index).padStart(2, '0')}`));
    assert.match(
      errorsOf('ConnectionCreate', { source_id: sourceId, destination_id: destinationId, rule_ids: tooMany }),
      /rule_ids must NOT have more than 20 items/,
    );
    assert.equal(errorsOf('ConnectionUpdate', { rule_ids: [] }), '');
    assert.match(errorsOf('ConnectionUpdate', { source_id: sourceId }), /additional properties: source_id/);
  });

  it('checks a record batch as a whole, and each record by its type', () => {
    const record = { type: 'order', external_id: 'ORD-1', occurred_at: at, data: { total: 120 } };
    assert.equal(errorsOf('RecordBatchRequest', { records: [record] }), '');
    assert.match(errorsOf('RecordBatchRequest', { records: [{}] }), /records\/0 must match exactly one schema in oneOf/);
    assert.match(errorsOf('RecordBatchRequest', {}), /required property 'records'/);
    assert.match(errorsOf('RecordBatchRequest', { records: [] }), /records must NOT have fewer than 1 items/);
    assert.match(errorsOf('RecordBatchRequest', { records: Array.from({ length: 501 }, () => record) }), /records must NOT have more than 500 items/);
    assert.match(errorsOf('RecordBatchRequest', { records: {} }), /records must be array/);
    assert.match(errorsOf('RecordBatchRequest', [record]), /must be object/);
    assert.equal(errorsOf('RecordInput', record), '');
    assert.equal(
      errorsOf('RecordInput', { ...record, occurred_at: '2026-11-22T11:00:00.123456+01:00', data: { total: 1.5, currency: 'EUR', own_field: [1] } }),
      '',
    );
    assert.match(errorsOf('RecordInput', { ...record, type: 'refund' }), /must match exactly one schema in oneOf/);
    assert.match(errorsOf('RecordInput', { ...record, occurred_at: '2026-11-22' }), /occurred_at must match/);
    assert.match(errorsOf('RecordInput', { ...record, data: { total: '120.00' } }), /data\/total must be number/);
    assert.match(errorsOf('OrderRecordInput', { ...record, external_id: '  ' }), /external_id must match pattern/);
    const alert = { type: 'alert', external_id: 'AL-1', occurred_at: at, data: { message: 'Feed is late', severity: 'critical' } };
    assert.equal(errorsOf('AlertRecordInput', alert), '');
    assert.match(errorsOf('AlertRecordInput', { ...alert, data: { severity: 'critical' } }), /required property 'message'/);
    assert.match(errorsOf('AlertRecordInput', { ...alert, data: { message: 'x', severity: 'info' } }), /severity must be equal to one of the allowed values/);
    assert.match(errorsOf('CampaignSpendRecordInput', { ...alert, type: 'campaign_spend', data: { spend: 12.3 } }), /spend must be string/);
  });

  it('checks a sandbox reset request: optional seed only', () => {
    assert.equal(errorsOf('SandboxResetRequest', {}), '');
    assert.equal(errorsOf('SandboxResetRequest', { seed: true }), '');
    assert.match(errorsOf('SandboxResetRequest', { seed: 'yes' }), /seed must be boolean/);
    assert.match(errorsOf('SandboxResetRequest', { services: ['catalog'] }), /additional properties: services/);
  });

  it('lets a bulk dead-letter replay be limited to one destination', () => {
    assert.equal(errorsOf('DeadLetterReplayRequest', { destination_id: destinationId, topic: 'orders' }), '');
    assert.match(errorsOf('DeadLetterReplayRequest', { destination_id: id('wh') }), /destination_id must match pattern/);
  });

  it('checks the remaining components directly', () => {
    assert.equal(errorsOf('Source', aSource()), '');
    assert.equal(errorsOf('Destination', aDestination()), '');
    assert.equal(errorsOf('DestinationWithSecret', aDestination({ secret })), '');
    assert.equal(errorsOf('Rule', aRule()), '');
    assert.equal(errorsOf('Connection', aConnection()), '');
    assert.equal(errorsOf('IngestedRecord', anIngestedRecord()), '');
    assert.equal(errorsOf('Record', aRecord()), '');
    assert.equal(errorsOf('RecordRoute', aRoute({ outcome: 'dropped', reason: 'rule matched' })), '');
    assert.equal(errorsOf('RecordResult', aResult(0)), '');
    assert.equal(errorsOf('RecordBatchResult', aBatchResult()), '');
    assert.equal(errorsOf('SandboxReset', aReset()), '');
    assert.equal(errorsOf('SourceList', list([aSource()])), '');
    assert.equal(errorsOf('RecordList', list([aRecord()])), '');
  });
});
