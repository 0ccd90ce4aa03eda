import { randomBytes, randomUUID } from 'node:crypto';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { API_AUDIENCE } from './runtime.js';
import { createTokenVerifier, type TokenVerifier } from './auth.js';
import { createPostgresDb, type Db } from './db.js';
import type { Bus } from './bus.js';
import type { MerxEvent } from './events.js';
import { SecretKeyRing } from './sealed-secrets.js';

export * from './testing-browser.js';

/**
 * Test support for service component suites (`@merx/kit/testing`): kept out of the main entry
 * point so no production code path can reach it.
 */

const ADMIN_URL = process.env.MERX_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A PostgreSQL database of its own for one suite, dropped at the end: runs never see each other's rows. */
export async function createScratchDatabase(prefix: string, maxConnections = 10): Promise<{ db: Db; url: string; drop(): Promise<void> }> {
  const admin = createPostgresDb(ADMIN_URL, { maxConnections: 1 });
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const db = createPostgresDb(url.toString(), { maxConnections, applicationName: prefix });
  return {
    db,
    url: url.toString(),
    async drop() {
      await db.close();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.close();
    },
  };
}

export interface TestTokenIssuer {
  verifier: TokenVerifier;
  /** An access token as the oauth service would mint it for this merchant. */
  sign(claims: { merchantId: string; scope: string; mode?: 'sandbox' | 'live' }): Promise<string>;
}

export const TEST_ISSUER = 'http://localhost:8080/oauth';

/** A signing key and the verifier that trusts it, for services tested without the oauth service. */
export async function createTestTokenIssuer(): Promise<TestTokenIssuer> {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const kid = `test-${randomBytes(4).toString('hex')}`;
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  const verifier = createTokenVerifier(createLocalJWKSet({ keys: [jwk] }), { issuer: TEST_ISSUER, audience: API_AUDIENCE });
  return {
    verifier,
    async sign({ merchantId, scope, mode }) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ merchant_id: merchantId, client_id: `mx_test_${randomBytes(8).toString('hex')}`, scope, ...(mode ? { merchant_mode: mode } : {}) })
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
        .setIssuer(TEST_ISSUER)
        .setAudience(API_AUDIENCE)
        .setJti(randomUUID())
        .setIssuedAt(now)
        .setExpirationTime(now + 900)
        .sign(privateKey);
    },
  };
}

/** Time that moves only when the test says so. */
export class ManualClock {
  private current: number;
  constructor(start = new Date('2026-01-05T09:00:00.000Z')) {
    this.current = start.getTime();
  }
  now = (): Date => new Date(this.current);
  advance(ms: number): void {
    this.current += ms;
  }
  set(date: Date): void {
    this.current = date.getTime();
  }
}

const WAIT_LIMIT_MS = 10_000;

/**
 * Records the deliveries the service's own consumers finished handling (applied, skipped or
 * dropped as a duplicate), so a test waits for exactly that instead of for a time-out.
 */
export class HandledDeliveries {
  private readonly handled: MerxEvent[] = [];
  private readonly waiters = new Set<() => void>();

  /** The bus as the service sees it: the same bus, with the end of every successful handling recorded. */
  watch(bus: Bus): Bus {
    return {
      kind: bus.kind,
      publish: (events) => bus.publish(events),
      consume: (options, handler) =>
        bus.consume(options, async (event, info) => {
          await handler(event, info);
          this.handled.push(event);
          for (const check of this.waiters) check();
        }),
      isConnected: () => bus.isConnected(),
      poison: bus.poison,
      close: () => bus.close(),
    };
  }

  count(eventId: string): number {
    return this.handled.filter((event) => event.id === eventId).length;
  }

  /** Resolves once `times` deliveries of the event have been handled. */
  until(eventId: string, times = 1): Promise<void> {
    return this.waitFor(
      () => this.count(eventId) >= times,
      () => `${eventId} handled ${times} times (${this.count(eventId)} so far)`,
    );
  }

  /** The first handled event that matches, once there is one. */
  async find(matches: (event: MerxEvent) => boolean): Promise<MerxEvent> {
    let found: MerxEvent | undefined;
    await this.waitFor(
      () => (found = this.handled.find(matches)) !== undefined,
      () => 'a matching event handled',
    );
    return found!;
  }

