import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { WebhookReceiver } from '@merx/webhooks/testing';
import { call, type ApiResponse, type TestMerchant } from '../client.js';
import type { Stack } from '../stack.js';
import { latencyFigures, type LatencyFigures } from './latency.js';

/**
 * Neighbours on the webhook delivery engine (issue 29): merchant B points its subscriptions at a
 * receiver that accepts the connection and never answers, while merchant A's deliveries to a fast
 * receiver are timed. The helpers serve the end-to-end test and the bench alike.
 */

const SUBSCRIPTIONS = '/api/v1/webhooks/subscriptions';
const MAX_HEAD_BYTES = 64 * 1024;

/** One request as the hanging endpoint read it: its path and its `webhook-id`. */
export interface HungRequest {
  path: string;
  webhookId: string | undefined;
  receivedAt: number;
}

/**
 * A raw TCP server that accepts every connection, reads the request and never writes a byte: the
 * endpoint that holds a sender's request until its timeout. No HTTP server is involved, so nothing
 * answers on its behalf (no 408, no keep-alive timeout closing the socket).
 */
export class HangingEndpoint {
  readonly requests: HungRequest[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly waiters = new Set<() => void>();

  private constructor(private readonly server: Server) {}

  static async start(host = '127.0.0.1'): Promise<HangingEndpoint> {
    let endpoint: HangingEndpoint | undefined;
    const server = createServer((socket) => endpoint!.hold(socket));
    endpoint = new HangingEndpoint(server);
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    return endpoint;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = '/hang'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Connections open now: requests the sender is still waiting on. */
  get open(): number {
    return this.sockets.size;
  }

  /** Resolves once `condition` holds; fails after `timeoutMs`. */
  async waitUntil(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`hanging endpoint: ${what} did not happen within ${timeoutMs} ms (${this.requests.length} requests, ${this.open} open)`);
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, Math.min(left, 100));
        this.waiters.add(done);
      });
    }
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private hold(socket: Socket): void {
    this.sockets.add(socket);
    let head = '';
    let read = false;
    socket.on('data', (chunk: Buffer) => {
      if (read) return;
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0 && head.length < MAX_HEAD_BYTES) return;
      read = true;
      this.requests.push(parseHead(end < 0 ? head : head.slice(0, end)));
      this.notify();
    });
    // The sender gives up by resetting the connection; that is the point, not a failure.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.sockets.delete(socket);
      this.notify();
    });
  }

  private notify(): void {
    for (const waiter of [...this.waiters]) waiter();
  }
}

function parseHead(head: string): HungRequest {
  const [requestLine = '', ...lines] = head.split('\r\n');
  const webhookId = lines
    .find((line) => line.toLowerCase().startsWith('webhook-id:'))
    ?.slice('webhook-id:'.length)
    .trim();
  return { path: requestLine.split(' ')[1] ?? '', webhookId, receivedAt: Date.now() };
}

const api = (stack: Stack, merchant: TestMerchant, method: string, path: string, body?: unknown): Promise<ApiResponse> =>
  call(stack, method, path, { token: merchant.token, ...(body === undefined ? {} : { body }) });

/** Creates a product through the gateway, as a client would; answers its id. */
export async function createProduct(stack: Stack, merchant: TestMerchant, sku: string): Promise<string> {
  const created = await api(stack, merchant, 'POST', '/api/v1/products', { sku, title: `Product ${sku}`, price: '10.00', currency: 'EUR' });
  assert.equal(created.status, 201, created.text);
  return created.body.id as string;
}

export async function subscribe(stack: Stack, merchant: TestMerchant, url: string, topics: string[]): Promise<string> {
  const created = await api(stack, merchant, 'POST', SUBSCRIPTIONS, { url, topics });
  assert.equal(created.status, 201, created.text);
  return created.body.id as string;
}

/**
 * Creates `count` products one after another, starting one every `intervalMs` (a steady load, not
 * a burst: each product's delivery is timed on its own). Answers the product ids in order.
 */
export async function createProductsPaced(
  stack: Stack,
  merchant: TestMerchant,
  options: { count: number; intervalMs: number; skuPrefix: string },
): Promise<string[]> {
  const ids: string[] = [];
  const startedAt = Date.now();
  for (let i = 0; i < options.count; i++) {
    const slot = startedAt + i * options.intervalMs - Date.now();
    if (slot > 0) await new Promise((resolve) => setTimeout(resolve, slot));
    ids.push(await createProduct(stack, merchant, `${options.skuPrefix}-${i}`));
  }
  return ids;
}

