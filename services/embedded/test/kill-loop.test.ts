import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '@merx/kit';
import type { DevCredentials } from '../src/index.js';
import { launch, running, tokenFor, type Launched } from './launch.js';

interface Page<Item> {
  data: Item[];
  has_more: boolean;
  next_cursor: string | null;
}

/** Every item of a paginated list. */
async function listAll<Item>(baseUrl: string, token: string, pathAndQuery: string): Promise<Item[]> {
  const items: Item[] = [];
  let cursor: string | null = null;
  do {
    const separator = pathAndQuery.includes('?') ? '&' : '?';
    const response = await fetch(`${baseUrl}${pathAndQuery}${separator}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(response.status, 200, await response.clone().text());
    const page = (await response.json()) as Page<Item>;
    items.push(...page.data);
    cursor = page.has_more ? page.next_cursor : null;
  } while (cursor);
  return items;
}

/**
 * Issue 12.7: an event the outbox handed to the embedded bus must survive a SIGKILL at any
 * instant, until every consumer has committed it. Products are created in a tight loop while
 * the process is killed at varied instants, several times over; after the last restart, every
 * product that got a 201 must exist, and every product that exists (committed, whether or not
 * its 201 reached the client before the kill) must have its `products.created` event and its
 * audit entry. The second set is where the loss showed: a product committed an instant before
 * the kill, its event taken from the outbox and not yet handled.
 */
describe('the embedded process killed while it writes', function () {
  this.timeout(600_000);
  let dataDir: string;
  let port: number;
  let merx: Launched | undefined;

  before(async () => {
    dataDir = path.join(await mkdtemp(path.join(tmpdir(), 'merx-kill-loop-')), 'data');
    port = await freePort();
  });

  after(async () => {
    merx?.child.kill('SIGKILL');
    await merx?.exited;
    await rm(path.dirname(dataDir), { recursive: true, force: true });
  });

  const start = async () => {
    merx = launch('main', { MERX_DATA_DIR: dataDir, PORT: String(port) });
    await running(merx);
    return merx;
  };

  it("loses no committed product's event or audit entry, whenever the kill comes", async () => {
    const acknowledged = new Map<string, string>(); // product id -> sku
    // Kill after these many ms of writing: early in a burst, mid-way, late; several rounds.
    const killAfterMs = [150, 400, 900, 60, 1_500];
    let credentials: DevCredentials | undefined;
    for (const [round, delay] of killAfterMs.entries()) {
      const launched = await start();
      credentials ??= JSON.parse(await readFile(path.join(dataDir, 'dev.json'), 'utf8')) as DevCredentials;
      const baseUrl = `http://localhost:${port}`;
      const token = await tokenFor(baseUrl, credentials.api_key);
      let killed = false;
      const writer = async (lane: number) => {
        for (let n = 0; !killed; n++) {
          const sku = `KILL-${round}-${lane}-${n}`;
          try {
            const response = await fetch(`${baseUrl}/api/v1/products`, {
              method: 'POST',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              body: JSON.stringify({ sku, title: `Killed ${sku}`, price: '1.00', currency: 'USD' }),
            });
            const body = (await response.json()) as { id?: string };
            if (response.status === 201) acknowledged.set(body.id!, sku);
          } catch {
            // The kill cut this request: it was never acknowledged, so nothing is owed for it.
          }
        }
      };
      const writers = [0, 1, 2, 3].map(writer);
      const before = acknowledged.size;
      // Write until the kill instant, but at least until a few creates of this round are acknowledged.
      const deadline = Date.now() + delay;
      while (Date.now() < deadline || acknowledged.size < before + 3) await new Promise((resolve) => setTimeout(resolve, 5));
      launched.child.kill('SIGKILL');
      killed = true;
      await launched.exited;
      await Promise.all(writers);
    }

    await start();
    const baseUrl = `http://localhost:${port}`;
    const token = await tokenFor(baseUrl, credentials!.api_key);
    const products = (await listAll<{ id: string }>(baseUrl, token, '/api/v1/products')).map((product) => product.id);
    assert.deepEqual(
      [...acknowledged.keys()].filter((id) => !products.includes(id)),
      [],
      'acknowledged products that are gone',
    );
    const missing = async () => {
      const events = await listAll<{ data: { object: { id: string } } }>(baseUrl, token, '/api/v1/events?topic=products.created');
      const entries = await listAll<{ resource: { id: string } }>(baseUrl, token, '/api/v1/audit?action=products.created');
      const withEvent = new Set(events.map((event) => event.data.object.id));
      const withEntry = new Set(entries.map((entry) => entry.resource.id));
      return {
        events: products.filter((id) => !withEvent.has(id)),
        entries: products.filter((id) => !withEntry.has(id)),
      };
    };
    // A restart delivers what the last run had not finished; give it the time to.
    const deadline = Date.now() + 60_000;
    let gaps = await missing();
    while ((gaps.events.length > 0 || gaps.entries.length > 0) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      gaps = await missing();
    }
    assert.ok(acknowledged.size > killAfterMs.length * 3, `only ${acknowledged.size} products were acknowledged`);
    assert.deepEqual(
      gaps,
      { events: [], entries: [] },
      `of ${products.length} committed products (${acknowledged.size} acknowledged), these lack their event or audit entry`,
    );
    const verification = await fetch(`${baseUrl}/api/v1/audit/verify`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(((await verification.json()) as { valid: boolean }).valid, true);
  });
});
