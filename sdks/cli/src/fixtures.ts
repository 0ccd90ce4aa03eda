/**
 * A fixtures file: objects of each kind created in dependency order (products, sources,
 * destinations, rules, connections), where a string "${ref}" or "${ref.field}" stands for a field
 * (the id by default) of an object created earlier under that `ref`, as Stripe's fixtures do.
 */
import type { Merx } from '@merx/sdk';
import { UsageError } from './errors.js';

export const FIXTURE_KINDS = ['products', 'sources', 'destinations', 'rules', 'connections'] as const;
type Kind = (typeof FIXTURE_KINDS)[number];
export type Fixtures = Partial<Record<Kind, Record<string, unknown>[]>>;

export interface CreatedFixture {
  kind: Kind;
  ref: string | null;
  id: string;
  name: string;
}

export function parseFixtures(text: string, file: string): Fixtures {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${file} is not JSON: ${(error as Error).message}`);
  }
  if (document === null || typeof document !== 'object' || Array.isArray(document)) throw new UsageError(`${file}: a fixtures file is a JSON object`);
  const unknownKinds = Object.keys(document).filter((key) => !(FIXTURE_KINDS as readonly string[]).includes(key) && !key.startsWith('$'));
  if (unknownKinds.length) throw new UsageError(`${file}: unknown section ${unknownKinds.join(', ')} (known: ${FIXTURE_KINDS.join(', ')})`);
  for (const kind of FIXTURE_KINDS) {
    const items = (document as Record<string, unknown>)[kind];
    if (items === undefined) continue;
    if (!Array.isArray(items) || items.some((item) => item === null || typeof item !== 'object' || Array.isArray(item))) {
      throw new UsageError(`${file}: ${kind} must be an array of objects`);
    }
  }
  return document as Fixtures;
}

function substitute(value: unknown, refs: Map<string, Record<string, unknown>>, where: string): unknown {
  if (typeof value === 'string') {
    const whole = /^\$\{([A-Za-z0-9_-]+)(?:\.([A-Za-z0-9_]+))?\}$/.exec(value);
    if (!whole) return value;
    const object = refs.get(whole[1]!);
    if (!object) throw new UsageError(`${where}: \${${whole[1]}} names no object created before it`);
    return object[whole[2] ?? 'id'];
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, refs, where));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substitute(item, refs, where)]));
  return value;
}

export async function applyFixtures(client: Merx, fixtures: Fixtures, progress: (line: string) => void): Promise<CreatedFixture[]> {
  const refs = new Map<string, Record<string, unknown>>();
  const created: CreatedFixture[] = [];
  const create: Record<Kind, (body: Record<string, unknown>) => Promise<unknown>> = {
    products: (body) => client.products.create(body as never),
    sources: (body) => client.sources.create(body as never),
    destinations: (body) => client.destinations.create(body as never),
    rules: (body) => client.rules.create(body as never),
    connections: (body) => client.connections.create(body as never),
  };
  for (const kind of FIXTURE_KINDS) {
    for (const [index, item] of (fixtures[kind] ?? []).entries()) {
      const { ref, ...fields } = item as { ref?: unknown } & Record<string, unknown>;
      const where = `${kind}[${index}]`;
      const body = substitute(fields, refs, where) as Record<string, unknown>;
      const object = (await create[kind](body)) as Record<string, unknown>;
      if (typeof ref === 'string') refs.set(ref, object);
      const name = String(object.sku ?? object.name ?? '');
      created.push({ kind, ref: typeof ref === 'string' ? ref : null, id: String(object.id), name });
      progress(`created ${kind.slice(0, -1)} ${object.id as string}${name ? ` (${name})` : ''}`);
    }
  }
  return created;
}
