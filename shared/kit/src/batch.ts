/**
 * Groups work per key: items for a key that arrive while a batch of that key is being written
 * wait and go together in the next batch, in arrival order. Keys proceed in parallel. Each
 * item's promise settles with its batch, so a delivery is acked only once its entry committed.
 * When a batch fails, its items are written again one by one, in order: a bad item fails alone
 * (its delivery is retried and, in the end, poisoned alone) while the rest commit.
 */
export interface BatchOptions {
  /** The most items one write takes (200 when absent). */
  maxBatch?: number;
  /**
   * How long a batch that is not full waits for more items before it is written (none when
   * absent): items that come one by one, each as soon as the last write ended, would otherwise
   * be written a few at a time.
   */
  gatherMs?: number;
}

export function batchPerKey<T>(write: (key: string, items: T[]) => Promise<void>, { maxBatch = 200, gatherMs = 0 }: BatchOptions = {}) {
  interface Pending {
    item: T;
    resolve(): void;
    reject(error: unknown): void;
  }
  const queues = new Map<string, Pending[]>();
  const running = new Set<string>();

  async function drain(key: string): Promise<void> {
    running.add(key);
    try {
      for (;;) {
        let queue = queues.get(key);
        if (!queue || queue.length === 0) break;
        if (gatherMs > 0 && queue.length < maxBatch) {
          await new Promise((resolve) => setTimeout(resolve, gatherMs));
          queue = queues.get(key)!;
        }
        const batch = queue.splice(0, maxBatch);
        try {
          await write(
            key,
            batch.map((pending) => pending.item),
          );
          for (const pending of batch) pending.resolve();
        } catch (error) {
          if (batch.length === 1) batch[0]!.reject(error);
          else for (const pending of batch) await write(key, [pending.item]).then(pending.resolve, pending.reject);
        }
      }
    } finally {
      running.delete(key);
      if (queues.get(key)?.length === 0) queues.delete(key);
    }
  }

  return function submit(key: string, item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const queue = queues.get(key) ?? [];
      queue.push({ item, resolve, reject });
      queues.set(key, queue);
      if (!running.has(key)) void drain(key);
    });
  };
}
