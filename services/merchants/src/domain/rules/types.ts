/** The field mapping of a `transform` rule (ruleTransformSchema); paths are dotted paths into `data`. */
export interface TransformSpec {
  keep?: string[];
  remove?: string[];
  rename?: Record<string, string>;
  set?: Record<string, unknown>;
}

/** A record as conditions see it; `occurred_at` is the ISO 8601 string the source sent. */
export interface RuleRecord {
  type: string;
  external_id: string;
  occurred_at: string;
  source_id: string;
  data: Record<string, unknown>;
}

export type RuleAction = 'forward' | 'drop' | 'transform';

export interface RuleForRouting {
  id: string;
  eventTypes: string[];
  condition: string;
  action: RuleAction;
  transform: TransformSpec | null;
  enabled: boolean;
}

/** One record meeting one connection's rules, in the connection's order. Plain JSON, so it can cross to a worker thread. */
export interface RoutingJob {
  eventType: string;
  record: RuleRecord;
  rules: RuleForRouting[];
}

export type RoutingDecision =
  | { outcome: 'routed'; data: Record<string, unknown>; ruleId: string | null; reason: string | null }
  | { outcome: 'dropped' | 'filtered'; ruleId: string | null; reason: string | null };
