/**
 * `merx trigger <event>`: the smallest real change in the sandbox that makes Merx emit that event,
 * through the public API like any client (so it is also delivered to webhooks and `listen`).
 * Objects it makes are named `merx-trigger-…` so they are easy to recognise and clean up.
 */
import { randomUUID } from 'node:crypto';
import type { Merx } from '@merx/sdk';

export interface Triggered {
  steps: string[];
  objects: Record<string, string>;
}

type Step = (client: Merx, made: Triggered) => Promise<void>;

const tag = () => `merx-trigger-${randomUUID().slice(0, 8)}`;

const product: Step = async (client, made) => {
  const created = await client.products.create({ sku: tag(), title: 'Triggered by merx', price: '9.99', currency: 'USD' });
  made.objects.product = created.id;
  made.steps.push(`created product ${created.id}`);
};
const source: Step = async (client, made) => {
  const created = await client.sources.create({ name: tag(), kind: 'custom' });
  made.objects.source = created.id;
  made.steps.push(`created source ${created.id}`);
};
const destination: Step = async (client, made) => {
  const created = await client.destinations.create({ name: tag(), url: 'https://example.com/merx-trigger', status: 'paused' });
  made.objects.destination = created.id;
  made.steps.push(`created destination ${created.id}`);
};
const rule: Step = async (client, made) => {
  const created = await client.rules.create({ name: tag(), action: 'forward' });
  made.objects.rule = created.id;
  made.steps.push(`created rule ${created.id}`);
};
const connection: Step = async (client, made) => {
  await source(client, made);
  await destination(client, made);
  const created = await client.connections.create({ source_id: made.objects.source!, destination_id: made.objects.destination! });
  made.objects.connection = created.id;
  made.steps.push(`created connection ${created.id}`);
};
const subscription: Step = async (client, made) => {
  const created = await client.webhooks.subscriptions.create({ url: 'https://example.com/merx-trigger', topics: ['products'] });
  made.objects.subscription = created.id;
  made.steps.push(`created webhook subscription ${created.id}`);
};
const apiKey: Step = async (client, made) => {
  const created = await client.apiKeys.create({ name: tag(), scopes: ['products:read'] });
  made.objects.api_key = created.id;
  made.steps.push(`created API key ${created.id}`);
};

type RecordType = 'order' | 'review' | 'campaign_spend' | 'alert';
const RECORD_DATA: Record<RecordType, Record<string, unknown>> = {
  order: { total: 42.5, currency: 'USD', customer: { email: 'buyer@example.com' }, line_items: [{ sku: 'MERX-TRIGGER', quantity: 1 }] },
  review: { rating: 5, title: 'Triggered', body: 'A review made by merx trigger', author: 'merx', sku: 'MERX-TRIGGER' },
  campaign_spend: { spend: '12.00', currency: 'USD', campaign_id: 'merx-trigger', channel: 'search' },
  alert: { message: 'An alert made by merx trigger', severity: 'warning' },
};
const record =
  (type: RecordType): Step =>
  async (client, made) => {
    await source(client, made);
    const answer = (await client.sources.records.create(made.objects.source!, {
      records: [{ type, external_id: tag(), occurred_at: new Date().toISOString(), data: RECORD_DATA[type] } as never],
    })) as unknown as { results?: { status?: string; record?: { id?: string }; id?: string; reasons?: unknown }[] };
    const result = answer.results?.[0];
    if (result?.status && result.status !== 'accepted') throw new Error(`the ${type} record was ${result.status}: ${JSON.stringify(result.reasons ?? result)}`);
    made.steps.push(`ingested a record of type ${type} into it`);
  };

const then =
  (first: Step, next: (client: Merx, made: Triggered) => Promise<string>): Step =>
  async (client, made) => {
    await first(client, made);
    made.steps.push(await next(client, made));
  };

export const TRIGGERS: Record<string, Step> = {
  'products.created': product,
  'products.updated': then(product, async (client, made) => (await client.products.update(made.objects.product!, { price: '10.99' }), 'updated its price')),
  'products.deleted': then(product, async (client, made) => (await client.products.delete(made.objects.product!), 'deleted it')),
  'sources.created': source,
  'sources.updated': then(source, async (client, made) => (await client.sources.update(made.objects.source!, { status: 'paused' }), 'paused it')),
  'sources.deleted': then(source, async (client, made) => (await client.sources.delete(made.objects.source!), 'deleted it')),
  'destinations.created': destination,
  'destinations.updated': then(
    destination,
    async (client, made) => (await client.destinations.update(made.objects.destination!, { name: tag() }), 'renamed it'),
  ),
  'destinations.deleted': then(destination, async (client, made) => (await client.destinations.delete(made.objects.destination!), 'deleted it')),
  'rules.created': rule,
  'rules.updated': then(rule, async (client, made) => (await client.rules.update(made.objects.rule!, { enabled: false }), 'disabled it')),
  'rules.deleted': then(rule, async (client, made) => (await client.rules.delete(made.objects.rule!), 'deleted it')),
  'connections.created': connection,
  'connections.updated': then(
    connection,
    async (client, made) => (await client.connections.update(made.objects.connection!, { status: 'paused' }), 'paused it'),
  ),
  'connections.deleted': then(connection, async (client, made) => (await client.connections.delete(made.objects.connection!), 'deleted it')),
  'orders.created': record('order'),
  'reviews.submitted': record('review'),
  'campaign_spend.updated': record('campaign_spend'),
  'system_alerts.raised': record('alert'),
  'api_keys.created': apiKey,
  'api_keys.revoked': then(apiKey, async (client, made) => (await client.apiKeys.revoke(made.objects.api_key!), 'revoked it')),
  'webhooks.subscription_created': subscription,
  'webhooks.subscription_updated': then(
    subscription,
    async (client, made) => (await client.webhooks.subscriptions.update(made.objects.subscription!, { topics: ['products', 'orders'] }), 'changed its topics'),
  ),
  'webhooks.subscription_deleted': then(
    subscription,
    async (client, made) => (await client.webhooks.subscriptions.delete(made.objects.subscription!), 'deleted it'),
  ),
  'webhooks.secret_rotated': then(
    subscription,
    async (client, made) => (await client.webhooks.subscriptions.rotateSecret(made.objects.subscription!), 'rotated its secret'),
  ),
};

export async function trigger(client: Merx, eventName: string): Promise<Triggered> {
  const made: Triggered = { steps: [], objects: {} };
  await TRIGGERS[eventName]!(client, made);
  return made;
}
