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

type WireMerchant = Record<string, unknown> & { id: string; version: number; profile_version: number; standing_version: number; updated_at: string };

/**
 * A merchants.updated as the merchants service publishes it for the merchant's PATCH: its own
 * merchant (whose standing copy may lag behind oauth's) with the changed profile fields, the
 * profile's version, and `previous` naming them.
 */
function profileChange(merchant: WireMerchant, changes: Record<string, unknown>, profileVersion: number, standing: Record<string, unknown> = {}): MerxEvent {
  const updatedAt = new Date(Date.parse(merchant.updated_at) + 60_000 * profileVersion).toISOString();
  const event: MerxEvent = {
    id: newId('evt'),
    topic: 'merchants.updated',
    merchant_id: merchant.id,
    created_at: updatedAt,
    api_version: 'v1',
    data: {
      object: {
        ...merchant,
        ...standing,
        ...changes,
        profile_version: profileVersion,
        version: profileVersion + merchant.standing_version - 1,
        updated_at: updatedAt,
      },
      previous: Object.fromEntries(Object.keys(changes).map((field) => [field, merchant[field]])),
    },
    context: { request_id: newId('req'), actor: { type: 'api_key', id: 'mx_test_ProfileEditor00001' } },
  };
  assert.deepEqual(contract.validateEvent(event), [], 'the test event is one the catalogue allows');
  return event;
}

for (const kind of ['PostgreSQL', 'PGlite'] as const) {
  describe(`oauth: mirroring the merchant's profile from merchants.updated (${kind})`, function () {
    this.timeout(90_000);
    let db: Db;
    let closeDb: () => Promise<void>;
    let bus: MemoryBus;
    let handled: HandledDeliveries;
    let oauth: RunningOauth;
    const published: MerxEvent[] = [];
    const delivered = new Set<string>();
    const onPublished = new Set<() => void>();

    /** What oauth itself published for a merchant, once there are `count` of them. */
    async function publishedFor(merchantId: string, count: number): Promise<MerxEvent[]> {
      const mine = () => published.filter((event) => event.merchant_id === merchantId && !delivered.has(event.id));
      await new Promise<void>((resolve) => {
        const check = () => {
          if (mine().length < count) return;
          onPublished.delete(check);
          resolve();
        };
        onPublished.add(check);
        check();
      });
      return mine();
    }

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
      published.length = 0;
      await bus.consume({ queue: 'test-observer', bindings: ['#'], prefetch: 1000 }, async (event) => {
        published.push(event);
        for (const check of onPublished) check();
      });
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
      assert.deepEqual(
        contract.validateResponse({
          method: 'PATCH',
          path,
          status: response.status,
          contentType: response.headers.get('content-type'),
          body: text,
          headers: response.headers,
        }),
        [],
      );
      assert.equal(response.status, 200, text);
      return JSON.parse(text) as WireMerchant;
    }

    async function deliver(event: MerxEvent): Promise<void> {
      delivered.add(event.id);
      const done = handled.until(event.id, handled.count(event.id) + 1);
      await bus.publish([event]);
      await done;
    }

    it('replaces its copy of the profile whole from merchants.updated, and never mode, plan or status', async () => {
      const before = await merchant('Profile shop');
      assert.deepEqual([before.version, before.profile_version, before.standing_version], [1, 1, 1]);
      const change = profileChange(before, { name: 'Renamed shop', default_currency: 'EUR', timezone: 'Europe/Berlin' }, 2, {
        mode: 'live',
        plan: 'scale',
        status: 'suspended',
      });

      await deliver(change);

      const shown = await operatorPatch(before.id, { status: 'active' });
      assert.deepEqual(shown, {
        ...before,
        name: 'Renamed shop',
        default_currency: 'EUR',
        timezone: 'Europe/Berlin',
        version: 2,
        profile_version: 2,
        updated_at: change.data.object.updated_at,
      });
      // oauth's own next change moves the standing on; its event carries the standing alone.
      const replanned = await operatorPatch(before.id, { plan: 'standard' });
      assert.deepEqual(
        [replanned.name, replanned.plan, replanned.version, replanned.profile_version, replanned.standing_version],
        ['Renamed shop', 'standard', 3, 2, 2],
      );
      const announced = (await publishedFor(before.id, 3)).find((event) => event.topic === 'merchants.standing_changed')!;
      assert.deepEqual(announced.data, {
        object: {
          object: 'merchant_standing',
          id: before.id,
          mode: 'sandbox',
          plan: 'standard',
          status: 'active',
          version: 2,
          updated_at: replanned.updated_at,
        },
        previous: { plan: 'sandbox' },
      });
      assert.deepEqual(contract.validateEvent(announced), []);
    });

    it('publishes merchants.standing_changed for suspend, reactivate and re-plan, and never merchants.updated', async () => {
      const before = await merchant('Standing shop');
      const suspended = await operatorPatch(before.id, { status: 'suspended' });
      const both = await operatorPatch(before.id, { status: 'active', plan: 'scale' });
      assert.deepEqual([suspended.standing_version, both.standing_version, both.profile_version], [2, 3, 1]);
      const own = (await publishedFor(before.id, 4)).filter((event) => event.topic !== 'merchants.created' && event.topic !== 'api_keys.created');
      assert.deepEqual(
        own.map((event) => [event.topic, event.data.object.status, event.data.object.plan, event.data.object.version, event.data.previous]),
        [
          ['merchants.standing_changed', 'suspended', 'sandbox', 2, { status: 'active' }],
          ['merchants.standing_changed', 'active', 'scale', 3, { status: 'suspended', plan: 'sandbox' }],
        ],
      );
      for (const event of own) assert.equal('name' in event.data.object, false, 'a standing event carries no profile');
    });

    it('keeps the newer profile whatever order the changes arrive in, and a redelivery changes nothing', async () => {
      const before = await merchant('Versions shop');
      const current = await operatorPatch(before.id, { plan: 'scale' });
      const second = profileChange(before, { name: 'Second name' }, 2);
      const third = profileChange({ ...before, name: 'Second name' }, { timezone: 'Asia/Tokyo', name: 'Third name' }, 3);
      await deliver(third);
      await deliver(second);
      await deliver(third);

      const shown = await operatorPatch(before.id, { plan: 'scale' });
      assert.deepEqual(shown, {
        ...current,
        name: 'Third name',
        timezone: 'Asia/Tokyo',
        profile_version: 3,
        version: 4,
        updated_at: third.data.object.updated_at,
      });
      const { rows } = await db.query<{ event_id: string }>('SELECT event_id FROM oauth.inbox WHERE event_id = ANY($1) ORDER BY event_id', [
        [second.id, third.id],
      ]);
      assert.equal(rows.length, 2, 'the late change was handled, and changed nothing');
    });

    it('takes a profile change from before profile_version by its version (in flight during an upgrade), and ignores a standing merchants.updated of that release', async () => {
      const before = await merchant('Legacy shop');
      const legacy = profileChange(before, { name: 'Legacy rename' }, 2);
      delete legacy.data.object.profile_version;
      delete legacy.data.object.standing_version;
      await deliver(legacy);
      const oldStanding = profileChange(before, {}, 5, { name: 'Not a profile change', status: 'suspended' });
      oldStanding.data.previous = { status: 'active' };
      await deliver(oldStanding);
      const shown = await operatorPatch(before.id, { status: 'active' });
      assert.deepEqual([shown.name, shown.status, shown.profile_version], ['Legacy rename', 'active', 2]);
    });
  });
}
