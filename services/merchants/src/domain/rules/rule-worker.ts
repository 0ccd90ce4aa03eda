import { parentPort } from 'node:worker_threads';
import { routeThroughRules } from './routing.js';
import type { RoutingRequest, RuleWorkerReply } from './worker-protocol.js';

if (!parentPort) throw new Error('rule-worker.js runs in a worker thread that RuleRunner starts; it does nothing on its own');
const port = parentPort;

// Compiling and running one condition before saying ready keeps the cold start (loading cel-js,
// the first parse, unoptimised code) out of the first real job's deadline.
routeThroughRules({
  eventType: 'orders.created',
  record: { type: 'order', external_id: 'warm-up', occurred_at: '2025-01-01T00:00:00.000Z', source_id: 'src_warm_up', data: { total: 120, currency: 'EUR' } },
  rules: [
    {
      id: 'rul_warm_up',
      eventTypes: ['orders.created'],
      condition: 'type == "order" && data.total >= 100.0',
      action: 'forward',
      transform: null,
      enabled: true,
    },
  ],
});

port.on('message', (request: RoutingRequest) => {
  let reply: RuleWorkerReply;
  try {
    reply = { kind: 'decision', id: request.id, decision: routeThroughRules(request.job) };
  } catch (error) {
    reply = { kind: 'failure', id: request.id, message: error instanceof Error ? error.message : String(error) };
  }
  port.postMessage(reply);
});

port.postMessage({ kind: 'ready' } satisfies RuleWorkerReply);
