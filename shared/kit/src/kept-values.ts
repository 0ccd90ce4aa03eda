/**
 * Values made once per key and kept, at most `limit` of them; past that the oldest made goes
 * first. For work that repeats per request with a small set of inputs (a secret's HMAC key, a
 * webhook URL's parsed target, a client address): bounded, so a caller sending ever-new inputs
 * cannot grow it.
 */
export class KeptValues<K, V> {
  private readonly values = new Map<K, V>();

  constructor(private readonly limit: number) {}

  get(key: K, make: (key: K) => V): V {
    let value = this.values.get(key);
    if (value === undefined) {
      value = make(key);
      if (this.values.size >= this.limit) this.values.delete(this.values.keys().next().value!);
      this.values.set(key, value);
    }
    return value;
  }

  get size(): number {
    return this.values.size;
  }
}
