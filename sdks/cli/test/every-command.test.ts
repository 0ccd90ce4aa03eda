import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Command } from 'commander';
import { OPERATIONS } from '@merx/sdk';
import { buildProgram } from '../src/main.js';
import { resourceOperations } from '../src/commands/resources.js';
import { Cli } from './support/cli.js';
import { WebhookReceiver } from './support/receiver.js';
import { eventually, merxServer, packageRoot, type MerxServer } from './support/server.js';

const run = promisify(execFile);

function commandAt(root: Command, names: readonly string[]): Command | undefined {
  let at: Command | undefined = root;
  for (const name of names) at = at?.commands.find((command) => command.name() === name);
  return at;
}

describe('every operation of the API is a merx command', function () {
  this.timeout(300_000);
  let server: MerxServer;

  before(async () => {
    server = await merxServer();
  });

  it('walks the served OpenAPI document: each operation has its command, each field its flag', async () => {
    const document = (await (await fetch(`${server.baseUrl}/api/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId?: string }>>;
    };
    const { program } = buildProgram({ stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
    const byId = new Map(resourceOperations().map((operation) => [operation.entry.operationId, operation]));
    const served = Object.values(document.paths).flatMap((item) =>
      Object.values(item)
        .map((operation) => operation.operationId)
        .filter((id): id is string => Boolean(id)),
    );
    assert.ok(served.length >= 60, `the document has ${served.length} operations`);
    const missing: string[] = [];
    for (const operationId of served) {
      const operation = byId.get(operationId);
      const command = operation && commandAt(program, operation.path);
      if (!command) missing.push(operationId);
    }
    assert.deepEqual(missing, [], 'operations without a command');
    const create = commandAt(program, ['products', 'create'])!;
    for (const flag of ['--sku', '--title', '--price', '--currency', '--inventory-quantity', '--attributes', '--data', '--idempotency-key']) {
      assert.ok(
        create.options.some((option) => option.long === flag),
        `products create has ${flag}`,
      );
    }
    assert.ok(commandAt(program, ['webhooks', 'dead-letters', 'replay-all'])!.options.some((option) => option.long === '--subscription-id'));
    assert.ok(commandAt(program, ['products', 'update'])!.options.some((option) => option.long === '--if-match'));
    assert.ok(commandAt(program, ['products', 'list'])!.options.some((option) => option.long === '--all'));
  });

  it('the committed flags (src/generated/fields.ts) are up to date with the served document', async () => {
    const { stdout, stderr } = await run(process.execPath, ['scripts/generate.mjs', '--check', '--from', `${server.baseUrl}/api/v1/openapi.json`], {
      cwd: packageRoot,
    });
    assert.equal(stdout + stderr, '');
  });

  it('a tour runs every command against the real server, with exit 0 for success, 1 for an API error, 2 for a usage error', async () => {
    const merchant = await server.createMerchant('Tour merchant');
    const cli = new Cli(server, merchant);
    const receiver = await WebhookReceiver.start();
    const failing = await WebhookReceiver.start(500);
    const called = new Set<string>();
    const step = async (operationId: string, args: string[], expectedCode = 0): Promise<any> => {
      const result = await cli.run(args, { env: { MERX_OPERATOR_TOKEN: server.operatorToken } });
      assert.equal(result.code, expectedCode, `merx ${args.join(' ')}: exit ${result.code}\n${result.stdout}\n${result.stderr}`);
      called.add(operationId);
      if (expectedCode !== 0) return result;
      return result.stdout.trim() ? (/^[[{]/.test(result.stdout.trim()) ? JSON.parse(result.stdout) : result.stdout) : undefined;
    };
    try {
      assert.match((await step('openapi.retrieve', ['openapi', 'retrieve'])).openapi, /^3\.1/);
      assert.ok((await step('oauth.jwks', ['oauth', 'jwks'])).keys[0].kid);
      assert.equal((await step('health.retrieve', ['health', 'retrieve'])).status, 'ok');
      assert.equal((await step('readiness.retrieve', ['readiness', 'retrieve'])).status, 'ready');
      const clientId = merchant.apiKey.slice(0, merchant.apiKey.lastIndexOf('_'));
      const token = await step('oauth.token', [
        'oauth',
        'token',
        '--grant-type',
        'client_credentials',
        '--client-id',
        clientId,
        '--client-secret',
        merchant.apiKey,
      ]);
      assert.equal(token.token_type.toLowerCase(), 'bearer');

      // Products, with --data from a file, an ETag precondition and the errors of each kind.
      const productFile = path.join(cli.configDir, 'product.json');
      writeFileSync(productFile, JSON.stringify({ sku: 'TOUR-1', title: 'Tour', price: '3.00', currency: 'USD' }));
      const product = await step('products.create', [
        'products',
        'create',
        '--data',
        `@${productFile}`,
        '--inventory-quantity',
        '4',
        '--attributes',
        '{"colour":"red"}',
      ]);
      assert.equal(product.inventory_quantity, 4);
      assert.deepEqual(product.attributes, { colour: 'red' });
      const conflict = await step('products.create', ['products', 'create', '--sku', 'TOUR-1', '--title', 'Again', '--price', '1.00', '--currency', 'USD'], 1);
      assert.match(conflict.stderr, /409 conflict/);
      assert.match(conflict.stderr, /request id: req_/);
      const invalid = await step('products.create', ['products', 'create', '--sku', 'TOUR-2', '--title', 'T', '--price', '1.001', '--currency', 'USD'], 1);
      assert.match(invalid.stderr, /422 validation_failed/);
      assert.match(invalid.stderr, /price: /);
      assert.match((await cli.run(['products', 'create', '--sku', 'TOUR-2'])).stderr, /missing --title, --price, --currency/);
      assert.equal(
        (await cli.run(['products', 'create', '--sku', 'X', '--title', 'X', '--price', '1', '--currency', 'USD', '--inventory-quantity', 'many'])).code,
        2,
      );
      assert.equal((await cli.run(['products', 'create', '--sku', 'X', '--title', 'X', '--price', '1', '--currency', 'USD', '--status', 'sold'])).code, 2);
      assert.equal((await cli.run(['products', 'frobnicate'])).code, 2);
      assert.equal((await cli.run(['products', 'create', '--no-such-flag'])).code, 2);
      assert.equal((await step('products.retrieve', ['products', 'retrieve', product.id])).id, product.id);
      assert.match((await step('products.retrieve', ['products', 'retrieve', 'prod_00000000000000000000000000'], 1)).stderr, /404/);
      assert.deepEqual(
        (await step('products.list', ['products', 'list', '--limit', '10'])).data.map((item: { id: string }) => item.id),
        [product.id],
      );
      const stale = await step('products.update', ['products', 'update', product.id, '--title', 'Tour 2', '--if-match', '"v9"'], 1);
      assert.match(stale.stderr, /412/);
      const updated = await step('products.update', ['products', 'update', product.id, '--title', 'Tour 2', '--if-match', '"v1"']);
      assert.equal(updated.version, 2);
      assert.deepEqual(await step('products.retrieve', ['products', 'retrieve', product.id, '--fields', 'sku,version']), { sku: 'TOUR-1', version: 2 });

      // The merchant's profile.
      assert.equal((await step('merchant.update', ['merchant', 'update', '--name', 'Tour merchant 2'])).name, 'Tour merchant 2');
      assert.equal((await step('merchant.retrieve', ['merchant', 'retrieve'])).name, 'Tour merchant 2');

      // API keys.
      const key = await step('api_keys.create', ['api-keys', 'create', '--name', 'Tour key', '--scopes', 'products:read,products:write']);
      assert.deepEqual(key.scopes.sort(), ['products:read', 'products:write']);
      assert.equal((await step('api_keys.retrieve', ['api-keys', 'retrieve', key.id])).name, 'Tour key');
      assert.ok((await step('api_keys.list', ['api-keys', 'list'])).data.some((item: { id: string }) => item.id === key.id));
      assert.equal(await step('api_keys.revoke', ['api-keys', 'revoke', key.id]), undefined);

      // Configuration and records.
      const source = await step('sources.create', ['sources', 'create', '--name', 'Shop', '--kind', 'storefront', '--settings', '{"domain":"shop.example"}']);
      const destination = await step('destinations.create', ['destinations', 'create', '--name', 'ERP', '--url', receiver.url, '--kind', 'webhook']);
      const rule = await step('rules.create', [
        'rules',
        'create',
        '--name',
        'Large',
        '--condition',
        'data.total >= 100.0',
        '--action',
        'forward',
        '--event-types',
        'orders.created',
      ]);
      const connection = await step('connections.create', [
        'connections',
        'create',
        '--source-id',
        source.id,
        '--destination-id',
        destination.id,
        '--rule-ids',
        rule.id,
      ]);
      assert.deepEqual(connection.rule_ids, [rule.id]);
      for (const [resource, id] of [
        ['sources', source.id],
        ['destinations', destination.id],
        ['rules', rule.id],
        ['connections', connection.id],
      ] as const) {
        assert.equal((await step(`${resource}.retrieve`, [resource, 'retrieve', id])).id, id);
        assert.ok(
          (await step(`${resource}.list`, [resource, 'list', '--all'])).some((item: { id: string }) => item.id === id),
          `${resource} list --all`,
        );
      }
      assert.equal((await step('sources.update', ['sources', 'update', source.id, '--name', 'Shop EU'])).name, 'Shop EU');
      assert.equal((await step('destinations.update', ['destinations', 'update', destination.id, '--name', 'ERP EU'])).name, 'ERP EU');
      assert.match((await step('destinations.rotate_secret', ['destinations', 'rotate-secret', destination.id])).secret, /^whsec_/);
      assert.equal((await step('rules.update', ['rules', 'update', rule.id, '--enabled', 'false'])).enabled, false);
      assert.equal((await step('connections.update', ['connections', 'update', connection.id, '--name', 'Shop to ERP'])).name, 'Shop to ERP');
      const records = JSON.stringify([
        { type: 'order', external_id: 'order-1', occurred_at: '2026-01-02T03:04:05.678Z', data: { total: 120.0, currency: 'EUR' } },
      ]);
      assert.equal((await step('sources.records.create', ['sources', 'records', 'create', source.id, '--records', records])).results[0].status, 'accepted');
      assert.deepEqual(
        (await step('sources.records.list', ['sources', 'records', 'list', source.id])).data.map((record: { external_id: string }) => record.external_id),
        ['order-1'],
      );
      for (const [resource, id] of [
        ['connections', connection.id],
        ['rules', rule.id],
        ['destinations', destination.id],
        ['sources', source.id],
      ] as const) {
        assert.equal(await step(`${resource}.delete`, [resource, 'delete', id]), undefined);
      }

      // Webhooks: an endpoint that fails, so a delivery dies and is replayed.
      const subscription = await step('webhooks.subscriptions.create', [
        'webhooks',
        'subscriptions',
        'create',
        '--url',
        failing.url,
        '--topics',
        'products.updated',
      ]);
      await step('products.update', ['products', 'update', product.id, '--title', 'Tour 3']);
      assert.equal((await step('webhooks.subscriptions.retrieve', ['webhooks', 'subscriptions', 'retrieve', subscription.id])).url, failing.url);
      assert.ok(
        (await step('webhooks.subscriptions.list', ['webhooks', 'subscriptions', 'list'])).data.some((item: { id: string }) => item.id === subscription.id),
      );
      assert.notEqual(
        (await step('webhooks.subscriptions.rotate_secret', ['webhooks', 'subscriptions', 'rotate-secret', subscription.id])).secret,
        subscription.secret,
      );
      assert.equal(
        (await step('webhooks.subscriptions.stats.retrieve', ['webhooks', 'subscriptions', 'stats', 'retrieve', subscription.id])).subscription_id,
        subscription.id,
      );
      const dead = await eventually(
        async () => (await cli.json(['webhooks', 'dead-letters', 'list', '--subscription-id', subscription.id])).data[0],
        'a dead letter',
      );
      called.add('webhooks.dead_letters.list');
      assert.equal((await step('webhooks.dead_letters.retrieve', ['webhooks', 'dead-letters', 'retrieve', dead.id])).event_id, dead.event_id);
      const deliveries = (await step('webhooks.deliveries.list', ['webhooks', 'deliveries', 'list', '--subscription-id', subscription.id])).data;
      assert.ok((await step('webhooks.deliveries.retrieve', ['webhooks', 'deliveries', 'retrieve', deliveries[0].id])).attempts.length > 0);
      await step('webhooks.subscriptions.update', ['webhooks', 'subscriptions', 'update', subscription.id, '--status', 'enabled', '--url', receiver.url]);
      assert.equal((await step('webhooks.dead_letters.replay', ['webhooks', 'dead-letters', 'replay', dead.id])).event_id, dead.event_id);
      assert.equal(
        (await step('webhooks.dead_letters.replay_all', ['webhooks', 'dead-letters', 'replay-all', '--subscription-id', subscription.id])).object,
        'dead_letter_replay',
      );
      await step('webhooks.subscriptions.delete', ['webhooks', 'subscriptions', 'delete', subscription.id]);

      // Events and the audit log.
      const events = (await step('events.list', ['events', 'list', '--topic', 'products'])).data;
      assert.ok((await step('events.retrieve', ['events', 'retrieve', events[0].id])).topic.startsWith('products.'));
      const entries = await eventually(async () => {
        const page = await cli.json(['audit', 'list', '--resource-id', product.id]);
        return page.data.length ? page.data : undefined;
      }, 'audit entries');
      called.add('audit.list');
      assert.equal((await step('audit.retrieve', ['audit', 'retrieve', entries[0].id])).id, entries[0].id);
      assert.equal((await step('audit.verify', ['audit', 'verify'])).valid, true);
      await step('products.delete', ['products', 'delete', product.id]);

      // Installed apps: none, so uninstalling is a 404 from the real route.
      assert.deepEqual((await step('apps.list', ['apps', 'list'])).data, []);
      await step('apps.uninstall', ['apps', 'uninstall', 'app_00000000000000000000000000'], 1);

      // The operator's API under `merx operator`, with MERX_OPERATOR_TOKEN.
      const provisioned = await step('merchants.admin.create', [
        'operator',
        'merchants',
        'create',
        '--name',
        'Operator tour',
        '--owner',
        `{"email":"op-${merchant.id}@cli-tests.example"}`,
      ]);
      assert.ok(provisioned.api_key.secret.startsWith('mx_test_'));
      assert.equal((await step('merchants.admin.update', ['operator', 'merchants', 'update', provisioned.merchant.id, '--plan', 'standard'])).plan, 'standard');
      await step('merchants.admin.throttle.update', [
        'operator',
        'merchants',
        'throttle',
        'update',
        provisioned.merchant.id,
        '--burst',
        '{"capacity":300,"refill_per_second":150}',
      ]);
      assert.equal(
        (await step('merchants.admin.throttle.retrieve', ['operator', 'merchants', 'throttle', 'retrieve', provisioned.merchant.id])).overrides.burst.capacity,
        300,
      );
      assert.ok(
        (
          await step('apps.admin.create', [
            'operator',
            'apps',
            'create',
            '--name',
            'Tour app',
            '--redirect-uris',
            'https://app.example/callback',
            '--scopes',
            'products:read',
          ])
        ).client_secret,
      );
      assert.ok((await step('signing_keys.admin.rotate', ['operator', 'signing-keys', 'rotate'])).current_kid);
      assert.ok(await step('bus.admin.poison.list', ['operator', 'bus', 'poison', 'list', '--queue', 'catalog.events']));
      assert.equal((await step('bus.admin.poison.replay', ['operator', 'bus', 'poison', 'replay', '--queue', 'catalog.events'])).object, 'bus_poison_replay');
      const noOperator = await cli.run(['operator', 'apps', 'create', '--name', 'X']);
      assert.equal(noOperator.code, 2, 'no operator token is a usage error');

      // Last: the sandbox reset (the raw operation is `merx sandbox reset`; see sandbox.test.ts) and its status.
      const reset = await step('sandbox.reset', ['sandbox', 'reset', '--yes', '--no-wait']);
      assert.equal((await step('sandbox.resets.retrieve', ['sandbox', 'resets', 'retrieve', reset.id])).id, reset.id);
    } finally {
      await Promise.all([receiver.close(), failing.close()]);
    }
    const every = OPERATIONS.map((operation) => operation.operationId).sort();
    assert.deepEqual(
      every.filter((id) => !called.has(id)),
      [],
      'operations the tour did not run',
    );
  });
});
