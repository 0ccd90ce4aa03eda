import Router from '@koa/router';
import { requestBody, ValidationFailed, workQueueNames, type Bus, type FieldError, type PoisonedMessage } from '@merx/kit';
import { requireOperator } from './admin.js';

const MAX_EVENT_IDS = 1_000;

function presentPoisoned(message: PoisonedMessage) {
  return {
    object: 'poisoned_message' as const,
    queue: message.queue,
    event_id: message.event.id,
    topic: message.event.topic,
    merchant_id: message.event.merchant_id,
    failures: message.failures,
    last_error: message.last_error,
    poisoned_at: message.poisoned_at,
    event: message.event,
  };
}

function queueOf(value: unknown, field: string, errors: FieldError[]): string | undefined {
  if (typeof value === 'string' && workQueueNames().includes(value)) return value;
  errors.push({ field, code: 'invalid_value', message: `${field} must be one of ${workQueueNames().join(', ')}` });
  return undefined;
}

function parseLimit(value: unknown, errors: FieldError[]): number {
  if (value === undefined) return 20;
  if (typeof value === 'string' && /^\d{1,3}$/.test(value) && Number(value) >= 1 && Number(value) <= 100) return Number(value);
  errors.push({ field: 'limit', code: 'invalid_value', message: 'limit must be an integer from 1 to 100' });
  return 20;
}

function parseReplay(body: unknown): { queue: string; eventIds?: string[] } {
  const errors: FieldError[] = [];
  const input = (body ?? {}) as Record<string, unknown>;
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ValidationFailed([{ field: 'body', code: 'invalid_type', message: 'the body must be a JSON object' }]);
  for (const key of Object.keys(input))
    if (key !== 'queue' && key !== 'event_ids') errors.push({ field: key, code: 'unknown_field', message: `${key} is not a field of a replay` });
  const queue = queueOf(input.queue, 'queue', errors);
  const ids = input.event_ids;
  const validIds =
    ids === undefined ||
    (Array.isArray(ids) &&
      ids.length >= 1 &&
      ids.length <= MAX_EVENT_IDS &&
      new Set(ids).size === ids.length &&
      ids.every((id) => typeof id === 'string' && id.length >= 1 && id.length <= 255));
  if (!validIds) errors.push({ field: 'event_ids', code: 'invalid_value', message: `event_ids must be 1-${MAX_EVENT_IDS} distinct event ids` });
  if (errors.length > 0) throw new ValidationFailed(errors);
  return { queue: queue!, ...(ids !== undefined ? { eventIds: ids as string[] } : {}) };
}

/**
 * The operator's view of the deployment's poison queues: every service's work queue, whichever
 * process consumes it, because they are the deployment's (RabbitMQ queues any bus connection
 * reaches, or tables of the embedded database). Served by oauth, home of the operator API.
 */
export function busAdminRoutes(bus: Bus, operatorToken: string): Router {
  const router = new Router({ prefix: '/admin/v1/bus', strict: false });
  router.use(requireOperator(operatorToken));
  router.get('bus.admin.poison.list', '/poison', async (ctx) => {
    const errors: FieldError[] = [];
    const queues = ctx.query.queue === undefined ? workQueueNames() : [queueOf(ctx.query.queue, 'queue', errors)!];
    const limit = parseLimit(ctx.query.limit, errors);
    if (errors.length > 0) throw new ValidationFailed(errors);
    const counts = await bus.poison.counts(queues);
    const data: ReturnType<typeof presentPoisoned>[] = [];
    for (const queue of queues) {
      if (counts[queue] === 0) continue;
      data.push(...(await bus.poison.list(queue, limit)).messages.map(presentPoisoned));
    }
    ctx.body = { object: 'bus_poison', queues: queues.map((queue) => ({ queue, count: counts[queue] ?? 0 })), data };
  });
  router.post('bus.admin.poison.replay', '/poison/replay', async (ctx) => {
    const { queue, eventIds } = parseReplay(requestBody(ctx));
    ctx.body = { object: 'bus_poison_replay', queue, replayed: await bus.poison.replay(queue, eventIds) };
  });
  return router;
}
