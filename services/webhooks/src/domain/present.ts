import type { Subscription, SubscriptionChanges } from './subscription.js';
import type { Attempt, Delivery, StoredEvent, WebhookPayload } from './delivery.js';
import { endpointIds } from './endpoint.js';

const iso = (date: Date | null) => (date ? date.toISOString() : null);

/** The wire shape of a subscription, shared by responses and events; never the secret. */
export function presentSubscription(subscription: Subscription) {
  return {
    id: subscription.id,
    object: 'webhook_subscription' as const,
    url: subscription.url,
    topics: subscription.topics,
    description: subscription.description,
    status: subscription.status,
    disabled_reason: subscription.disabledReason,
    secret_rotated_at: iso(subscription.secretRotatedAt),
    previous_secret_expires_at: iso(subscription.previousSecretExpiresAt),
    version: subscription.version,
    created_at: subscription.createdAt.toISOString(),
    updated_at: subscription.updatedAt.toISOString(),
  };
}

export type SubscriptionResource = ReturnType<typeof presentSubscription>;

/** The one moment the secret is shown: on create and on rotation. */
export function presentSubscriptionWithSecret(subscription: Subscription) {
  return { ...presentSubscription(subscription), secret: subscription.secret };
}

/** `previous` in webhooks.subscription_updated: the changed fields as they were, in wire names. */
export function presentSubscriptionPrevious(before: Subscription, changes: SubscriptionChanges & { disabledReason?: unknown }): Partial<SubscriptionResource> {
  const wire = presentSubscription(before);
  const previous: Record<string, unknown> = {};
  for (const key of Object.keys(changes)) {
    const wireName = (key === 'disabledReason' ? 'disabled_reason' : key) as keyof SubscriptionResource;
    previous[wireName] = wire[wireName];
  }
  return previous as Partial<SubscriptionResource>;
}

export function subscriptionEtag(subscription: Pick<Subscription, 'version'>): string {
  return `"v${subscription.version}"`;
}

export function presentEvent(event: StoredEvent) {
  return { ...event.payload, object: 'event' as const };
}

export function presentDelivery(delivery: Delivery) {
  return {
    id: delivery.id,
    object: 'webhook_delivery' as const,
    event_id: delivery.eventId,
    topic: delivery.topic,
    ...endpointIds(delivery.endpointKind, delivery.endpointId),
    status: delivery.status,
    attempt_count: delivery.attemptCount,
    next_attempt_at: iso(delivery.nextAttemptAt),
    last_status_code: delivery.lastStatusCode,
    last_error: delivery.lastError,
    replay_of: delivery.replayOf,
    replayed_by: delivery.replayedBy,
    created_at: delivery.createdAt.toISOString(),
    updated_at: delivery.updatedAt.toISOString(),
    completed_at: iso(delivery.completedAt),
  };
}

export function presentAttempt(attempt: Attempt) {
  return {
    number: attempt.number,
    started_at: attempt.startedAt.toISOString(),
    status_code: attempt.statusCode,
    duration_ms: attempt.durationMs,
    error: attempt.error,
    error_message: attempt.errorMessage,
    response_excerpt: attempt.responseExcerpt,
  };
}

export function presentDeliveryWithAttempts(delivery: Delivery, attempts: Attempt[]) {
  return { ...presentDelivery(delivery), attempts: attempts.map(presentAttempt) };
}

/** `payload` is what the delivery sends: the stored event, or a routed record's own payload. */
export function presentDeadLetter(delivery: Delivery, payload: WebhookPayload) {
  return {
    id: delivery.id,
    object: 'webhook_dead_letter' as const,
    event_id: delivery.eventId,
    topic: delivery.topic,
    ...endpointIds(delivery.endpointKind, delivery.endpointId),
    payload,
    last_status_code: delivery.lastStatusCode,
    last_error: delivery.lastError,
    attempt_count: delivery.attemptCount,
    dead_at: (delivery.completedAt ?? delivery.updatedAt).toISOString(),
    created_at: delivery.createdAt.toISOString(),
  };
}
