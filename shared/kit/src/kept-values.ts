import { LRUCache } from 'lru-cache';

/**
 * Values made once per key and kept, at most `limit` of them; past that the least recently used
 * goes first. For work that repeats per request with a small set of inputs (a secret's HMAC key,
 * a webhook URL's parsed target, a client address): bounded, so a caller sending ever-new inputs
 * cannot grow it.
 */
export class KeptValues<K extends NonNullable<unknown>, V extends NonNullable<unknown>> {
  private readonly values: LRUCache<K, V>;

  constructor(limit: number) {
    this.values = new LRUCache({ max: limit });
  }

  get(key: K, make: (key: K) => V): V {
    let value = this.values.get(key);
    if (value === undefined) {
      value = make(key);
      this.values.set(key, value);
    }
    return value;
  }

  get size(): number {
    return this.values.size;
  }
}
