/**
 * The names of the event catalogue (events.ts), apart from the catalogue itself: schemas that the
 * catalogue carries (a webhook subscription names topics and events) need the names, and importing
 * them from events.ts would be an import cycle.
 */

/** The catalogue's names as literals, so publishers get a typo caught by the compiler. */
export const eventNames = [
  'orders.created',
  'reviews.submitted',
  'campaign_spend.updated',
  'system_alerts.raised',
  'products.created',
  'products.updated',
  'products.deleted',
  'merchants.created',
  'merchants.updated',
  'merchants.standing_changed',
  'merchants.throttle_updated',
  ...(['sources', 'destinations', 'rules', 'connections'] as const).flatMap((topic) => [`${topic}.created`, `${topic}.updated`, `${topic}.deleted`] as const),
  'auth.token_issued',
  'auth.denied',
  'api_keys.created',
  'api_keys.revoked',
  'apps.grant_revoked',
  'webhooks.subscription_created',
  'webhooks.subscription_updated',
  'webhooks.subscription_deleted',
  'webhooks.secret_rotated',
  'webhooks.dead_letter_replayed',
  'sandbox.reset',
  'sandbox.reset_completed',
] as const;

export type EventName = (typeof eventNames)[number];

/** `webhooks.subscription_created` → `webhooks`: what a subscription to a whole topic matches. */
export function topicOf(eventName: string): string {
  const dot = eventName.indexOf('.');
  if (dot <= 0) throw new Error(`not an event name: ${eventName}`);
  return eventName.slice(0, dot);
}

/** The topic groups (`orders`, `products`, ...), each once, in catalogue order. */
export const eventTopics: readonly string[] = [...new Set(eventNames.map(topicOf))];
