// JSON Schema (OpenAPI 3.1) → PHP: native types, PHPDoc types, the expressions that read decoded
// JSON into them (models), and PHPStan array shapes for request parameters.

const RESERVED = new Set(
  'abstract and array as bool break callable case catch class clone const continue declare default do echo else elseif empty enddeclare endfor endforeach endif endswitch endwhile enum eval exit extends false final finally float fn for foreach function global goto if implements include instanceof insteadof int interface isset iterable list match mixed namespace never new null object or parent print private protected public readonly require return self static string switch throw trait true try unset use var void while xor yield'.split(' '),
);

export const pascal = (text) =>
  String(text)
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((word) => word[0].toUpperCase() + word.slice(1))
    .join('');

export const camel = (text) => {
  const joined = pascal(text);
  const name = joined ? joined[0].toLowerCase() + joined.slice(1) : 'value';
  return /^[0-9]/.test(name) ? `_${name}` : name;
};

/** A class name that PHP accepts. */
export const className = (text) => {
  const name = pascal(text) || 'Model';
  return RESERVED.has(name.toLowerCase()) || /^[0-9]/.test(name) ? `${name}Model` : name;
};

export const phpString = (text) => `'${String(text).replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

const literal = (value) => (typeof value === 'string' ? phpString(value) : value === null ? 'null' : JSON.stringify(value));

/** Schema helpers over one document: $ref resolution and the shape of composite schemas. */
export class Schemas {
  constructor(document) {
    this.document = document;
  }

  resolve(schema) {
    let current = schema;
    const seen = new Set();
    while (current && typeof current === 'object' && typeof current.$ref === 'string') {
      if (seen.has(current.$ref)) throw new Error(`circular $ref ${current.$ref}`);
      seen.add(current.$ref);
      current = this.pointer(current.$ref);
    }
    return current ?? {};
  }

  pointer(ref) {
    if (!ref.startsWith('#/')) throw new Error(`only local $refs are supported: ${ref}`);
    let node = this.document;
    for (const raw of ref.slice(2).split('/')) {
      node = node?.[raw.replace(/~1/g, '/').replace(/~0/g, '~')];
      if (node === undefined) throw new Error(`unresolvable $ref ${ref}`);
    }
    return node;
  }

  /** `#/components/schemas/Product` → `Product`. */
  static refName(schema) {
    const match = typeof schema?.$ref === 'string' ? /^#\/components\/schemas\/([^/]+)$/.exec(schema.$ref) : null;
    return match ? match[1] : null;
  }

  /** The JSON types a schema allows, `null` included (3.1 `type` arrays, `nullable`, null branches). */
  typesOf(schema) {
    const s = this.resolve(schema);
    if (Array.isArray(s.type)) return s.type;
    if (typeof s.type === 'string') return s.nullable ? [s.type, 'null'] : [s.type];
    if ('const' in s) return [s.const === null ? 'null' : jsonType(s.const)];
    if (Array.isArray(s.enum)) return [...new Set(s.enum.map((value) => (value === null ? 'null' : jsonType(value))))];
    if (s.properties || s.additionalProperties !== undefined || s.allOf) return ['object'];
    return [];
  }

  isNullable(schema) {
    const s = this.resolve(schema);
    return this.typesOf(s).includes('null') || (this.branches(s) ?? []).some((branch) => this.typesOf(branch).join() === 'null');
  }

  /** oneOf/anyOf branches, or null. */
  branches(schema) {
    const s = this.resolve(schema);
    return s.oneOf ?? s.anyOf ?? null;
  }

  /** An object schema's properties and required names, with allOf parts merged in (if/then parts add nothing). */
  objectParts(schema) {
    const s = this.resolve(schema);
    const properties = { ...(s.properties ?? {}) };
    const required = new Set(s.required ?? []);
    for (const part of s.allOf ?? []) {
      const merged = this.objectParts(part);
      Object.assign(properties, merged.properties);
      merged.required.forEach((name) => required.add(name));
    }
    return { properties, required };
  }

  /** True for a schema that deserves a class: an object with named properties. */
  isModel(schema) {
    const s = this.resolve(schema);
    if (this.branches(s)) return false;
    return Object.keys(this.objectParts(s).properties).length > 0 && this.typesOf(s).filter((t) => t !== 'null').every((t) => t === 'object');
  }

  /** The property telling a oneOf's object branches apart: OpenAPI's discriminator, or one whose const differs in each. */
  discriminator(schema, branches) {
    const s = this.resolve(schema);
    if (s.discriminator?.propertyName) return s.discriminator.propertyName;
    const candidates = Object.keys(this.objectParts(branches[0]).properties);
    return (
      candidates.find((name) => {
        const values = branches.map((branch) => constOf(this.resolve(this.objectParts(branch).properties[name] ?? {})));
        return values.every((value) => typeof value === 'string') && new Set(values).size === values.length;
      }) ?? null
    );
  }
}

