import { Environment, type ParseResult } from '@marcbachmann/cel-js';
import { MAX_CONDITION_LENGTH } from '@merx/contracts';
import type { FieldError } from '@merx/kit';
import { atPosition, describeCelError, type ConditionProblem } from './cel-errors.js';
import { conditionStructure } from './condition-structure.js';
import type { RuleRecord } from './types.js';

/**
 * Static bounds on a condition, enforced when a rule is saved and again whenever a condition is
 * compiled for routing. A condition is a small predicate over one record: these leave room for
 * long allow-lists (`data.country in [...]`) and deep paths into `data` (records nest at most 16
 * deep), and refuse the shapes whose cost explodes. Time is bounded separately: RuleRunner stops
 * any evaluation that outlives its deadline, because a quadratic loop over a 64 KiB record is
 * still too slow to run on the routing path.
 */
export const CONDITION_LIMITS = {
  maxLength: MAX_CONDITION_LENGTH,
  maxAstNodes: 500,
  maxDepth: 32,
  maxListElements: 256,
  maxMapEntries: 64,
  maxCallArguments: 8,
  /** One comprehension inside another is quadratic in the list size; a third level is cubic and refused. */
  maxComprehensionNesting: 2,
} as const;

const CEL_LIMITS = {
  maxAstNodes: CONDITION_LIMITS.maxAstNodes,
  maxDepth: CONDITION_LIMITS.maxDepth,
  maxListElements: CONDITION_LIMITS.maxListElements,
  maxMapEntries: CONDITION_LIMITS.maxMapEntries,
  maxCallArguments: CONDITION_LIMITS.maxCallArguments,
};

/*
 * CEL predeclares `type` as the type of types, and cel-js 8 refuses to declare a variable of that
 * name. Binding the record's type to `type` around the merchant's text shadows the builtin for
 * the whole expression (`type(x)` calls still reach the function). The merchant's text is first
 * parsed on its own, so it cannot close the wrapper early; the newline ends a trailing `//` comment.
 */
const RECORD_TYPE_ALIAS = '__merx_record_type';
const WRAPPER_PREFIX = `cel.bind(type, ${RECORD_TYPE_ALIAS}, (`;
const WRAPPER_SUFFIX = '\n))';

/** Parses the merchant's text alone, with the limits; it declares nothing because parsing resolves no names. */
const syntaxEnvironment = new Environment({ limits: CEL_LIMITS });

/** Type-checks and evaluates the wrapped text; the margins cover the wrapper's own nodes and depth. */
const recordEnvironment = new Environment({ limits: { ...CEL_LIMITS, maxAstNodes: CEL_LIMITS.maxAstNodes + 16, maxDepth: CEL_LIMITS.maxDepth + 8 } })
  .registerVariable(RECORD_TYPE_ALIAS, 'string')
  .registerVariable('external_id', 'string')
  .registerVariable('occurred_at', 'google.protobuf.Timestamp')
  .registerVariable('source_id', 'string')
  .registerVariable('data', 'map<string, dyn>');

const knownFunctions: ReadonlySet<string> = new Set(recordEnvironment.getDefinitions().functions.map((fn) => fn.name));

/** What a condition sees of a record; build it once per record and swap `data` as transforms change it. */
export interface ConditionContext {
  readonly [RECORD_TYPE_ALIAS]: string;
  readonly external_id: string;
  readonly occurred_at: Date;
  readonly source_id: string;
  readonly data: Record<string, unknown>;
}

export function conditionContext(record: RuleRecord, data: Record<string, unknown> = record.data): ConditionContext {
  return {
    [RECORD_TYPE_ALIAS]: record.type,
    external_id: record.external_id,
    occurred_at: new Date(record.occurred_at),
    source_id: record.source_id,
    data,
  };
}

export type ConditionResult = { matched: boolean } | { error: string };

export class CompiledCondition {
  constructor(
    readonly expression: string,
    private readonly program: ParseResult,
  ) {}

  /** Never throws: a run-time error (a missing key, a division by zero) is a result the caller reports. */
  evaluate(context: ConditionContext): ConditionResult {
    try {
      const value: unknown = this.program(context);
      if (typeof value !== 'boolean') return { error: `the condition produced ${typeof value}, not bool` };
      return { matched: value };
    } catch (error) {
      return { error: describeCelError(error, this.expression, WRAPPER_PREFIX.length, knownFunctions).message };
    }
  }
}

export type ConditionCompilation = { ok: true; condition: CompiledCondition } | { ok: false; problems: ConditionProblem[] };

function refused(...problems: ConditionProblem[]): ConditionCompilation {
  return { ok: false, problems };
}

function notBool(type: string): ConditionProblem {
  const hint = type === 'dyn' ? ' (a value from data, whose type is only known at run time); compare it, e.g. data.flag == true' : '';
  return { code: 'invalid_expression', message: `a condition must be of type bool, but the expression starting at line 1, column 1 is ${type}${hint}` };
}

/** Parses, bounds and type-checks a condition; `expression` must already be a string of an allowed length. */
export function compileCondition(expression: string): ConditionCompilation {
  let parsed: ParseResult;
  try {
    parsed = syntaxEnvironment.parse(expression);
  } catch (error) {
    return refused(describeCelError(error, expression, 0, knownFunctions));
  }
  const structure = conditionStructure(parsed.ast, RECORD_TYPE_ALIAS);
  if (structure.identifierAt !== undefined) {
    return refused({ code: 'invalid_expression', message: `Unknown variable: ${RECORD_TYPE_ALIAS} ${atPosition(expression, structure.identifierAt)}` });
  }
  if (structure.comprehensionNesting > CONDITION_LIMITS.maxComprehensionNesting) {
    return refused({
      code: 'expression_too_complex',
      message: `comprehensions (all, exists, exists_one, map, filter) nest ${structure.comprehensionNesting} deep; at most ${CONDITION_LIMITS.maxComprehensionNesting} are allowed`,
    });
  }
  let program: ParseResult;
  try {
    program = recordEnvironment.parse(WRAPPER_PREFIX + expression + WRAPPER_SUFFIX);
  } catch (error) {
    return refused(describeCelError(error, expression, WRAPPER_PREFIX.length, knownFunctions));
  }
  const checked = program.check();
  if (!checked.valid) return refused(describeCelError(checked.error, expression, WRAPPER_PREFIX.length, knownFunctions));
  if (checked.type !== 'bool') return refused(notBool(checked.type ?? 'unknown'));
  return { ok: true, condition: new CompiledCondition(expression, program) };
}

/** The write-time check of a rule's `condition`: every problem as a field error, none when it is valid. */
export function checkCondition(expression: unknown): FieldError[] {
  const fail = (code: string, message: string): FieldError[] => [{ field: 'condition', code, message }];
  if (typeof expression !== 'string') return fail('invalid_type', 'condition must be a string holding a CEL expression');
  const length = [...expression].length;
  if (expression.trim().length === 0) return fail('too_short', 'condition must not be empty (leave it out to match every record)');
  if (length > CONDITION_LIMITS.maxLength) return fail('too_long', `condition must be at most ${CONDITION_LIMITS.maxLength} characters`);
  const compiled = compileCondition(expression);
  return compiled.ok ? [] : compiled.problems.map((problem) => ({ field: 'condition', ...problem }));
}
