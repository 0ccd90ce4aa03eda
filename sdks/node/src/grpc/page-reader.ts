/** The value a promise settles to if it does so before the event loop's next turn, else undefined (it keeps running). */
function settledByNextTurn<T>(promise: Promise<T>): Promise<T | undefined> {
  return Promise.race([promise, new Promise<undefined>((resolve) => setImmediate(resolve, undefined))]);
}

/**
 * Reads an iterable a page at a time. A page waits for its first item only: the rest join it while
 * they are ready at once (an array, a stream with items buffered), so a source that trickles is
 * sent item by item as it comes and never held back to fill a page.
 */
export class PageReader<T> {
  /** The read under way, when a page closed before it settled: the next page starts with it. */
  private pending: Promise<IteratorResult<T>> | undefined;
  private done = false;

  constructor(private readonly items: AsyncIterator<T>) {}

  /** Up to `limit` items; none once the source has ended. A throwing source throws here. */
  async page(limit: number): Promise<T[]> {
    const page: T[] = [];
    while (page.length < limit && !this.done) {
      const read = this.read();
      const result = page.length === 0 ? await read : await settledByNextTurn(read);
      if (result === undefined) break;
      this.pending = undefined;
      if (result.done) this.done = true;
      else page.push(result.value);
    }
    return page;
  }

  /** Lets the source clean up when it was not read to its end. */
  async return(): Promise<void> {
    if (this.done) return;
    this.done = true;
    await this.items.return?.();
  }

  private read(): Promise<IteratorResult<T>> {
    if (!this.pending) {
      this.pending = this.items.next();
      // Awaited by the next page; until then a failure must not count as unhandled.
      this.pending.catch(() => undefined);
    }
    return this.pending;
  }
}
