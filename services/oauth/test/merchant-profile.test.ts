import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createContractValidator } from '@merx/contracts';
import { API_AUDIENCE, createJwksTokenVerifier, createLogger, createPgliteDb, MemoryBus, newId, openPglite, type Db, type MerxEvent } from '@merx/kit';
import { createScratchDatabase } from '@merx/kit/testing';
import { provisionMerchant, startOauth, type RunningOauth } from '../src/index.js';
import { HandledDeliveries } from '@merx/kit/testing';

const ISSUER = 'http://localhost:8080/oauth';
const OPERATOR = randomBytes(32).toString('hex');
const contract = createContractValidator();

type WireMerchant = Record<string, unknown> & { id: string; version: number; updated_at: string };

/**
 * A merchants.updated as the merchants service publishes it for the merchant's PATCH: its own
 * copy of the merchant (which may lag behind oauth's on mode, plan and status) with the changed
 * profile fields, and `previous` naming them.
 */
function profileChange(merchant: WireMerchant, changes: Record<string, unknown>, version: number, standing: Record<string, unknown> = {}): MerxEvent {
  const updatedAt = new Date(Date.parse(merchant.updated_at) + 60_000).toISOString();
  const event: MerxEvent = {
    id: newId('evt'),
    topic: 'merchants.updated',
    merchant_id: merchant.id,
    created_at: updatedAt,
    api_version: 'v1',
    data: {
      object: { ...merchant, ...standing, ...changes, version, updated_at: updatedAt },
      previous: Object.fromEntries(Object.keys(changes).map((field) => [field, merchant[field]])),
    },
    context: { request_id: newId('req'), actor: { type: 'api_key', id: 'mx_test_ProfileEditor00001' } },
  };
  assert.deepEqual(contract.validateEvent(event), [], 'the test event is one the catalogue allows');
  return event;
}

for (const kind of ['PostgreSQL', 'PGlite'] as const) {
  describe(`oauth: mirroring the merchant's profile from merchants.updated (${kind})`, function () {
    this.timeout(30_000);
    let db: Db;
    let closeDb: () => Promise<void>;
    let bus: MemoryBus;
    let handled: HandledDeliveries;
    let oauth: RunningOauth;

    before(async () => {
      if (kind === 'PostgreSQL') {
        const scratch = await createScratchDatabase('oauth_profile_test');
        db = scratch.db;
        closeDb = scratch.drop;
      } else {
        const pglite = await openPglite(undefined);
        db = createPgliteDb(pglite);
        closeDb = () => pglite.close();
      }
      bus = new MemoryBus();
      handled = new HandledDeliveries();
      let url = '';
      oauth = await startOauth({
        db,
        bus: handled.watch(bus),
        logger: createLogger('oauth', 'silent'),
        issuer: ISSUER,
        audience: API_AUDIENCE,
        accessTokenTtlSeconds: 900,
        operatorToken: OPERATOR,
        cookieSecret: randomBytes(32).toString('hex'),
        verifier: createJwksTokenVerifier({ jwksUrl: () => `${url}/oauth/jwks`, issuer: ISSUER, audience: API_AUDIENCE }),
        port: 0,
        host: '127.0.0.1',
      });
      url = oauth.url;
    });
    after(async () => {
      await oauth?.stop();
      await bus?.close();
      await closeDb?.();
    });

    async function merchant(name: string): Promise<WireMerchant> {
      const provisioned = await provisionMerchant(oauth.outbox, { name, owner: { email: `owner-${randomBytes(4).toString('hex')}@example.com` } });
      return provisioned.merchant as WireMerchant;
    }

    /** The operator's PATCH: changes standing, and with the current standing changes nothing and shows the merchant. */
    async function operatorPatch(id: string, body: Record<string, unknown>): Promise<WireMerchant> {
      const path = `/admin/v1/merchants/${id}`;
      const response = await fetch(`${oauth.url}${path}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      assert.deepEqual(contract.validateResponse({ method: 'PATCH', path, status: response.status, contentType: response.headers.get('content-type'), body: text, headers: response.headers }), []);
      assert.equal(response.status, 200, text);
      return JSON.parse(text) as WireMerchant;
    }

    async function deliver(event: MerxEvent): Promise<void> {
      const done = handled.until(event.id, handled.count(event.id) + 1);
      await bus.publish([event]);
      await done;
    }

    it('copies name, default currency and time zone, takes the greater version, and never mode, plan or status', async () => {
      const before = await merchant('Profile shop');
      const change = profileChange(before, { name: 'Renamed shop', default_currency: 'EUR', timezone: 'Europe/Berlin' }, 4, { mode: 'live', plan: 'scale', status: 'suspended' });

      await deliver(change);

      const shown = await operatorPatch(before.id, { status: 'active' });
      assert.deepEqual(shown, { ...before, name: 'Renamed shop', default_currency: 'EUR', timezone: 'Europe/Berlin', version: 4, updated_at: change.data.object.updated_at });
      // oauth's own next change numbers from there, and its event shows the copy.
      const replanned = await operatorPatch(before.id, { plan: 'standard' });
      assert.deepEqual([replanned.name, replanned.default_currency, replanned.plan, replanned.version], ['Renamed shop', 'EUR', 'standard', 5]);
      const announced = await handled.find((event) => event.topic === 'merchants.updated' && event.merchant_id === before.id && event.data.previous?.plan !== undefined);
      assert.deepEqual(announced.data, { object: replanned, previous: { plan: 'sandbox' } });
    });

    it('keeps its own greater version when the change carries a smaller one, and a redelivery changes nothing', async () => {
      const before = await merchant('Versions shop');
      await operatorPatch(before.id, { plan: 'standard' });
      const current = await operatorPatch(before.id, { plan: 'scale' });
      assert.equal(current.version, 3);
      const first = profileChange(before, { name: 'Second name' }, 2);
      await deliver(first);
      assert.deepEqual(await operatorPatch(before.id, { status: 'active' }), { ...current, name: 'Second name', updated_at: first.data.object.updated_at });

      const second = profileChange({ ...before, name: 'Second name' }, { timezone: 'Asia/Tokyo', name: 'Third name' }, 4);
      await deliver(second);
      await deliver(first);

      const shown = await operatorPatch(before.id, { status: 'active' });
      assert.deepEqual([shown.name, shown.timezone, shown.plan, shown.version], ['Third name', 'Asia/Tokyo', 'scale', 4]);
    });

    it('does not apply back the merchants.updated it emitted itself for a standing change', async () => {
      const before = await merchant('Own events shop');
      const suspended = await operatorPatch(before.id, { status: 'suspended' });
      const own = await handled.find((event) => event.topic === 'merchants.updated' && event.merchant_id === before.id);
      assert.deepEqual(own.data, { object: suspended, previous: { status: 'active' } });
      // A late copy of such an event carries whatever profile oauth had when it was emitted;
      // applying it would put an old name back over a newer one.
      const late: MerxEvent = { ...own, id: newId('evt'), data: { object: { ...suspended, name: 'Old name', timezone: 'America/New_York', version: 9 }, previous: { status: 'active', plan: 'sandbox' } } };
      assert.deepEqual(contract.validateEvent(late), []);

      await deliver(late);

      assert.deepEqual(await operatorPatch(before.id, { status: 'suspended' }), suspended);
      const { rows } = await db.query('SELECT event_id FROM oauth.inbox WHERE event_id = ANY($1)', [[own.id, late.id]]);
      assert.deepEqual(rows, [], 'nothing of its own is recorded as mirrored');
    });
  });
}
