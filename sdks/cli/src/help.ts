/** Examples under each command's `--help` (and `merx help <command>`). */
import type { OperationEntry } from '@merx/sdk';

const EXAMPLES: Record<string, string[]> = {
  'products create': ['merx products create --sku TSHIRT-1 --title "T-shirt" --price 19.99 --currency USD', 'merx products create --data @product.json --json'],
  'products list': ['merx products list --limit 10', 'merx products list --status active --all --json | jq -r ".[].sku"'],
  'products update': ['merx products update prod_... --price 17.99 --if-match \'"v3"\''],
  'webhooks dead-letters replay': ['merx webhooks dead-letters replay dlq_...'],
  'webhooks dead-letters replay-all': ['merx webhooks dead-letters replay-all --subscription-id whs_...'],
  'audit verify': ['merx audit verify', 'merx audit verify --json | jq .valid'],
  'sources records create': [
    'merx sources records create src_... --records \'[{"type":"order","external_id":"o-1","occurred_at":"2026-11-22T10:04:05Z","data":{"total":"19.99","currency":"USD"}}]\'',
  ],
};

export function examplesFor(path: readonly string[], entry: OperationEntry, required: readonly string[]): string {
  const key = path.join(' ');
  const given = EXAMPLES[key];
  const args = entry.pathParams.map((name) => `<${name}>`).join(' ');
  const flags = required.map((name) => `--${name.replace(/_/g, '-')} …`).join(' ');
  const lines = given ?? [
    `merx ${key}${args ? ` ${args}` : ''}${flags ? ` ${flags}` : ''}`,
    `merx ${key}${args ? ` ${args}` : ''}${flags ? ` ${flags}` : ''} --json`,
  ];
  return `\nExamples:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`;
}

/** Examples text for a hand-written command. */
export function examples(...lines: string[]): string {
  return `\nExamples:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`;
}
