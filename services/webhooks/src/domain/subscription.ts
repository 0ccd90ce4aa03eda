import { schemaErrors, ValidationFailed, type FieldError } from '@merx/kit';
import type { DisabledReason, EndpointStatus } from './endpoint.js';

export const SUBSCRIPTION_STATUSES = ['enabled', 'disabled'] as const satisfies readonly EndpointStatus[];
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];
export type { DisabledReason };

export interface Subscription {
  id: string;
  merchantId: string;
  url: string;
  topics: string[];
  description: string | null;
  status: SubscriptionStatus;
  disabledReason: DisabledReason | null;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
  secretRotatedAt: Date | null;
  /** Created or last re-enabled: the endpoint-failing clock never starts before it. */
  enabledAt: Date;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface SubscriptionInput {
  url: string;
  topics: string[];
  description: string | null;
  status: SubscriptionStatus;
}
export type SubscriptionChanges = Partial<SubscriptionInput>;

/** Does a subscription to `topics` receive `eventName`? */
export function subscribesTo(topics: readonly string[], eventName: string): boolean {
  const group = eventName.slice(0, eventName.indexOf('.'));
  return topics.some((topic) => topic === '*' || topic === eventName || topic === group);
}

/**
 * A body's structure (the URL's shape, topics of the event catalogue, a description of at most 500
 * characters, the status, no other member) is the OpenAPI schema's, the same check the HTTP edge
 * runs. A body that is not an object stops here; the caller collects the rest with the use case's
 * own checks (whether the URL is reachable without touching private networks needs DNS).
 */
function structureOf(
  schemaName: 'WebhookSubscriptionCreate' | 'WebhookSubscriptionUpdate',
  input: unknown,
): { body: Record<string, unknown>; errors: FieldError[] } {
  const errors = schemaErrors(schemaName, input);
  if (errors.some((error) => error.field === '(body)')) throw new ValidationFailed(errors);
  return { body: input as Record<string, unknown>, errors };
}

/** Duplicates are harmless; keep the first of each, in the order given. */
const distinctTopics = (topics: unknown): string[] => [
  ...new Set(Array.isArray(topics) ? topics.filter((topic): topic is string => typeof topic === 'string') : []),
];

export function validateNewSubscription(input: unknown): { input: SubscriptionInput; errors: FieldError[] } {
  const { body, errors } = structureOf('WebhookSubscriptionCreate', input);
  return {
    input: {
      url: body.url as string,
      topics: distinctTopics(body.topics),
      description: (body.description as string | null | undefined) ?? null,
      status: (body.status as SubscriptionStatus | undefined) ?? 'enabled',
    },
    errors,
  };
}

export function validateSubscriptionChanges(input: unknown): { changes: SubscriptionChanges; errors: FieldError[] } {
  const { body, errors } = structureOf('WebhookSubscriptionUpdate', input);
  const changes: SubscriptionChanges = {};
  if (body.url !== undefined) changes.url = body.url as string;
  if (body.topics !== undefined) changes.topics = distinctTopics(body.topics);
  if (body.description !== undefined) changes.description = body.description as string | null;
  if (body.status !== undefined) changes.status = body.status as SubscriptionStatus;
  return { changes, errors };
}

/** The fields that really change, so a PATCH that changes nothing bumps no version and emits no event. */
export function effectiveSubscriptionChanges(current: Subscription, changes: SubscriptionChanges): SubscriptionChanges {
  const effective: SubscriptionChanges = {};
  if (changes.url !== undefined && changes.url !== current.url) effective.url = changes.url;
  if (changes.topics !== undefined && JSON.stringify(changes.topics) !== JSON.stringify(current.topics)) effective.topics = changes.topics;
  if (changes.description !== undefined && changes.description !== current.description) effective.description = changes.description;
  if (changes.status !== undefined && changes.status !== current.status) effective.status = changes.status;
  return effective;
}

/** The secrets that sign now: the current one, and the previous one while its overlap lasts. */
export function signingSecrets(endpoint: Pick<Subscription, 'secret' | 'previousSecret' | 'previousSecretExpiresAt'>, now: Date): string[] {
  const secrets = [endpoint.secret];
  if (endpoint.previousSecret && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > now) secrets.push(endpoint.previousSecret);
  return secrets;
}
