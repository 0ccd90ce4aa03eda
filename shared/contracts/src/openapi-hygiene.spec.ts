import assert from 'node:assert/strict';
import {
  createContractValidator,
  eventCatalogue,
  eventComponentName,
  openApiDocument,
  resolveReference,
  type JsonSchema,
  type OperationObject,
  type ParameterObject,
  type PathItem,
  type ResponseObject,
} from './index.js';

const methods = ['get', 'post', 'put', 'patch', 'delete'] as const;

function operationsOf(items: Record<string, PathItem>): Array<{ where: string; item: PathItem; operation: OperationObject }> {
  return Object.entries(items).flatMap(([where, item]) =>
    methods.flatMap((method) => (item[method] ? [{ where: `${method.toUpperCase()} ${where}`, item, operation: item[method] }] : [])),
  );
}

/** Every `#/components/<kind>/<name>` the document mentions outside that component's own definition. */
function referencedComponents(): Set<string> {
  const found = new Set<string>();
  const walk = (node: unknown, owner?: string): void => {
    if (Array.isArray(node)) node.forEach((child) => walk(child, owner));
    else if (typeof node === 'object' && node !== null) {
      for (const [key, child] of Object.entries(node)) {
        if (key === '$ref' && typeof child === 'string' && child !== owner) found.add(child);
        else walk(child, owner);
      }
    }
  };
  const { components, ...rest } = openApiDocument;
  walk(rest);
  for (const [kind, entries] of Object.entries(components)) {
    for (const [name, value] of Object.entries(entries as Record<string, unknown>)) walk(value, `#/components/${kind}/${name}`);
  }
  return found;
}

