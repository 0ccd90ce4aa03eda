import { sharedConditionCache, type ConditionCache } from './condition-cache.js';
import { conditionContext, type ConditionContext, type ConditionResult } from './condition.js';
import { applyTransform } from './transform.js';
import type { RoutingDecision, RoutingJob, RuleForRouting } from './types.js';

/** Reasons are stored with every route of a record; a connection has at most 20 rules, but each error text is the merchant's own. */
const MAX_REASON_LENGTH = 2000;

function evaluateRule(rule: RuleForRouting, context: ConditionContext, cache: ConditionCache): ConditionResult {
  const compiled = cache.compile(rule.condition);
  if (!compiled.ok) return { error: compiled.problems.map((problem) => problem.message).join('; ') };
  return compiled.condition.evaluate(context);
}

/** The decision in words, with the rules skipped on the way and why, so a merchant can fix them. */
function explain(decision: string, transformedBy: readonly string[], skipped: readonly string[]): string {
  let reason = decision;
  if (transformedBy.length > 0) reason += `; transformed by ${transformedBy.join(', ')}`;
  if (skipped.length > 0) reason += `; ${skipped.join('; ')}`;
  return reason.length > MAX_REASON_LENGTH ? `${reason.slice(0, MAX_REASON_LENGTH - 1)}…` : reason;
}

/**
 * One connection's rules applied to one record, in order. Disabled rules and rules for other
 * event types do not take part. A condition that is false, or fails at run time (a missing key
 * reads as "does not match"), skips its rule. `drop` and `forward` decide at once; `transform`
 * rewrites the data and goes on. A connection that has a forward rule for this event type routes
 * only what some forward rule matched; one without routes everything that was not dropped.
 * Pure and synchronous: RuleRunner is what bounds its time. A routed decision carries the
 * record's own `data` object unless a transform made a new one; neither is ever modified.
 */
export function routeThroughRules(job: RoutingJob, cache: ConditionCache = sharedConditionCache): RoutingDecision {
  const applicable = job.rules.filter((rule) => rule.enabled && rule.eventTypes.includes(job.eventType));
  const base = conditionContext(job.record);
  const transformedBy: string[] = [];
  const skipped: string[] = [];
  let data = job.record.data;

  for (const rule of applicable) {
    const result = evaluateRule(rule, { ...base, data }, cache);
    if ('error' in result) {
      skipped.push(`rule ${rule.id} skipped, its condition failed: ${result.error}`);
      continue;
    }
    if (!result.matched) continue;
    if (rule.action === 'drop') return { outcome: 'dropped', ruleId: rule.id, reason: explain(`drop rule ${rule.id} matched`, transformedBy, skipped) };
    if (rule.action === 'forward')
      return { outcome: 'routed', data, ruleId: rule.id, reason: explain(`forward rule ${rule.id} matched`, transformedBy, skipped) };
    if (rule.transform === null) {
      skipped.push(`rule ${rule.id} skipped, it has no transform`);
      continue;
    }
    data = applyTransform(data, rule.transform);
    transformedBy.push(rule.id);
  }

  if (!applicable.some((rule) => rule.action === 'forward')) {
    return {
      outcome: 'routed',
      data,
      ruleId: null,
      reason: explain(`no enabled forward rule applies to ${job.eventType}, so every record not dropped is routed`, transformedBy, skipped),
    };
  }
  return { outcome: 'filtered', ruleId: null, reason: explain('no forward rule matched', transformedBy, skipped) };
}
