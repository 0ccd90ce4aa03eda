import { configFields, distributedServiceConfig, loadConfig, z } from '@merx/kit';
import { defaultFairShareLimits, defaultPoolSize, MAX_POOL_SIZE, type FairShareLimits } from './domain/rules/index.js';

/** How the merchants service behaves; validated before it opens a port. */
export interface MerchantsSettings {
  /** Destinations: the same address policy as the delivery engine that will call them. */
  allowPrivateAddresses: boolean;
  allowedPrivateHosts: string[];
  /** One connection's rules on one record may take this long before the record is not routed. */
  ruleTimeoutMs: number;
  /** Worker threads that run rules. */
  ruleWorkers: number;
  /** How the rule workers are shared between merchants. */
  ruleFairShare: FairShareLimits;
  /** Record events one merchant may have waiting for or in routing in one process; the rest wait in the routing backlog. */
  maxRoutingPendingPerMerchant: number;
}

const flag = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0'], { error: 'must be true or false' })
    .default(fallback ? 'true' : 'false')
    .transform((value) => value === 'true' || value === '1');

export const merchantsSettingsSchema = (defaults: { allowPrivate: boolean }) =>
  z.object({
    MERX_WEBHOOK_ALLOW_PRIVATE: flag(defaults.allowPrivate),
    MERX_WEBHOOK_ALLOWED_PRIVATE_HOSTS: z
      .string()
      .default('')
      .transform((text) =>
        text
          .split(',')
          .map((host) => host.trim().toLowerCase())
          .filter(Boolean),
      ),
    MERX_RULE_TIMEOUT_MS: configFields.positiveInt(100),
    // Absent: one per core (at least 2); then one fewer than that per merchant.
    MERX_ROUTING_WORKERS: z.coerce.number().int().min(1).max(MAX_POOL_SIZE).optional(),
    MERX_ROUTING_MAX_RUNNING_PER_MERCHANT: z.coerce.number().int().positive().optional(),
    MERX_ROUTING_WORKER_MS_PER_SECOND: configFields.positiveInt(500),
    MERX_ROUTING_WORKER_BURST_MS: configFields.positiveInt(2_000),
    MERX_ROUTING_MAX_PENDING_PER_MERCHANT: configFields.positiveInt(128),
  });

export function toMerchantsSettings(config: z.infer<ReturnType<typeof merchantsSettingsSchema>>): MerchantsSettings {
  const ruleWorkers = config.MERX_ROUTING_WORKERS ?? defaultPoolSize();
  return {
    allowPrivateAddresses: config.MERX_WEBHOOK_ALLOW_PRIVATE,
    allowedPrivateHosts: config.MERX_WEBHOOK_ALLOWED_PRIVATE_HOSTS,
    ruleTimeoutMs: config.MERX_RULE_TIMEOUT_MS,
    ruleWorkers,
    ruleFairShare: {
      maxRunningPerMerchant: Math.min(ruleWorkers, config.MERX_ROUTING_MAX_RUNNING_PER_MERCHANT ?? defaultFairShareLimits(ruleWorkers).maxRunningPerMerchant),
      workerMsPerSecond: config.MERX_ROUTING_WORKER_MS_PER_SECOND,
      burstMs: config.MERX_ROUTING_WORKER_BURST_MS,
    },
    maxRoutingPendingPerMerchant: config.MERX_ROUTING_MAX_PENDING_PER_MERCHANT,
  };
}

/** Settings from an environment; the embedded mode allows private destinations by default (a laptop's receiver). */
export function merchantsSettingsFromEnv(env: Record<string, string | undefined>, defaults = { allowPrivate: false }): MerchantsSettings {
  return toMerchantsSettings(loadConfig('merchants', merchantsSettingsSchema(defaults), env));
}

// GRPC_PORT: merx.v1.RecordService for the edge, on the service network only.
export const merchantsServiceConfig = distributedServiceConfig(3005, 9005).extend({
  ...merchantsSettingsSchema({ allowPrivate: false }).shape,
  GRPC_PORT: configFields.port(50055),
  MERX_SECRETS_KEYS: configFields.secretKeys,
});
