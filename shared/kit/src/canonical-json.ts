/**
 * RFC 8785 (JCS) canonical JSON: object members sorted by their UTF-16 code units, no
 * whitespace, numbers and strings as ECMAScript serialises them (which is what JCS specifies).
 * Hashes and signatures over JSON (audit chain, idempotency, webhook hmac_sha256) use it so that
 * key order never changes the result.
 */
/** Member names as JSON strings: the same few dozen names recur in every event. Bounded, so odd keys cannot grow it. */
const quotedKeys = new Map<string, string>();
const MAX_QUOTED_KEYS = 4_096;

function quotedKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = JSON.stringify(key);
    if (quotedKeys.size < MAX_QUOTED_KEYS) quotedKeys.set(key, quoted);
  }
  return quoted;
}

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError('JCS cannot represent a non-finite number');
    return JSON.stringify(value) ?? 'null';
  }
  // Built by appending rather than with filter/map/join: the audit chain hashes every event, and
  // the intermediate arrays were most of this function's cost and of the audit service's garbage.
  if (Array.isArray(value)) {
    let out = '[';
    for (let index = 0; index < value.length; index++) {
      const item: unknown = value[index];
      out += (index > 0 ? ',' : '') + (item === undefined ? 'null' : canonicalJson(item));
    }
    return `${out}]`;
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return canonicalJson((value as { toJSON(): unknown }).toJSON());
  const record = value as Record<string, unknown>;
  let out = '{';
  for (const key of Object.keys(record).sort()) {
    const member = record[key];
    if (member === undefined) continue;
    out += `${out.length > 1 ? ',' : ''}${quotedKey(key)}:${canonicalJson(member)}`;
  }
  return `${out}}`;
}
