import type { RoutingDecision, RoutingJob } from './types.js';

/** What RuleRunner posts to a rule worker. */
export interface RoutingRequest {
  id: number;
  job: RoutingJob;
}

/**
 * What a rule worker posts back: once `ready` after start, then one reply per request, with the
 * time routeThroughRules took in the worker (what the merchant's share of worker time pays).
 */
export type RuleWorkerReply =
  | { kind: 'ready' }
  | { kind: 'decision'; id: number; decision: RoutingDecision; workerMs: number }
  | { kind: 'failure'; id: number; message: string; workerMs: number };
