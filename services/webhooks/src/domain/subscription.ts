import { eventCatalogue } from '@merx/contracts';
import { fieldPath, ValidationFailed, type FieldError } from '@merx/kit';
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

const FIELDS = ['url', 'topics', 'description', 'status'];
const MAX_TOPICS = 100;
const MAX_DESCRIPTION = 500;

/** What a subscription may name: `*`, a topic (`orders`), or an exact event name (`orders.created`). */
const SUBSCRIBABLE = new Set<string>(['*', ...eventCatalogue.map((event) => event.name), ...eventCatalogue.map((event) => event.topic)]);

/** Does a subscription to `topics` receive `eventName`? */
export function subscribesTo(topics: readonly string[], eventName: string): boolean {
  const group = eventName.slice(0, eventName.indexOf('.'));
  return topics.some((topic) => topic === '*' || topic === eventName || topic === group);
}

function asObject(body: unknown): Record<string, unknown> {
  if (body === undefined) throw new ValidationFailed([{ field: '(body)', code: 'required', message: 'a JSON object body is required' }]);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationFailed([{ field: '(body)', code: 'invalid_type', message: 'the body must be a JSON object' }]);
  }
  return body as Record<string, unknown>;
}

function checkTopics(value: unknown, errors: FieldError[]): string[] | undefined {
  if (!Array.isArray(value)) {
    errors.push({ field: 'topics', code: 'invalid_type', message: 'topics must be an array of topic or event names, or ["*"]' });
    return undefined;
  }
  if (value.length === 0) errors.push({ field: 'topics', code: 'too_short', message: 'topics must name at least one topic or event (or "*" for all)' });
  if (value.length > MAX_TOPICS) errors.push({ field: 'topics', code: 'too_long', message: `topics may have at most ${MAX_TOPICS} entries` });
  value.forEach((topic, index) => {
    if (typeof topic !== 'string' || !SUBSCRIBABLE.has(topic)) {
      errors.push({ field: fieldPath('topics', index), code: 'unknown_topic', message: `${JSON.stringify(topic)} is not a topic or event name of the event catalogue (see GET /api/v1/openapi.json)` });
    }
  });
  // Duplicates are harmless; keep the first of each, in the order given.
  return [...new Set(value.filter((topic): topic is string => typeof topic === 'string'))];
}

function checkDescription(value: unknown, errors: FieldError[]): string | null | undefined {
  if (value === null) return null;
  if (typeof value !== 'string') {
    errors.push({ field: 'description', code: 'invalid_type', message: 'description must be a string or null' });
    return undefined;
  }
  if ([...value].length > MAX_DESCRIPTION) errors.push({ field: 'description', code: 'too_long', message: `description must be at most ${MAX_DESCRIPTION} characters` });
  return value;
}

function checkStatus(value: unknown, errors: FieldError[]): SubscriptionStatus | undefined {
  if (typeof value === 'string' && (SUBSCRIPTION_STATUSES as readonly string[]).includes(value)) return value as SubscriptionStatus;
  errors.push({ field: 'status', code: 'invalid_value', message: `status must be one of ${SUBSCRIPTION_STATUSES.join(', ')}` });
  return undefined;
}

function rejectUnknownFields(body: Record<string, unknown>, errors: FieldError[]): void {
  for (const key of Object.keys(body)) {
    if (!FIELDS.includes(key)) errors.push({ field: fieldPath('', key), code: 'unknown_field', message: `${key} is not a subscription field${key === 'secret' ? ' (secrets are generated; rotate with POST …/rotate-secret)' : ''}` });
  }
}

/**
 * The synchronous checks of a new subscription. The URL's shape is checked here; whether it is
 * reachable without touching private networks needs DNS and is the use case's next step.
 */
export function validateNewSubscription(input: unknown): { input: SubscriptionInput; errors: FieldError[] } {
  const body = asObject(input);
  const errors: FieldError[] = [];
  rejectUnknownFields(body, errors);
  if (body.url === undefined || body.url === null) errors.push({ field: 'url', code: 'required', message: 'url is required' });
  if (body.topics === undefined || body.topics === null) errors.push({ field: 'topics', code: 'required', message: 'topics is required (e.g. ["orders", "products.created"] or ["*"])' });
  const topics = body.topics === undefined || body.topics === null ? undefined : checkTopics(body.topics, errors);
  const description = body.description === undefined ? null : checkDescription(body.description, errors);
  const status = body.status === undefined ? 'enabled' : checkStatus(body.status, errors);
  return { input: { url: body.url as string, topics: topics ?? [], description: description ?? null, status: status ?? 'enabled' }, errors };
}

export function validateSubscriptionChanges(input: unknown): { changes: SubscriptionChanges; errors: FieldError[] } {
  const body = asObject(input);
  const errors: FieldError[] = [];
  rejectUnknownFields(body, errors);
  const changes: SubscriptionChanges = {};
  for (const field of ['url', 'topics', 'status'] as const) {
    if (body[field] === null) errors.push({ field, code: 'required', message: `${field} cannot be null` });
  }
  if (body.url !== undefined && body.url !== null) changes.url = body.url as string;
  if (body.topics !== undefined && body.topics !== null) changes.topics = checkTopics(body.topics, errors);
  if (body.description !== undefined) changes.description = checkDescription(body.description, errors);
  if (body.status !== undefined && body.status !== null) changes.status = checkStatus(body.status, errors);
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