/**
 * Each product's delivery latency (ms): when its `products.created` reached the receiver, minus the
 * event's `created_at` (set just before the product's transaction commits; one machine, one clock).
 * So it spans the outbox relay, the bus, fan-out, the claim and the request itself.
 */
export async function deliveryLatencies(receiver: WebhookReceiver, productIds: string[], timeoutMs: number): Promise<number[]> {
  const firstArrival = () => {
    const found = new Map<string, number>();
    for (const request of receiver.received) {
      if (request.json?.topic !== 'products.created') continue;
      const id = request.json.data?.object?.id as string;
      if (!found.has(id)) found.set(id, request.receivedAt.getTime() - Date.parse(request.json.created_at));
    }
    return found;
  };
  const arrived = await receiver.waitUntil(
    () => {
      const found = firstArrival();
      return productIds.every((id) => found.has(id)) && found;
    },
    timeoutMs,
    `products.created of ${productIds.length} products`,
  );
  return productIds.map((id) => arrived.get(id)!);
}

export interface HangingAttackOptions {
  /** Subscriptions of B to the hanging endpoint, one path each. */
  subscriptions?: number;
  /** Products B creates per wave: each is a delivery to every subscription. */
  productsPerWave?: number;
  /** Time from the start of one wave to the start of the next. */
  waveEveryMs?: number;
}

/**
 * Merchant B's attack, within its limits: `subscriptions` subscriptions to a receiver that never
 * answers, then waves of `productsPerWave` products, each product a delivery to every
 * subscription. The delivery engine switches an endpoint off once a delivery has failed through
 * its whole retry window; B switches it back on before each wave, so every wave finds them all
 * enabled (their waiting deliveries resume too).
 */
export class HangingEndpointsAttack {
  readonly subscriptionIds: string[] = [];
  readonly productIds: string[] = [];
  waves = 0;
  private running: Promise<void> | undefined;
  private stopping = false;
  private wakeUp: (() => void) | undefined;

  private constructor(
    private readonly stack: Stack,
    readonly merchant: TestMerchant,
    private readonly options: Required<HangingAttackOptions>,
  ) {}

  static async prepare(stack: Stack, merchant: TestMerchant, endpoint: HangingEndpoint, options: HangingAttackOptions = {}): Promise<HangingEndpointsAttack> {
    const attack = new HangingEndpointsAttack(stack, merchant, { subscriptions: 30, productsPerWave: 12, waveEveryMs: 1_000, ...options });
    for (let i = 0; i < attack.options.subscriptions; i++) {
      attack.subscriptionIds.push(await subscribe(stack, merchant, endpoint.url(`/b/${i}`), ['products.created']));
    }
    return attack;
  }

  /** Switches back on what the engine switched off, then creates one wave of products. */
  async wave(): Promise<void> {
    const wave = (this.waves += 1);
    await this.enableAll();
    for (let i = 0; i < this.options.productsPerWave; i++) {
      this.productIds.push(await createProduct(this.stack, this.merchant, `B-${wave}-${i}`));
    }
  }

