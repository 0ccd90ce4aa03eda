import { LRUCache } from 'lru-cache';
import { compileCondition, type ConditionCompilation } from './condition.js';

/**
 * Compiled conditions by expression text, least recently used first out. Refusals are cached
 * too, so a stored rule that no longer compiles costs one compilation, not one per record.
 * Keyed by text rather than rule id: the same text compiles the same way for every merchant.
 */
export class ConditionCache {
  readonly #entries: LRUCache<string, ConditionCompilation>;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity must be a positive integer');
    this.#entries = new LRUCache({ max: capacity });
  }

  get size(): number {
    return this.#entries.size;
  }

  compile(expression: string): ConditionCompilation {
    const cached = this.#entries.get(expression);
    if (cached) return cached;
    const compiled = compileCondition(expression);
    this.#entries.set(expression, compiled);
    return compiled;
  }

  has(expression: string): boolean {
    return this.#entries.has(expression);
  }
}

/** A few hundred bytes to a few KiB per entry; 1,000 entries is a small, fixed cost per process or worker. */
export const MAX_CACHED_CONDITIONS = 1000;

export const sharedConditionCache = new ConditionCache(MAX_CACHED_CONDITIONS);
