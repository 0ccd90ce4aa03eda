import { isCurrency, isTimeZone } from '@merx/kit';
import { FieldChecks, structureOf } from './field-checks.js';

/**
 * The merchant as this service serves it at /api/v1/merchant. The profile (name, currency,
 * time zone) is the merchant's to change here; the standing (mode, plan, status) is the
 * operator's, kept by the oauth service and copied from its events.
 */
export interface Merchant {
  id: string;
  name: string;
  mode: 'sandbox' | 'live';
  plan: string;
  default_currency: string;
  timezone: string;
  status: string;
  /** Every change of either half: `profileVersion + standingVersion - 1`. */
  version: number;
  /** The profile's own count of changes; this service owns it. */
  profileVersion: number;
  /** The version of the standing copy this service holds; the oauth service owns the standing. */
  standingVersion: number;
  createdAt: Date;
  updatedAt: Date;
}

/** The merchant's `version`: one per change of either half, so both services show the same number once their copies agree. */
export function combinedVersion(profileVersion: number, standingVersion: number): number {
  return profileVersion + standingVersion - 1;
}

/** The operator's half as merchants.standing_changed carries it (`object`), with its own version. */
export interface MerchantStanding {
  mode: 'sandbox' | 'live';
  plan: string;
  status: string;
  version: number;
  updatedAt: Date;
}

export type MerchantProfile = Pick<Merchant, 'name' | 'default_currency' | 'timezone'>;
export const PROFILE_FIELDS = ['name', 'default_currency', 'timezone'] as const;
/** The operator's fields, kept by the oauth service; this service copies them from its events. */
export const STANDING_FIELDS = ['mode', 'plan', 'status'] as const;
export type StandingField = (typeof STANDING_FIELDS)[number];

export function validateProfileChanges(input: unknown): Partial<MerchantProfile> {
  // plan, status and mode are the operator's: MerchantUpdate does not have them, so they are refused as unknown members.
  const body = structureOf('MerchantUpdate', input);
  const check = new FieldChecks();
  const changes: Partial<MerchantProfile> = {};
  if (body.name !== undefined) changes.name = check.text(body.name, 'name', { max: 255 });
  if (body.default_currency !== undefined) {
    if (isCurrency(body.default_currency)) changes.default_currency = body.default_currency;
    else check.fail('default_currency', 'invalid_currency', 'default_currency must be an ISO 4217 code in upper case');
  }
  if (body.timezone !== undefined) {
    if (isTimeZone(body.timezone)) changes.timezone = body.timezone;
    else check.fail('timezone', 'invalid_timezone', 'timezone must be an IANA time zone such as Europe/Berlin');
  }
  check.throwIfAny();
  return changes;
}

export function presentMerchant(merchant: Merchant) {
  return {
    id: merchant.id,
    object: 'merchant' as const,
    name: merchant.name,
    mode: merchant.mode,
    plan: merchant.plan,
    default_currency: merchant.default_currency,
    timezone: merchant.timezone,
    status: merchant.status,
    version: merchant.version,
    profile_version: merchant.profileVersion,
    standing_version: merchant.standingVersion,
    created_at: merchant.createdAt.toISOString(),
    updated_at: merchant.updatedAt.toISOString(),
  };
}

export type MerchantResource = ReturnType<typeof presentMerchant>;

/**
 * A merchant object as the oauth service announces it at provisioning (merchants.created) or
 * answers for it (the internal lookup): both halves, each with its version. An object from before
 * the halves had versions is a new merchant (both 1) or, from the lookup, one whose `version` was
 * oauth's count of standing changes.
 */
export function merchantFromEvent(
  object: Omit<MerchantResource, 'profile_version' | 'standing_version'> & { profile_version?: number; standing_version?: number },
): Merchant {
  const profileVersion = object.profile_version ?? 1;
  const standingVersion = object.standing_version ?? object.version;
  return {
    id: object.id,
    name: object.name,
    mode: object.mode,
    plan: object.plan,
    default_currency: object.default_currency,
    timezone: object.timezone,
    status: object.status,
    version: combinedVersion(profileVersion, standingVersion),
    profileVersion,
    standingVersion,
    createdAt: new Date(object.created_at),
    updatedAt: new Date(object.updated_at),
  };
}

/**
 * The standing a `merchants.standing_changed` carries. The release before this one announced the
 * operator's changes as merchants.updated with the whole merchant, `previous` naming status or
 * plan and `version` counting oauth's changes (where the standing's numbering goes on); one of
 * those still on the bus during an upgrade is read the same way. Undefined for anything else,
 * among them this service's own merchants.updated (a profile change). A standing that does not
 * hold together is a publisher's bug: throwing parks it on the poison queue.
 */
export function standingOf(topic: string, data: { object: Record<string, unknown>; previous?: Record<string, unknown> }): MerchantStanding | undefined {
  if (topic === 'merchants.updated') {
    const previous = data.previous ?? {};
    const namesStanding = STANDING_FIELDS.some((field) => Object.hasOwn(previous, field));
    const namesProfile = PROFILE_FIELDS.some((field) => Object.hasOwn(previous, field));
    if (!namesStanding || namesProfile) return undefined;
  } else if (topic !== 'merchants.standing_changed') return undefined;
  const { mode, plan, status, version, updated_at: updatedAt } = data.object;
  const changedAt = typeof updatedAt === 'string' ? new Date(updatedAt) : undefined;
  const problems: string[] = [];
  if (mode !== 'sandbox' && mode !== 'live') problems.push('mode');
  if (typeof plan !== 'string' || plan.length === 0) problems.push('plan');
  if (status !== 'active' && status !== 'suspended') problems.push('status');
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) problems.push('version');
  if (!changedAt || Number.isNaN(changedAt.getTime())) problems.push('updated_at');
  if (problems.length > 0) throw new Error(`${topic} carries an unusable standing (${problems.join(', ')})`);
  return { mode: mode as MerchantStanding['mode'], plan: plan as string, status: status as string, version: version as number, updatedAt: changedAt! };
}
