/**
 * `merx <resource> <verb>` for every operation of the API, dispatched through the Node SDK's
 * OPERATIONS (how to call each method) with flags from the OpenAPI document's fields
 * (src/generated/fields.ts). Nothing here names an operation, so a new one in the document is a
 * new command after `npm run generate`; the suite walks the document to prove none is missing.
 */
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { MerxOperator, OPERATIONS, type OperationEntry } from '@merx/sdk';
import { OPERATION_FIELDS, type FieldSpec } from '../generated/fields.js';
import { UsageError } from '../errors.js';
import type { Context } from '../context.js';
import { examplesFor } from '../help.js';

/** `webhooks.deadLetters.replayAll` → `['webhooks', 'dead-letters', 'replay-all']`. */
export function commandPathOf(entry: OperationEntry): string[] {
  return entry.call.split('.').map(kebab);
}

export const kebab = (name: string) =>
  name
    .replace(/_/g, '-')
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .toLowerCase();
const camel = (flag: string) => flag.replace(/-([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());

/** The merchant's operations, then the operator's under `merx operator`. */
export function resourceOperations(): { entry: OperationEntry; path: string[] }[] {
  return OPERATIONS.map((entry) => ({ entry, path: entry.client === 'MerxOperator' ? ['operator', ...commandPathOf(entry)] : commandPathOf(entry) }));
}

/** The sub-command at `names` under `parent`, made when missing. */
export function groupAt(parent: Command, names: readonly string[]): Command {
  let at = parent;
  for (const name of names) {
    at = at.commands.find((command) => command.name() === name) ?? at.command(name).description(`${name.replace(/-/g, ' ')} commands`);
  }
  return at;
}

/** Reads a `--data` value: inline JSON, `@file.json`, or `@-` for stdin. */
export function readJsonArgument(value: string, what: string): unknown {
  let text = value;
  if (value.startsWith('@')) {
    const file = value.slice(1);
    try {
      text = readFileSync(file === '-' ? 0 : file, 'utf8');
    } catch (error) {
      throw new UsageError(`${what}: cannot read ${file === '-' ? 'stdin' : file}: ${(error as Error).message}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${what} is not JSON: ${(error as Error).message}`);
  }
}

function parserOf(field: FieldSpec): (value: string, previous: unknown) => unknown {
  const flag = `--${kebab(field.name)}`;
  switch (field.kind) {
    case 'integer':
      return (value) => {
        if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError(`${flag} takes a whole number`);
        return Number(value);
      };
    case 'number':
      return (value) => {
        if (value.trim() === '' || !Number.isFinite(Number(value))) throw new InvalidArgumentError(`${flag} takes a number`);
        return Number(value);
      };
    case 'boolean':
      return (value) => {
        if (value === 'true') return true;
        if (value === 'false') return false;
        throw new InvalidArgumentError(`${flag} takes true or false (or nothing for true)`);
      };
    case 'list':
      return (value, previous) => {
        const items = value
          .split(',')
          .map((item) => item.trim())
          .filter(Boolean);
        if (field.values)
          for (const item of items)
            if (!field.values.includes(item)) throw new InvalidArgumentError(`${flag}: ${item} is not one of ${field.values.join(', ')}`);
        return [...((previous as string[] | undefined) ?? []), ...items];
      };
    case 'json':
      return (value) => {
        try {
          return readJsonArgument(value, flag);
        } catch (error) {
          throw new InvalidArgumentError((error as Error).message);
        }
      };
    default:
      return (value) => value;
  }
}

function optionOf(field: FieldSpec): Option {
  const flag = kebab(field.name);
  const placeholder =
    field.kind === 'boolean'
      ? '[true|false]'
      : field.kind === 'json'
        ? '<json|@file>'
        : field.kind === 'list'
          ? '<a,b,...>'
          : `<${field.kind === 'string' ? 'value' : field.kind}>`;
  const text = [field.description, field.required ? '(required)' : ''].filter(Boolean).join(' ');
  const option = new Option(`--${flag} ${placeholder}`, text);
  if (field.values && field.kind !== 'list' && field.kind !== 'boolean') option.choices([...field.values]);
  else option.argParser(parserOf(field));
  if (field.kind === 'boolean') option.preset('true').argParser(parserOf(field));
  return option;
}

/** The flags' values under their wire names, over the `--data` document. */
function paramsOf(fields: readonly FieldSpec[], options: Record<string, unknown>): Record<string, unknown> | undefined {
  const fromData = options.data === undefined ? {} : readJsonArgument(options.data as string, '--data');
  if (fromData === null || typeof fromData !== 'object' || Array.isArray(fromData)) throw new UsageError('--data must be a JSON object');
  const params: Record<string, unknown> = { ...(fromData as Record<string, unknown>) };
  for (const field of fields) {
    const value = options[camel(kebab(field.name))];
    if (value !== undefined) params[field.name] = field.kind === 'boolean' && typeof value === 'string' ? value === 'true' : value;
  }
  return params;
}

export function addResourceCommands(program: Command, context: Context): void {
  const fieldsById = new Map(OPERATION_FIELDS.map((operation) => [operation.operationId, operation]));
  for (const { entry, path } of resourceOperations()) {
    const parent = groupAt(program, path.slice(0, -1));
    const verb = path[path.length - 1]!;
    if (parent.commands.some((command) => command.name() === verb)) continue; // a hand-written command of that name (sandbox reset)
    const described = fieldsById.get(entry.operationId);
    const fields = (entry.params ? described?.fields : []) ?? [];
    const command = parent.command(verb).description(`${described?.summary ?? entry.operationId} (${entry.method} ${entry.path})`);
    for (const name of entry.pathParams) command.argument(`<${name}>`);
    for (const field of fields) command.addOption(optionOf(field));
    if (entry.params)
      command.option('--data <json|@file>', 'the whole body (or query) as JSON, inline or @file.json (@- for stdin); flags override its members');
    if (entry.list) {
      command.option('--cursor <cursor>', 'the page after this cursor (next_cursor of the previous page)');
      command.option('--all', 'every page, not only the first (JSON: one array)');
    }
    if (entry.method === 'POST')
      command.option('--idempotency-key <key>', 'the Idempotency-Key (a UUID v4 otherwise): the same key again returns the first answer');
    if (['PATCH', 'PUT', 'DELETE'].includes(entry.method) && entry.pathParams.length > 0)
      command.option('--if-match <etag>', 'only if the object still has this ETag (else 412)');
    const required = fields.filter((field) => field.required).map((field) => field.name);
    command.addHelpText('after', examplesFor(path, entry, required));
    command.action(async (...args: unknown[]) => {
      const options = (args[entry.pathParams.length] ?? {}) as Record<string, unknown>;
      const positional = args.slice(0, entry.pathParams.length) as string[];
      const params = entry.params ? paramsOf(fields, options) : undefined;
      if (params) {
        const missing = required.filter((name) => params[name] === undefined);
        if (missing.length) throw new UsageError(`missing ${missing.map((name) => `--${kebab(name)}`).join(', ')} (or give them in --data)`);
        if (entry.list && options.cursor) params.cursor = options.cursor;
      }
      const requestOptions: Record<string, unknown> = {};
      if (options.idempotencyKey) requestOptions.idempotencyKey = options.idempotencyKey;
      if (options.ifMatch) requestOptions.ifMatch = options.ifMatch;
      const client = entry.client === 'MerxOperator' ? operatorClient(context) : context.session.client();
      const method = methodAt(client, entry.call);
      const callArgs: unknown[] = [...positional, ...(entry.params ? [params] : [])];
      if (Object.keys(requestOptions).length) callArgs.push(requestOptions);
      const result = method(...callArgs);
      await printResult(context, entry, verb, positional, result, Boolean(options.all));
    });
  }
}

function operatorClient(context: Context): MerxOperator {
  if (!process.env.MERX_OPERATOR_TOKEN) throw new UsageError("the operator API needs MERX_OPERATOR_TOKEN (the platform operator's token, not an API key)");
  return new MerxOperator({ baseUrl: context.session.baseUrl() });
}

function methodAt(client: object, call: string): (...args: unknown[]) => unknown {
  const names = call.split('.');
  let owner: Record<string, unknown> = client as Record<string, unknown>;
  for (const name of names.slice(0, -1)) owner = owner[name] as Record<string, unknown>;
  const method = owner[names[names.length - 1]!];
  if (typeof method !== 'function') throw new Error(`the SDK has no method ${call}`);
  return (method as (...args: unknown[]) => unknown).bind(owner);
}

async function printResult(context: Context, entry: OperationEntry, verb: string, positional: string[], result: unknown, all: boolean): Promise<void> {
  const { output } = context;
  if (entry.list) {
    const pagePromise = result as AsyncIterable<unknown> & PromiseLike<{ data: unknown[]; has_more: boolean; next_cursor: string | null }>;
    if (all) {
      const items: unknown[] = [];
      for await (const item of pagePromise) items.push(item);
      output.rows(items);
      return;
    }
    const page = await pagePromise;
    output.rows(page.data, page);
    return;
  }
  const value = await result;
  if (value === undefined) {
    if (!output.json)
      output.note(`${verb === 'delete' || verb === 'revoke' ? `${verb === 'revoke' ? 'Revoked' : 'Deleted'} ` : 'Done: '}${positional.join(' ')}`.trim());
    return;
  }
  output.object(value);
}
