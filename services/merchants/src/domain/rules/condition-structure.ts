import type { ASTNode } from '@marcbachmann/cel-js';

/** Macros that loop over a list: their predicate runs once per element. */
const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

export interface ConditionStructure {
  /** Deepest count of comprehensions running inside one another's loop bodies. */
  comprehensionNesting: number;
  /** The first place the expression names `identifier` as a variable, if it does. */
  identifierAt?: number;
}

function isNode(value: unknown): value is ASTNode {
  return typeof value === 'object' && value !== null && typeof (value as { op?: unknown }).op === 'string' && 'args' in value;
}

function childNodes(args: unknown, into: ASTNode[]): ASTNode[] {
  if (isNode(args)) into.push(args);
  else if (Array.isArray(args)) for (const item of args) childNodes(item, into);
  return into;
}

/**
 * Walks a parsed (not yet checked) condition. Iterative, so the walk itself cannot be made to
 * overflow the stack; the parser's depth limit already bounds the tree, this is belt and braces.
 */
export function conditionStructure(root: ASTNode, identifier: string): ConditionStructure {
  const result: ConditionStructure = { comprehensionNesting: 0 };
  const pending: Array<{ node: ASTNode; nesting: number }> = [{ node: root, nesting: 0 }];
  while (pending.length > 0) {
    const { node, nesting } = pending.pop()!;
    result.comprehensionNesting = Math.max(result.comprehensionNesting, nesting);
    if (node.op === 'id' && node.args === identifier && (result.identifierAt === undefined || node.start < result.identifierAt)) {
      result.identifierAt = node.start;
    }
    if (node.op === 'rcall' && COMPREHENSIONS.has(node.args[0]) && (node.args[2].length === 2 || node.args[2].length === 3)) {
      // The receiver is evaluated once; only the loop variable and body run per element.
      pending.push({ node: node.args[1], nesting });
      for (const inner of node.args[2]) pending.push({ node: inner, nesting: nesting + 1 });
      continue;
    }
    for (const child of childNodes(node.args, [])) pending.push({ node: child, nesting });
  }
  return result;
}