const jsonType = (value) => (Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value === 'number' ? 'number' : typeof value);

/** A const, or the value of a one-value enum. */
export const constOf = (schema) => ('const' in schema ? schema.const : Array.isArray(schema.enum) && schema.enum.length === 1 ? schema.enum[0] : undefined);

const SCALARS = {
  string: { native: 'string', read: 'string' },
  integer: { native: 'int', read: 'int' },
  number: { native: 'float', read: 'float' },
  boolean: { native: 'bool', read: 'bool' },
};

/**
 * Types of response fields. `nameClass(schema, hint)` returns the PHP class that models an object
 * schema (registering it for generation); the rest is decided here.
 *
 * A type is { native, doc, read(valueExpr, pathExpr, depth) } where `native` excludes null;
 * nullability is the caller's, from `schemas.isNullable`.
 */
export class ResponseTypes {
  constructor(schemas, nameClass) {
    this.schemas = schemas;
    this.nameClass = nameClass;
  }

  of(schema, hint) {
    const { schemas } = this;
    const s = schemas.resolve(schema);
    const branches = schemas.branches(s);
    if (branches) return this.union(s, branches.filter((branch) => schemas.typesOf(branch).join() !== 'null'), hint);
    if (schemas.isModel(s)) {
      const name = this.nameClass(schema, hint);
      return { native: name, doc: name, read: (v, p) => `Hydrate::model(${v}, ${p}, ${name}::class)` };
    }
    const types = schemas.typesOf(s).filter((t) => t !== 'null');
    if (types.length !== 1) return mixed();
    const [type] = types;
    if (SCALARS[type]) {
      const { native, read } = SCALARS[type];
      const values = 'const' in s ? [s.const] : Array.isArray(s.enum) ? s.enum.filter((value) => value !== null) : null;
      return { native, doc: values ? values.map(literal).join('|') : native, read: (v, p) => `Hydrate::${read}(${v}, ${p})` };
    }
    if (type === 'array') {
      const item = this.of(s.items ?? {}, `${hint}Item`);
      const nullable = schemas.isNullable(s.items ?? {});
      return {
        native: 'array',
        doc: `list<${item.doc}${nullable ? '|null' : ''}>`,
        read: (v, p, depth = 0) => `Hydrate::list(${v}, ${p}, ${closure(item, nullable, depth + 1)})`,
      };
    }
    if (type === 'object' && s.additionalProperties && typeof s.additionalProperties === 'object') {
      const value = this.of(s.additionalProperties, `${hint}Value`);
      const nullable = schemas.isNullable(s.additionalProperties);
      return {
        native: 'array',
        doc: `array<string, ${value.doc}${nullable ? '|null' : ''}>`,
        read: (v, p, depth = 0) => `Hydrate::map(${v}, ${p}, ${closure(value, nullable, depth + 1)})`,
      };
    }
    if (type === 'object') return { native: 'array', doc: 'array<string, mixed>', read: (v, p) => `Hydrate::object(${v}, ${p})` };
    return mixed();
  }

