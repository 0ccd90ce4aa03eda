import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { routeThroughRules } from './routing.js';
import type { RoutingRequest, RuleWorkerReply } from './worker-protocol.js';

if (!parentPort) throw new Error('rule-worker.js runs in a worker thread that RuleRunner starts; it does nothing on its own');
const port = parentPort;

/**
 * Rules run below the threads that serve requests: a merchant's rules that take their whole
 * deadline on every record then cost the others a tenth of a contended core rather than half of
 * it (CFS weighs nice 10 at about a tenth of nice 0). Linux gives each thread its own nice value,
 * set through its thread id; elsewhere (or where it is not allowed) the worker runs as it is.
 */
const RULE_WORKER_NICE = 10;
try {
  const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (Number.isInteger(threadId) && threadId > 0) setPriority(threadId, RULE_WORKER_NICE);
} catch {
  // Not Linux, or no /proc: the fair share of worker time still bounds each merchant.
}

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
  const started = performance.now();
  try {
    const decision = routeThroughRules(request.job);
    reply = { kind: 'decision', id: request.id, decision, workerMs: performance.now() - started };
  } catch (error) {
    reply = { kind: 'failure', id: request.id, message: error instanceof Error ? error.message : String(error), workerMs: performance.now() - started };
  }
  port.postMessage(reply);
});

port.postMessage({ kind: 'ready' } satisfies RuleWorkerReply);
