import { fieldPath, ValidationFailed, type FieldError } from '@merx/kit';

/**
 * An operator's per-merchant change to the plan's throttle numbers. Only the fields given
 * replace the plan's; `{}` goes back to the plan. The gateway learns it from the
 * `merchants.throttle_updated` event.
 */
const FIELDS: Record<string, Record<string, { integer: boolean; max: number }>> = {
  burst: { capacity: { integer: true, max: 1_000_000 }, refill_per_second: { integer: false, max: 1_000_000 } },
  sustained: { limit: { integer: true, max: 1_000_000_000 }, window_seconds: { integer: true, max: 86_400 } },
  writes: { capacity: { integer: true, max: 1_000_000 }, refill_per_second: { integer: false, max: 1_000_000 } },
  sensitive: { limit: { integer: true, max: 1_000_000 }, window_seconds: { integer: true, max: 86_400 } },
  // Not a rate: StreamEvents calls open at once, across every gateway replica.
  event_streams: { concurrent: { integer: true, max: 100_000 } },
};

export type ThrottleOverrides = Record<string, Record<string, number>>;

/** Every merchant's current override, as a gateway loads them at start (`GET /internal/v1/throttle-overrides`). */
export interface ThrottleOverrideSnapshot {
  overrides: Array<{ merchant_id: string; overrides: ThrottleOverrides; version: number }>;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export function validateThrottleOverrides(input: unknown): ThrottleOverrides {
  if (!isObject(input)) throw new ValidationFailed([{ field: '(body)', code: 'invalid_type', message: 'the body must be a JSON object' }]);
  const errors: FieldError[] = [];
  const result: ThrottleOverrides = {};
  for (const [name, value] of Object.entries(input)) {
    const fields = FIELDS[name];
    if (!fields) {
      errors.push({ field: fieldPath('', name), code: 'unknown_field', message: `${name} is not a throttle class (${Object.keys(FIELDS).join(', ')})` });
      continue;
    }
    if (!isObject(value)) {
      errors.push({ field: name, code: 'invalid_type', message: `${name} must be an object` });
      continue;
    }
    const kept: Record<string, number> = {};
    for (const [field, number] of Object.entries(value)) {
      const rule = fields[field];
      const path = fieldPath(name, field);
      if (!rule) errors.push({ field: path, code: 'unknown_field', message: `${name} has only ${Object.keys(fields).join(' and ')}` });
      else if (typeof number !== 'number' || !Number.isFinite(number) || number <= 0 || number > rule.max || (rule.integer && !Number.isInteger(number))) {
        errors.push({ field: path, code: 'invalid_value', message: `${path} must be a positive ${rule.integer ? 'integer' : 'number'} up to ${rule.max}` });
      } else kept[field] = number;
    }
    if (Object.keys(kept).length > 0) result[name] = kept;
  }
  if (errors.length > 0) throw new ValidationFailed(errors);
  return result;
}

export interface ThrottleOverrideRecord {
  merchantId: string;
  plan: string;
  overrides: ThrottleOverrides;
  version: number;
  updatedAt: Date;
}

export function presentThrottleOverride(record: ThrottleOverrideRecord) {
  return {
    object: 'throttle_override' as const,
    merchant_id: record.merchantId,
    plan: record.plan,
    overrides: record.overrides,
    version: record.version,
    updated_at: record.updatedAt.toISOString(),
  };
}
