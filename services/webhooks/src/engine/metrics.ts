import { metricsRegistry, promClient } from '@merx/kit';

/** What an operator watches: attempts by outcome, how long receivers take, how much is in flight. */
export const webhookAttempts = new promClient.Counter({
  name: 'merx_webhook_attempts_total',
  help: 'Webhook delivery attempts by outcome (succeeded, failed, dead) and error kind',
  labelNames: ['outcome', 'error'] as const,
  registers: [metricsRegistry],
});

export const webhookAttemptDuration = new promClient.Histogram({
  name: 'merx_webhook_attempt_duration_seconds',
  help: 'Time from sending a webhook to its response (or failure)',
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15],
  registers: [metricsRegistry],
});

export const webhookInFlight = new promClient.Gauge({
  name: 'merx_webhook_in_flight',
  help: 'Webhook attempts under way in this process, by lane (fast, or slow: endpoints whose attempts time out)',
  labelNames: ['lane'] as const,
  registers: [metricsRegistry],
});
