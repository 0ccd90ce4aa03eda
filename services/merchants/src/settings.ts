import { configFields, distributedServiceConfig, loadConfig, z } from '@merx/kit';

/** How the merchants service behaves; validated before it opens a port. */
export interface MerchantsSettings {
  /** The durable queue its replicas share (merchant accounts, records to route, resets). */
  queue: string;
  /** Destinations: the same address policy as the delivery engine that will call them. */
  allowPrivateAddresses: boolean;
  allowedPrivateHosts: string[];
  /** One connection's rules on one record may take this long before the record is not routed. */
  ruleTimeoutMs: number;
}

const flag = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0'], { error: 'must be true or false' })
    .default(fallback ? 'true' : 'false')
    .transform((value) => value === 'true' || value === '1');

export const merchantsSettingsSchema = (defaults: { allowPrivate: boolean }) =>
  z.object({
    MERX_MERCHANTS_QUEUE: z.string().regex(/^[a-z0-9._-]{1,200}$/, 'must be a queue name of a-z 0-9 . _ -').default('merchants.events'),
    MERX_WEBHOOK_ALLOW_PRIVATE: flag(defaults.allowPrivate),
    MERX_WEBHOOK_ALLOWED_PRIVATE_HOSTS: z
      .string()
      .default('')
      .transform((text) => text.split(',').map((host) => host.trim().toLowerCase()).filter(Boolean)),
    MERX_RULE_TIMEOUT_MS: configFields.positiveInt(100),
  });

export function toMerchantsSettings(config: z.infer<ReturnType<typeof merchantsSettingsSchema>>): MerchantsSettings {
  return {
    queue: config.MERX_MERCHANTS_QUEUE,
    allowPrivateAddresses: config.MERX_WEBHOOK_ALLOW_PRIVATE,
    allowedPrivateHosts: config.MERX_WEBHOOK_ALLOWED_PRIVATE_HOSTS,
    ruleTimeoutMs: config.MERX_RULE_TIMEOUT_MS,
  };
}

/** Settings from an environment; the embedded mode allows private destinations by default (a laptop's receiver). */
export function merchantsSettingsFromEnv(env: Record<string, string | undefined>, defaults = { allowPrivate: false }): MerchantsSettings {
  return toMerchantsSettings(loadConfig('merchants', merchantsSettingsSchema(defaults), env));
}

export const merchantsServiceConfig = distributedServiceConfig(3005).extend(merchantsSettingsSchema({ allowPrivate: false }).shape);