  private waitFor(done: () => boolean, what: () => string): Promise<void> {
    if (done()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!done()) return;
        this.waiters.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`waited ${WAIT_LIMIT_MS} ms for ${what()}`));
      }, WAIT_LIMIT_MS);
      this.waiters.add(check);
    });
  }
}

/** A response as the component suites read it: the raw text and, for JSON, the parsed body. */
export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  // Tests read arbitrary members of JSON answers.
  body: any;
}

/** The slice of the contract validator the test helpers need (kept structural: no import cycle). */
export interface ContractChecks {
  validateEvent(event: unknown): string[];
  validateResponse(response: { method: string; path: string; status: number; contentType: string | null; body: unknown; headers: Headers }): string[];
}

/**
 * One merchant's view of a service over real HTTP, every answer checked against the OpenAPI
 * document. Suites extend it with helpers for their own resources.
 */
export class ContractClient {
  constructor(
    private readonly baseUrl: string,
    readonly merchantId: string,
    readonly token: string,
    private readonly contract: ContractChecks,
  ) {}

  async request(method: string, path: string, json?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> {
    const init: RequestInit = { method, headers: { authorization: `Bearer ${this.token}`, ...headers } };
    if (json !== undefined) {
      init.body = JSON.stringify(json);
      (init.headers as Record<string, string>)['content-type'] = 'application/json';
    }
    const response = await fetch(`${this.baseUrl}${path}`, init);
    const text = await response.text();
    const problems = this.contract.validateResponse({
      method,
      path,
      status: response.status,
      contentType: response.headers.get('content-type'),
      body: text,
      headers: response.headers,
    });
    if (problems.length > 0) throw new Error(`${method} ${path} answered outside the contract:\n${problems.join('\n')}\n${text.slice(0, 1500)}`);
    return {
      status: response.status,
      headers: response.headers,
      text,
      body: text && /json/.test(response.headers.get('content-type') ?? '') ? JSON.parse(text) : undefined,
    };
  }

  get = (path: string) => this.request('GET', path);
  post = (path: string, json?: unknown, headers?: Record<string, string>) => this.request('POST', path, json, headers);
  patch = (path: string, json: unknown, headers?: Record<string, string>) => this.request('PATCH', path, json, headers);
  delete = (path: string, headers?: Record<string, string>) => this.request('DELETE', path, undefined, headers);
}

/** The topic of the marker event a suite publishes through the outbox to prove everything before it arrived. */
export const TEST_FLUSH_TOPIC = 'test.flush';

/**
 * Everything a service under test publishes, each event checked against the public or internal
 * catalogue as it arrives. `awaitFlush` proves that nothing committed before the flush marker is
 * still on its way, so "no event" can be asserted without waiting for a time-out.
 */
export class EventLog {
  readonly events: MerxEvent[] = [];
  readonly problems: string[] = [];
  private readonly flushes = new Map<string, () => void>();

  constructor(private readonly contract: Pick<ContractChecks, 'validateEvent'>) {}

  receive(event: MerxEvent): void {
    if (event.topic === TEST_FLUSH_TOPIC) {
      this.flushes.get(event.id)?.();
      this.flushes.delete(event.id);
      return;
    }
    this.events.push(event);
    this.problems.push(...this.contract.validateEvent(event));
  }

  awaitFlush(id: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`flush ${id} did not arrive within ${WAIT_LIMIT_MS} ms`)), WAIT_LIMIT_MS);
      this.flushes.set(id, () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Contract problems found so far, emptied so one bad event fails one test, not every later one. */
  takeProblems(): string[] {
    return this.problems.splice(0);
  }

  of(merchantId: string, topic?: string): MerxEvent[] {
    return this.events.filter((event) => event.merchant_id === merchantId && (topic === undefined || event.topic === topic));
  }
}
export * from './testing-otlp.js';
export * from './testing-plans.js';

let testKeys: SecretKeyRing | undefined;

/**
 * The key ring a test process's services seal signing secrets with: one per process, random, as
 * both services of a deployment share one (a destination's secret crosses the bus sealed).
 */
export function testSecretKeys(): SecretKeyRing {
  testKeys ??= SecretKeyRing.generate('test');
  return testKeys;
}