  /** Waves, one every `waveEveryMs`, until stop(). */
  start(): void {
    this.running ??= (async () => {
      while (!this.stopping) {
        const next = Date.now() + this.options.waveEveryMs;
        await this.wave();
        const left = next - Date.now();
        if (left > 0 && !this.stopping) await this.pause(left);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wakeUp?.();
    await this.running;
  }

  /** The wait between waves; stop() cuts it short. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = done;
    });
  }

  /** B's subscriptions as they are now. */
  async subscriptions(): Promise<any[]> {
    const found: any[] = [];
    for (let cursor: string | null = null; ;) {
      const page = await api(this.stack, this.merchant, 'GET', `${SUBSCRIPTIONS}?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(page.status, 200, page.text);
      found.push(...page.body.data);
      cursor = page.body.next_cursor;
      if (!cursor) return found;
    }
  }

  private async enableAll(): Promise<void> {
    for (const subscription of await this.subscriptions()) {
      if (subscription.status === 'enabled') continue;
      const enabled = await api(this.stack, this.merchant, 'PATCH', `${SUBSCRIPTIONS}/${subscription.id}`, { status: 'enabled' });
      assert.equal(enabled.status, 200, enabled.text);
    }
  }
}

/** Every delivery of a merchant, from the delivery log (newest first). */
export async function allDeliveries(stack: Stack, merchant: TestMerchant): Promise<any[]> {
  const found: any[] = [];
  for (let cursor: string | null = null; ;) {
    const page = await api(stack, merchant, 'GET', `/api/v1/webhooks/deliveries?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    assert.equal(page.status, 200, page.text);
    found.push(...page.body.data);
    cursor = page.body.next_cursor;
    if (!cursor) return found;
  }
}

/** One delivery with every attempt. */
export async function deliveryWithAttempts(stack: Stack, merchant: TestMerchant, id: string): Promise<any> {
  const response = await api(stack, merchant, 'GET', `/api/v1/webhooks/deliveries/${id}`);
  assert.equal(response.status, 200, response.text);
  return response.body;
}

/** Where a delivery's latency went, from the delivery log (ms). */
export interface DeliveryStages {
  /** Event `created_at` → its delivery made by fan-out: the outbox relay, the bus and fan-out. */
  toFanOut: number;
  /** Delivery made → its first attempt started: waiting to be claimed. */
  toClaim: number;
  /** First attempt started → the request at the receiver. */
  toReceiver: number;
}

/** The stages of each product's delivery to the receiver's subscription, in product order. */
export async function deliveryStages(stack: Stack, merchant: TestMerchant, receiver: WebhookReceiver, productIds: string[]): Promise<DeliveryStages[]> {
  const byProduct = new Map(
    receiver.received.filter((request) => request.json?.topic === 'products.created').map((request) => [request.json.data.object.id as string, request]),
  );
  const logged = new Map((await allDeliveries(stack, merchant)).map((delivery) => [delivery.event_id as string, delivery]));
  const stages: DeliveryStages[] = [];
  for (const productId of productIds) {
    const request = byProduct.get(productId)!;
    const delivery = await deliveryWithAttempts(stack, merchant, logged.get(request.json.id)!.id);
    const made = Date.parse(delivery.created_at);
    const started = Date.parse(delivery.attempts[0].started_at);
    stages.push({ toFanOut: made - Date.parse(request.json.created_at), toClaim: started - made, toReceiver: request.receivedAt.getTime() - started });
  }
  return stages;
}

export interface DeliveryNeighboursOptions {
  /** A's deliveries timed per phase. */
  samples: number;
  /** A creates one product every so many ms: a steady load, each delivery timed on its own. */
  intervalMs: number;
  /** B's attack; a wave each time the last one's requests time out keeps B's requests hanging throughout. */
  attack: Required<HangingAttackOptions>;
}

export interface DeliveryNeighbours {
  quiet: LatencyFigures;
  attacked: LatencyFigures;
  attack: HangingEndpointsAttack;
  attackedIds: string[];
  /** The share of 50 ms samples in which B had requests hanging while A was measured, and the most at once. */
  holding: number;
  heldMost: number;
}

/**
 * The comparison of the neighbours test and bench: A's deliveries to `fast` quiet, then while B's
 * subscriptions to `hanging` are fed waves of products. A subscribes to products.created at `fast`.
 */
export async function measureDeliveryNeighbours(
  stack: Stack,
  merchants: { a: TestMerchant; b: TestMerchant },
  endpoints: { fast: WebhookReceiver; hanging: HangingEndpoint },
  options: DeliveryNeighboursOptions,
): Promise<DeliveryNeighbours> {
  const { a, b } = merchants;
  const { fast, hanging } = endpoints;
  const paced = (count: number, skuPrefix: string) => createProductsPaced(stack, a, { count, intervalMs: options.intervalMs, skuPrefix });
  await subscribe(stack, a, fast.url(), ['products.created']);
  // A warm start (the endpoint's first answer moves it to the fast lane), then A alone.
  await deliveryLatencies(fast, await paced(5, 'A-WARM'), 60_000);
  const quiet = latencyFigures(await deliveryLatencies(fast, await paced(options.samples, 'A-QUIET'), 60_000));

  const attack = await HangingEndpointsAttack.prepare(stack, b, hanging, options.attack);
  await attack.wave();
  await hanging.waitUntil(() => hanging.open > 0, 30_000, "B's first requests hanging");
  attack.start();
  let attackedIds: string[];
  const held: number[] = [];
  const sampling = setInterval(() => held.push(hanging.open), 50);
  try {
    attackedIds = await paced(options.samples, 'A-ATTACKED');
  } finally {
    clearInterval(sampling);
    await attack.stop();
  }
  const attacked = latencyFigures(await deliveryLatencies(fast, attackedIds, 60_000));
  return { quiet, attacked, attack, attackedIds, holding: held.filter((count) => count > 0).length / held.length, heldMost: Math.max(...held) };
}
