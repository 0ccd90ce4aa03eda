export { checkCondition, compileCondition, CONDITION_LIMITS, type CompiledCondition, type ConditionCompilation } from './condition.js';
export type { ConditionErrorCode, ConditionProblem } from './cel-errors.js';
export { ConditionCache, MAX_CACHED_CONDITIONS } from './condition-cache.js';
export { applyTransform } from './transform.js';
export { TRANSFORM_LIMITS, validateTransform } from './transform-validation.js';
export { routeThroughRules } from './routing.js';
export { defaultFairShareLimits, defaultPoolSize, MAX_POOL_SIZE, RuleRunner, type RuleRunnerOptions } from './rule-runner.js';
export { FairShare, type FairShareLimits } from './fair-share.js';
export type { RoutingDecision, RoutingJob, RuleAction, RuleForRouting, RuleRecord, TransformSpec } from './types.js';
