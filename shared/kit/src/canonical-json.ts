/**
 * RFC 8785 (JCS) canonical JSON: object members sorted by their UTF-16 code units, no
 * whitespace, numbers and strings as ECMAScript serialises them (which is what JCS specifies).
 * Hashes and signatures over JSON (audit chain, idempotency, webhook hmac_sha256) use it so that
 * key order never changes the result.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError('JCS cannot represent a non-finite number');
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return canonicalJson((value as { toJSON(): unknown }).toJSON());
  const record = value as Record<string, unknown>;
  const members = Object.keys(record)
    .filter((key) => record[key] !== undefined)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
  return `{${members.join(',')}}`;
}
