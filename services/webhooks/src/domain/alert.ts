import { newId } from '@merx/kit';

export type AlertKind = 'event_dead_lettered' | 'endpoint_disabled' | 'source_error';

export interface AlertFacts {
  kind: AlertKind;
  severity: 'warning' | 'critical';
  message: string;
  subscriptionId?: string | null;
  destinationId?: string | null;
  deliveryId?: string | null;
  eventId?: string | null;
}

/** The `data.object` of `system_alerts.raised`. */
export function systemAlert(facts: AlertFacts, now: Date) {
  return {
    id: newId('alr'),
    object: 'system_alert' as const,
    kind: facts.kind,
    severity: facts.severity,
    message: facts.message,
    subscription_id: facts.subscriptionId ?? null,
    destination_id: facts.destinationId ?? null,
    delivery_id: facts.deliveryId ?? null,
    event_id: facts.eventId ?? null,
    source_id: null,
    record: null,
    created_at: now.toISOString(),
  };
}

/**
 * An alert about an alert that could not be delivered would be delivered to the same failing
 * endpoint and die the same way, forever: dead alerts raise nothing.
 */
export function raisesAlertWhenDead(topic: string): boolean {
  return topic !== 'system_alerts.raised';
}
