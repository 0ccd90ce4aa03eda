import type { ExampleObject } from './types.js';

/**
 * Request body examples, by operationId. The API reference at /docs shows them and the SDK
 * generators copy them into their docs; contracts.spec.ts fails when an operation that takes a
 * body has none here, or when an example does not validate against its own schema.
 */

const id = (prefix: string, tail = '01jd3k7q8m2x4v6b9c0d1e2f3g') => `${prefix}_${tail}`;
const example = (summary: string, value: unknown, description?: string): ExampleObject => ({ summary, value, ...(description ? { description } : {}) });

export const requestExamples: Record<string, Record<string, ExampleObject>> = {
  'merchants.admin.create': {
    sandbox: example('A sandbox merchant, password generated', { name: 'Acme Outdoor', owner: { email: 'owner@acme.example' } }),
    live: example('A live merchant on the scale plan', {
      name: 'Acme Outdoor GmbH',
      owner: { email: 'finance@acme.example', password: 'correct horse battery staple' },
      mode: 'live',
      plan: 'scale',
      default_currency: 'EUR',
      timezone: 'Europe/Berlin',
    }),
  },
  'merchants.admin.update': {
    suspend: example('Suspend a merchant', { status: 'suspended' }),
    replan: example('Move a merchant to another plan', { plan: 'scale' }),
  },
  'merchants.admin.throttle.update': {
    raise: example('More burst and hourly budget than the plan', {
      burst: { capacity: 300, refill_per_second: 150 },
      sustained: { limit: 60000, window_seconds: 3600 },
    }),
    streams: example('More StreamEvents streams open at once than the plan allows', { event_streams: { concurrent: 1000 } }),
    reset: example("Back to the plan's numbers", {}),
  },
  'apps.admin.create': {
    app: example('A reporting app', {
      name: 'Acme Reports',
      redirect_uris: ['https://reports.acme.example/oauth/callback', 'http://localhost:3000/callback'],
      scopes: ['products:read', 'audit:read'],
    }),
  },
  'oauth.token': {
    clientCredentials: example('Client credentials in the form (client_secret_post)', {
      grant_type: 'client_credentials',
      client_id: 'mx_test_4fQ8kLm2Zp',
      client_secret: 'mx_test_4fQ8kLm2Zp_9sVx2cB7nQ4wE1rT6yU3iO0pA5dF8gH',
      scope: 'products:read products:write',
    }),
  },
  'api_keys.create': {
    reporting: example('A read-only key for a reporting job', { name: 'Reporting', scopes: ['products:read', 'audit:read'] }),
  },
  'products.create': {
    minimal: example('The four required fields', { sku: 'TSHIRT-BLK-M', title: 'T-shirt, black, M', price: '19.99', currency: 'USD' }),
    full: example('A draft with stock and attributes', {
      sku: 'MUG-BLUE',
      title: 'Mug, blue glaze',
      description: 'Stoneware, 350 ml.',
      price: '8.50',
      currency: 'EUR',
      status: 'draft',
      inventory_quantity: 120,
      attributes: { glaze: 'blue', capacity_ml: '350' },
    }),
  },
  'products.update': {
    price: example('A new price', { price: '17.99' }),
    archive: example('Archive it', { status: 'archived' }),
  },
  'merchant.update': {
    profile: example('Rename and move to Berlin', { name: 'Acme Outdoor GmbH', default_currency: 'EUR', timezone: 'Europe/Berlin' }),
  },
  'sources.create': {
    storefront: example('A storefront that sends orders', { name: 'Shopify storefront', kind: 'storefront', settings: { shop_domain: 'acme.myshopify.com' } }),
    ads: example('An ads account, paused for now', { name: 'Google Ads', kind: 'ads', status: 'paused' }),
  },
  'sources.update': {
    pause: example('Pause ingestion', { status: 'paused' }),
  },
  'sources.records.create': {
    oneOfEach: example('One record of each type', {
      records: [
        {
          type: 'order',
          external_id: 'ORD-10042',
          occurred_at: '2026-11-22T10:04:05.123Z',
          data: {
            total: 129.9,
            currency: 'EUR',
            customer: { email: 'ada@example.com', name: 'Ada' },
            line_items: [{ sku: 'MUG-BLUE', quantity: 2 }],
            channel: 'web',
          },
        },
        {
          type: 'review',
          external_id: 'REV-551',
          occurred_at: '2026-11-22T11:30:00+01:00',
          data: { rating: 4, title: 'Sturdy', body: 'Survived the dishwasher.', author: 'ada', sku: 'MUG-BLUE' },
        },
        {
          type: 'campaign_spend',
          external_id: 'CMP-7-2026-11-22',
          occurred_at: '2026-11-22T23:59:59Z',
          data: { spend: '412.30', currency: 'EUR', campaign_id: 'cmp-7', channel: 'search' },
        },
        {
          type: 'alert',
          external_id: 'ALERT-9',
          occurred_at: '2026-11-22T12:00:00Z',
          data: { message: 'Product feed is 3 hours late', severity: 'critical' },
        },
      ],
    }),
  },
  'destinations.create': {
    erp: example('An ERP import endpoint', { name: 'ERP import', kind: 'http', url: 'https://erp.acme.example/imports/merx' }),
    webhook: example('A webhook receiver, paused until it is deployed', { name: 'Data warehouse', url: 'https://dwh.acme.example/merx', status: 'paused' }),
  },
  'destinations.update': {
    resume: example('Resume deliveries', { status: 'active' }),
  },
  'rules.create': {
    largeEurOrders: example('Forward large EUR orders', {
      name: 'Large EUR orders',
      event_types: ['orders.created'],
      condition: 'data.total >= 100.0 && data.currency == "EUR"',
      action: 'forward',
    }),
    dropTests: example('Drop test orders', {
      name: 'No test orders',
      event_types: ['orders.created'],
      condition: 'has(data.tags) && data.tags.exists(t, t == "test")',
      action: 'drop',
    }),
    redact: example('Strip customer details before forwarding', {
      name: 'Redact customers',
      condition: 'type == "order"',
      action: 'transform',
      transform: { remove: ['customer.email'], rename: { total: 'amount' }, set: { 'meta.redacted': true } },
    }),
  },
  'rules.update': {
    threshold: example('Raise the threshold', { condition: 'data.total >= 250.0 && data.currency == "EUR"' }),
    disable: example('Switch it off', { enabled: false }),
  },
  'connections.create': {
    storefrontToErp: example('Storefront orders to the ERP through one rule', {
      name: 'Large orders to ERP',
      source_id: id('src'),
      destination_id: id('dst'),
      rule_ids: [id('rul')],
      event_types: ['orders.created'],
    }),
  },
  'connections.update': {
    pause: example('Pause routing', { status: 'paused' }),
  },
  'webhooks.subscriptions.create': {
    orders: example('Orders and new products', { url: 'https://hooks.acme.example/merx', topics: ['orders', 'products.created'], description: 'Fulfilment' }),
    everything: example('Everything', { url: 'https://hooks.acme.example/all', topics: ['*'] }),
  },
  'webhooks.subscriptions.update': {
    enable: example('Enable it again after fixing the endpoint', { status: 'enabled' }),
    topics: example('Replace its topics', { topics: ['orders', 'system_alerts'] }),
  },
  'webhooks.dead_letters.replay_all': {
    subscription: example('Every dead letter of one subscription since yesterday', {
      subscription_id: id('wh'),
      since: '2026-11-21T00:00:00.000Z',
      limit: 500,
    }),
    topic: example('Every dead order event', { topic: 'orders' }),
  },
  'bus.admin.poison.replay': {
    queue: example('Put every poisoned message of the audit queue back on it', { queue: 'audit.events' }),
    chosen: example('Only the named messages', { queue: 'webhooks.events', event_ids: [id('evt')] }),
  },
  'sandbox.reset': {
    seed: example('Wipe the sandbox and seed fixtures', { seed: true }),
    empty: example('Wipe the sandbox and leave it empty', { seed: false }),
  },
};