  /** oneOf/anyOf: models told apart by a discriminator, or one scalar type, else mixed. */
  union(schema, branches, hint) {
    const { schemas } = this;
    if (branches.length === 1) return this.of(branches[0], hint);
    if (branches.length > 1 && branches.every((branch) => schemas.isModel(branch))) {
      const discriminator = schemas.discriminator(schema, branches);
      if (discriminator) {
        const classes = branches.map((branch, index) => {
          const tag = constOf(schemas.resolve(schemas.objectParts(branch).properties[discriminator]));
          return [tag, this.nameClass(branch, `${hint}${pascal(tag) || index + 1}`)];
        });
        const mapping = classes.map(([tag, name]) => `${phpString(tag)} => ${name}::class`).join(', ');
        const names = [...new Set(classes.map(([, name]) => name))].join('|');
        return { native: names, doc: names, read: (v, p) => `Hydrate::oneOf(${v}, ${p}, ${phpString(discriminator)}, [${mapping}])` };
      }
    }
    const scalarTypes = new Set(branches.flatMap((branch) => schemas.typesOf(branch)).filter((t) => t !== 'null'));
    if (scalarTypes.size === 1) {
      const [type] = scalarTypes;
      if (SCALARS[type]) return this.of({ type }, hint);
    }
    return mixed();
  }
}

/** A native type that also takes null: `?T`, `A|B|null`, or `mixed` as it is. */
export const nullableNative = (native) => (native === 'mixed' ? 'mixed' : native.includes('|') ? `${native}|null` : `?${native}`);

const mixed = () => ({ native: 'mixed', doc: 'mixed', read: (v) => v });

/** `static fn (mixed $v1, string $p1): T => …`, for list items, map values and nullable wrappers. */
export function closure(type, nullable, depth) {
  const [v, p] = [`$v${depth}`, `$p${depth}`];
  if (nullable) {
    return `static fn (mixed ${v}, string ${p}): ${nullableNative(type.native)} => Hydrate::nullable(${v}, ${p}, ${closure(type, false, depth + 1)})`;
  }
  return `static fn (mixed ${v}, string ${p}): ${type.native} => ${type.read(v, p, depth)}`;
}


/** A PHPStan type for a request value: array shapes for objects, literal unions for enums. */
export function requestShape(schemas, schema, depth = 0) {
  const s = schemas.resolve(schema);
  if (depth > 8) return 'mixed';
  const nullable = schemas.isNullable(s);
  const orNull = (type) => (nullable && type !== 'mixed' ? `${type}|null` : type);
  const branches = schemas.branches(s);
  if (branches) {
    const shapes = [...new Set(branches.filter((branch) => schemas.typesOf(branch).join() !== 'null').map((branch) => requestShape(schemas, branch, depth + 1)))];
    return orNull(shapes.join('|') || 'mixed');
  }
  if ('const' in s) return literal(s.const);
  if (Array.isArray(s.enum)) return s.enum.map(literal).join('|');
  const types = schemas.typesOf(s).filter((t) => t !== 'null');
  if (types.length !== 1) return types.length === 0 ? 'mixed' : orNull(types.map((t) => requestShape(schemas, { type: t }, depth + 1)).join('|'));
  const [type] = types;
  if (type === 'string') return orNull('string');
  if (type === 'integer') return orNull('int');
  if (type === 'number') return orNull('float|int');
  if (type === 'boolean') return orNull('bool');
  if (type === 'array') return orNull(`list<${requestShape(schemas, s.items ?? {}, depth + 1)}>`);
  if (type === 'object') {
    const { properties, required } = schemas.objectParts(s);
    const names = Object.keys(properties);
    if (names.length === 0) {
      const value = s.additionalProperties && typeof s.additionalProperties === 'object' ? requestShape(schemas, s.additionalProperties, depth + 1) : 'mixed';
      return orNull(`array<string, ${value}>`);
    }
    const members = names.map((name) => {
      const key = /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : phpString(name);
      return `${key}${required.has(name) ? '' : '?'}: ${requestShape(schemas, properties[name], depth + 1)}`;
    });
    // An object that takes more than its named fields (a source's own data) is an unsealed shape.
    if (s.additionalProperties !== undefined && s.additionalProperties !== false) members.push('...');
    return orNull(`array{${members.join(', ')}}`);
  }
  return 'mixed';
}
