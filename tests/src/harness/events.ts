import type { Bus, Consumer, MerxEvent } from '@merx/kit';

/**
 * Records every event on `merx.events` (a transient queue in the distributed mode, an in-process
 * queue in the embedded one) so a test can await the event its request should have caused.
 */
export class EventObserver {
  readonly seen: MerxEvent[] = [];
  private waiters: Array<{ predicate: (event: MerxEvent) => boolean; resolve: (event: MerxEvent) => void }> = [];
  private consumer: Consumer | undefined;

  static async attach(bus: Bus, name: string): Promise<EventObserver> {
    const observer = new EventObserver();
    observer.consumer = await bus.consume({ queue: name, bindings: ['#'], transient: true, prefetch: 256 }, async (event) => observer.record(event));
    return observer;
  }

  private record(event: MerxEvent): void {
    this.seen.push(event);
    this.waiters = this.waiters.filter((waiter) => {
      if (!waiter.predicate(event)) return true;
      waiter.resolve(event);
      return false;
    });
  }

  /** Resolves with the first matching event, seen already or arriving within the timeout. */
  waitFor(predicate: (event: MerxEvent) => boolean, timeoutMs = 10_000, what = 'event'): Promise<MerxEvent> {
    const already = this.seen.find(predicate);
    if (already) return Promise.resolve(already);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((waiter) => waiter.resolve !== done);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const done = (event: MerxEvent) => {
        clearTimeout(timer);
        resolve(event);
      };
      this.waiters.push({ predicate, resolve: done });
    });
  }

  forMerchant(merchantId: string): MerxEvent[] {
    return this.seen.filter((event) => event.merchant_id === merchantId);
  }

  async close(): Promise<void> {
    await this.consumer?.close();
  }
}

/**
 * Events a test put on the bus to be poisoned (PostgreSQL cannot store them, though they match
 * their schema): no consumer stores them, so the completeness checks leave them out.
 */
export const poisonedOnPurpose = new Set<string>();
