import type { RoutingDecision, RoutingJob } from './types.js';

/** What RuleRunner posts to a rule worker. */
export interface RoutingRequest {
  id: number;
  job: RoutingJob;
}

/** What a rule worker posts back: once `ready` after start, then one reply per request. */
export type RuleWorkerReply =
  { kind: 'ready' } | { kind: 'decision'; id: number; decision: RoutingDecision } | { kind: 'failure'; id: number; message: string };
