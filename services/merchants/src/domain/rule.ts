import { recordEventNames, ruleActions } from '@merx/contracts';
import { FieldChecks, structureOf, type Body } from './field-checks.js';
import type { Resource } from './resource.js';
import { checkCondition, validateTransform, type TransformSpec } from './rules/index.js';

export type RuleAction = (typeof ruleActions)[number];

export interface RuleFields {
  name: string;
  event_types: string[];
  condition: string;
  action: RuleAction;
  transform: TransformSpec | null;
  enabled: boolean;
}
export type Rule = Resource<RuleFields>;

const ALWAYS = 'true';

export function checkEventTypes(value: unknown, check: FieldChecks): string[] | undefined {
  return check.list(value, 'event_types', { min: 1, max: recordEventNames.length }, (entry, path) =>
    typeof entry === 'string' && recordEventNames.includes(entry) ? entry : check.fail(path, 'invalid_value', `event types are ${recordEventNames.join(', ')}`),
  );
}

function checkFields(body: Body, check: FieldChecks): Partial<RuleFields> {
  const fields: Partial<RuleFields> = {};
  if (body.name !== undefined) fields.name = check.text(body.name, 'name', { max: 255 });
  if (body.event_types !== undefined) fields.event_types = checkEventTypes(body.event_types, check);
  if (body.condition !== undefined) {
    const problems = checkCondition(body.condition);
    problems.forEach((problem) => check.fail(problem.field, problem.code, problem.message));
    if (problems.length === 0) fields.condition = body.condition as string;
  }
  if (body.action !== undefined) fields.action = check.oneOf(body.action, 'action', ruleActions);
  if (body.transform !== undefined && body.transform !== null) {
    const { spec, errors } = validateTransform(body.transform);
    errors.forEach((error) => check.fail(error.field, error.code, error.message));
    fields.transform = spec ?? null;
  } else if (body.transform === null) {
    fields.transform = null;
  }
  if (body.enabled !== undefined) fields.enabled = check.boolean(body.enabled, 'enabled');
  return fields;
}

/** A transform belongs to a transform rule and to it alone. */
function checkActionAndTransform(fields: Pick<RuleFields, 'action' | 'transform'>, check: FieldChecks): void {
  if (fields.action === 'transform' && !fields.transform)
    check.fail('transform', 'required', 'a transform rule needs a transform (keep, remove, rename or set)');
  if (fields.action !== 'transform' && fields.transform)
    check.fail('transform', 'not_allowed', `a ${fields.action} rule has no transform; use action transform or leave it out`);
}

export function validateNewRule(input: unknown): RuleFields {
  const body = structureOf('RuleCreate', input);
  const check = new FieldChecks();
  const fields = checkFields(body, check);
  check.throwIfAny();
  const rule: RuleFields = {
    name: fields.name!,
    event_types: fields.event_types ?? [...recordEventNames],
    condition: fields.condition ?? ALWAYS,
    action: fields.action!,
    transform: fields.transform ?? null,
    enabled: fields.enabled ?? true,
  };
  checkActionAndTransform(rule, check);
  check.throwIfAny();
  return rule;
}

export function validateRuleChanges(input: unknown, current: RuleFields): Partial<RuleFields> {
  const body = structureOf('RuleUpdate', input);
  const check = new FieldChecks();
  const changes = checkFields(body, check);
  check.throwIfAny();
  // Moving away from transform drops the mapping unless the body says otherwise.
  if (changes.action && changes.action !== 'transform' && body.transform === undefined) changes.transform = null;
  checkActionAndTransform(
    { action: changes.action ?? current.action, transform: changes.transform === undefined ? current.transform : changes.transform },
    check,
  );
  check.throwIfAny();
  return changes;
}
