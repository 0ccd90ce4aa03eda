import { EvaluationError, ParseError, TypeError as CelTypeError, type ASTNode } from '@marcbachmann/cel-js';

export type ConditionErrorCode = 'invalid_expression' | 'expression_too_complex';

export interface ConditionProblem {
  code: ConditionErrorCode;
  message: string;
}

type CelError = ParseError | CelTypeError | EvaluationError;

/** 1-based line and column of a UTF-16 offset, counting columns in characters as an editor shows them. */
export function lineAndColumn(source: string, offset: number): { line: number; column: number } {
  const before = source.slice(0, Math.max(0, Math.min(offset, source.length)));
  const lineStart = before.lastIndexOf('\n') + 1;
  return { line: before.split('\n').length, column: [...before.slice(lineStart)].length + 1 };
}

export function atPosition(source: string, offset: number): string {
  const { line, column } = lineAndColumn(source, offset);
  return `at line ${line}, column ${column}`;
}

function isCelError(error: unknown): error is CelError {
  return error instanceof ParseError || error instanceof CelTypeError || error instanceof EvaluationError;
}

const LIMIT_WORDING: Record<string, (limit: string) => string> = {
  maxAstNodes: (limit) => `the expression has more than ${limit} nodes (names, literals, operators, calls)`,
  maxDepth: (limit) => `the expression nests deeper than ${limit} levels (parentheses, calls, field selections, lists)`,
  maxListElements: (limit) => `a list literal has more than ${limit} elements`,
  maxMapEntries: (limit) => `a map literal has more than ${limit} entries`,
  maxCallArguments: (limit) => `a call has more than ${limit} arguments`,
};

function limitSummary(summary: string): string {
  const match = /^Exceeded (\w+) \((\d+)\)/.exec(summary);
  const wording = match ? LIMIT_WORDING[match[1]!] : undefined;
  return wording ? wording(match![2]!) : summary;
}

/**
 * Where a cel-js error points, in the merchant's own text. `shift` is how many characters of
 * wrapper preceded that text in what cel-js saw; a call points at its function name, not at
 * the receiver in front of it.
 */
function offsetOf(error: CelError, source: string, shift: number): number {
  const node = error.node as ASTNode | undefined;
  let offset = (error.range?.start ?? node?.start ?? shift) - shift;
  if (node?.op === 'rcall') {
    const [name, receiver] = node.args;
    const nameAt = source.indexOf(name, receiver.end - shift);
    if (nameAt >= 0) offset = nameAt;
  }
  return Math.max(0, Math.min(offset, source.length));
}

function calledName(error: CelError): string | undefined {
  const node = error.node as ASTNode | undefined;
  if (node?.op === 'call' || node?.op === 'rcall') return node.args[0];
  return undefined;
}

/**
 * Turns a parse, type or evaluation error of cel-js into one line naming what and where.
 * cel-js's own `message` draws the source with a caret; that reads well in a terminal but not
 * in a JSON field, and it would show the wrapper we put around the merchant's text.
 */
export function describeCelError(error: unknown, source: string, shift: number, knownFunctions: ReadonlySet<string>): ConditionProblem {
  if (!isCelError(error)) return { code: 'invalid_expression', message: error instanceof Error ? error.message : String(error) };
  const where = atPosition(source, offsetOf(error, source, shift));
  if (error.code === 'limit_exceeded') return { code: 'expression_too_complex', message: `${limitSummary(error.summary)} ${where}` };
  const name = calledName(error);
  if (error.code === 'no_matching_overload' && name !== undefined && !knownFunctions.has(name)) {
    return { code: 'invalid_expression', message: `Unknown function: ${name} ${where}` };
  }
  return { code: 'invalid_expression', message: `${error.summary} ${where}` };
}
