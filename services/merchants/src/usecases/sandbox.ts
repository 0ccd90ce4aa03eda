import {
  buildEvent,
  Conflict,
  newId,
  NotFound,
  recordInInbox,
  trustedMerchantId,
  type Db,
  type Emit,
  type MerchantId,
  type MerxEvent,
  type Outbox,
  type Queryable,
} from '@merx/kit';
import type { ConnectionFields } from '../domain/connection.js';
import type { DestinationFields } from '../domain/destination.js';
import type { RuleFields } from '../domain/rule.js';
import { newReset, presentReset, validateResetRequest, withReport, type ResetService, type SandboxReset } from '../domain/sandbox-reset.js';
import type { SourceFields } from '../domain/source.js';
import { generateSigningSecret } from '@merx/kit';
import { MERCHANTS_SCHEMA } from '../store/migrations.js';
import { destinationRemovedEvent } from './destination-endpoints.js';
import { findResetForMerchant, insertResetForMerchant, saveResetProgressForMerchant, wipeMerchantData } from '../store/resets-store.js';
import type { ConfigResourceUseCases, Requester } from './config-resources.js';

export const SANDBOX_RESET_CONSUMER = 'merchants.sandbox_reset';
export const RESET_REPORTS_CONSUMER = 'merchants.reset_reports';

export interface SeedingUseCases {
  sources: ConfigResourceUseCases<SourceFields>;
  destinations: ConfigResourceUseCases<DestinationFields>;
  rules: ConfigResourceUseCases<RuleFields>;
  connections: ConfigResourceUseCases<ConnectionFields>;
}

/**
 * The fixtures a reset with `seed: true` leaves: an order source wired to a paused ERP
 * destination through one rule, so a developer sees the whole chain at once. The destination is
 * paused because its URL is a placeholder: nothing is sent until the merchant points it at their
 * own endpoint and activates it.
 */
async function seedConfiguration(tx: Queryable, emit: Emit, merchantId: MerchantId, resources: SeedingUseCases): Promise<Record<string, number>> {
  const source = await resources.sources.insert(tx, emit, merchantId, { name: 'Sandbox storefront', kind: 'storefront', status: 'active', settings: {} });
  const destination = await resources.destinations.insert(tx, emit, merchantId, {
    name: 'Sandbox ERP',
    kind: 'webhook',
    url: 'https://erp.example.com/merx/orders',
    status: 'paused',
    disabled_reason: null,
    secret: generateSigningSecret(),
  });
  const rule = await resources.rules.insert(tx, emit, merchantId, {
    name: 'Large EUR orders',
    event_types: ['orders.created'],
    condition: 'data.total >= 100.0 && data.currency == "EUR"',
    action: 'forward',
    transform: null,
    enabled: true,
  });
  await resources.connections.insert(tx, emit, merchantId, {
    name: 'Storefront orders to the ERP',
    source_id: source.id,
    destination_id: destination.id,
    rule_ids: [rule.id],
    event_types: ['orders.created'],
    status: 'active',
  });
  return { sources: 1, destinations: 1, rules: 1, connections: 1 };
}

export function sandboxUseCases({ db, outbox, resources, now = () => new Date() }: { db: Db; outbox: Outbox; resources: SeedingUseCases; now?: () => Date }) {
  return {
    /** Sandbox merchants only: a live merchant's data is never wiped through the API. */
    async requestReset(requester: Requester, body: unknown): Promise<SandboxReset> {
      const { seed } = validateResetRequest(body);
      if (requester.mode !== 'sandbox') throw new Conflict('Only sandbox merchants can be reset; this merchant is live.');
      const reset = newReset(newId('rst'), requester.merchantId, seed, now());
      await outbox.transaction(async (tx, emit) => {
        await insertResetForMerchant(tx, requester.merchantId, reset);
        emit(buildEvent('sandbox.reset', requester.merchantId, { object: presentReset(reset) }));
      });
      return reset;
    },

    async getReset(merchantId: MerchantId, id: string): Promise<SandboxReset> {
      const reset = await findResetForMerchant(db, merchantId, id);
      if (!reset) throw new NotFound('sandbox reset', id);
      return reset;
    },

    /** This service's own part of a reset: wipe, seed if asked, report. Once per reset event. */
    async resetMerchantData(event: MerxEvent): Promise<void> {
      const merchantId = trustedMerchantId(event.merchant_id);
      const { id, seed } = event.data.object as { id: string; seed: boolean };
      await outbox.transaction(async (tx, emit) => {
        if (!(await recordInInbox(tx, MERCHANTS_SCHEMA, SANDBOX_RESET_CONSUMER, event))) return;
        const { removed, destinations } = await wipeMerchantData(tx, merchantId);
        // Each wiped destination is removed from the delivery engine like a deleted one, with a
        // version its earlier syncs cannot beat, so no replica brings it back and none wipes
        // the destinations seeded below, whatever order the replicas handle these messages in.
        for (const destination of destinations) emit(destinationRemovedEvent(merchantId, destination));
        const seeded = seed ? await seedConfiguration(tx, emit, merchantId, resources) : {};
        emit(
          buildEvent('internal.sandbox_service_reset', merchantId, {
            object: { id, object: 'sandbox_service_reset', service: 'merchants', removed, seeded, completed_at: now().toISOString() },
          }),
        );
      });
    },

    /** A service's report on a reset; the last one completes it and announces sandbox.reset_completed. */
    async recordServiceReport(event: MerxEvent): Promise<void> {
      const merchantId = trustedMerchantId(event.merchant_id);
      const report = event.data.object as {
        id: string;
        service: ResetService;
        removed: Record<string, number>;
        seeded: Record<string, number>;
        completed_at: string;
      };
      await outbox.transaction(async (tx, emit) => {
        if (!(await recordInInbox(tx, MERCHANTS_SCHEMA, RESET_REPORTS_CONSUMER, event))) return;
        const reset = await findResetForMerchant(tx, merchantId, report.id, { forUpdate: true });
        if (!reset) return; // a reset of another deployment sharing the broker, or one purged since
        const updated = withReport(
          reset,
          { service: report.service, removed: report.removed, seeded: report.seeded, completed_at: report.completed_at },
          now(),
        );
        await saveResetProgressForMerchant(tx, merchantId, updated);
        if (updated.status === 'completed' && reset.status !== 'completed')
          emit(buildEvent('sandbox.reset_completed', merchantId, { object: presentReset(updated) }));
      });
    },
  };
}

export type SandboxUseCases = ReturnType<typeof sandboxUseCases>;