describe('OpenAPI document hygiene', () => {
  const validator = createContractValidator();

  it('names its licence and a contact', () => {
    assert.equal(openApiDocument.info.license.identifier, 'MIT');
    assert.match(openApiDocument.info.contact.email, /^[^@\s]+@merx\.dev$/);
    assert.match(openApiDocument.info.contact.url, /^https:\/\//);
  });

  it('has no component that nothing refers to', () => {
    const referenced = referencedComponents();
    const unused: string[] = [];
    for (const [kind, entries] of Object.entries(openApiDocument.components)) {
      // Security schemes are named by `security` requirements, not by $ref.
      if (kind === 'securitySchemes') continue;
      for (const name of Object.keys(entries as object)) if (!referenced.has(`#/components/${kind}/${name}`)) unused.push(`${kind}/${name}`);
    }
    assert.deepEqual(unused, []);
    const schemes = new Set(
      operationsOf(openApiDocument.paths).flatMap(({ operation }) => operation.security.flatMap((requirement) => Object.keys(requirement))),
    );
    assert.deepEqual([...schemes].sort(), Object.keys(openApiDocument.components.securitySchemes).sort());
  });

  it('gives every operation that takes a body at least one example, and every example validates against its schema', () => {
    const operations = [...operationsOf(openApiDocument.paths), ...operationsOf(openApiDocument.webhooks)];
    let checked = 0;
    for (const { where, operation } of operationsOf(openApiDocument.paths)) {
      if (!operation.requestBody) continue;
      for (const [mediaType, media] of Object.entries(operation.requestBody.content)) {
        const examples = Object.entries(media.examples ?? {});
        assert.ok(examples.length > 0, `${operation.operationId} (${where}) has no ${mediaType} request example`);
        for (const [name, example] of examples) {
          assert.ok(example.summary.length > 0, `${operation.operationId} example ${name} needs a summary`);
          assert.deepEqual(validateAgainst(validator, media.schema, example.value), [], `${operation.operationId} example ${name}`);
          checked += 1;
        }
      }
    }
    assert.ok(checked >= 30, `only ${checked} examples`);
    // Responses and parameters may carry examples too; those that do must validate as well.
    let responseExamples = 0;
    for (const { operation } of operations) {
      for (const [status, item] of Object.entries(operation.responses)) {
        for (const media of Object.values(resolveReference<ResponseObject>(openApiDocument, item).content ?? {})) {
          for (const [name, example] of Object.entries(media.examples ?? {})) {
            assert.deepEqual(validateAgainst(validator, media.schema, example.value), [], `${operation.operationId} ${status} example ${name}`);
            responseExamples += 1;
          }
        }
      }
      for (const parameter of (operation.parameters ?? []).map((item) => resolveReference<ParameterObject>(openApiDocument, item))) {
        if (parameter.example !== undefined)
          assert.deepEqual(validateAgainst(validator, parameter.schema, parameter.example), [], `${operation.operationId} ${parameter.name}`);
      }
    }
    assert.ok(responseExamples > 0, 'some responses carry examples');
  });

  it('refuses an example that does not match its schema', () => {
    const schema = { $ref: '#/components/schemas/ProductCreate' };
    assert.match(validateAgainst(validator, schema, { sku: 'A', title: 'B', price: 9.99, currency: 'USD' }).join('\n'), /price must be string/);
  });

  it('has a webhooks entry for every public event of the catalogue, posting its named payload with the Standard Webhooks headers', () => {
    assert.deepEqual(Object.keys(openApiDocument.webhooks).sort(), eventCatalogue.map((event) => event.name).sort());
    assert.ok(!Object.keys(openApiDocument.webhooks).some((name) => name.startsWith('internal.')));
    for (const event of eventCatalogue) {
      const operation = openApiDocument.webhooks[event.name]!.post!;
      const schema = operation.requestBody!.content['application/json']!.schema as { $ref: string };
      assert.equal(schema.$ref, `#/components/schemas/${eventComponentName(event.name)}`);
      const payload = openApiDocument.components.schemas[eventComponentName(event.name)] as JsonSchema & {
        properties: Record<string, JsonSchema>;
        required: string[];
      };
      assert.deepEqual(payload.required, ['id', 'topic', 'merchant_id', 'created_at', 'api_version', 'data', 'hmac_sha256']);
      assert.deepEqual(payload.properties.topic, { const: event.name, description: 'The event name.' });
      const data = payload.properties.data as { properties: Record<string, unknown> };
      assert.equal('previous' in data.properties, event.dataPreviousSchema !== undefined, `${event.name} previous`);
      const headers = (operation.parameters ?? []).map((item) => resolveReference<ParameterObject>(openApiDocument, item));
      assert.deepEqual(
        headers.map((header) => `${header.in}:${header.name}:${header.required}`),
        ['header:webhook-id:true', 'header:webhook-timestamp:true', 'header:webhook-signature:true'],
      );
      assert.ok(operation.responses['2XX'] && operation.responses['410'], `${event.name} responses`);
    }
    assert.equal(eventComponentName('webhooks.subscription_created'), 'WebhooksSubscriptionCreatedEvent');
    assert.equal(eventComponentName('campaign_spend.updated'), 'CampaignSpendUpdatedEvent');
  });

  it("refers to the catalogue's own schemas from the payloads instead of copying them", () => {
    const object = (name: string) =>
      (openApiDocument.components.schemas[name] as { properties: { data: { properties: { object: unknown } } } }).properties.data.properties.object;
    assert.deepEqual(object('ProductsCreatedEvent'), { $ref: '#/components/schemas/Product' });
    assert.deepEqual(object('OrdersCreatedEvent'), { $ref: '#/components/schemas/IngestedRecord' });
    assert.deepEqual(object('AuthDeniedEvent'), { $ref: '#/components/schemas/AuthAttempt' });
    assert.deepEqual(object('SandboxResetCompletedEvent'), { $ref: '#/components/schemas/SandboxReset' });
  });
});

/** Validates a value against a schema of the document (a $ref or an inline one). */
function validateAgainst(validator: ReturnType<typeof createContractValidator>, schema: JsonSchema, value: unknown): string[] {
  const reference = (schema as { $ref?: string }).$ref;
  if (reference?.startsWith('#/components/schemas/')) return validator.validateComponent(reference.slice('#/components/schemas/'.length), value);
  return validator.validateSchema(schema, value);
}
