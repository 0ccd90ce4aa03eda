import type { ResponseMeta } from './options.js';

/** The shape of every list answer. */
export interface ListAnswer<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/**
 * One page of a list. `data` holds this page; iterating with `for await` walks every item of
 * this page and the ones after it, fetching each next page only when it is reached.
 */
export class Page<T> implements AsyncIterable<T> {
  readonly data: T[];
  readonly has_more: boolean;
  readonly next_cursor: string | null;
  readonly lastResponse: ResponseMeta;

  constructor(
    answer: ListAnswer<T>,
    lastResponse: ResponseMeta,
    private readonly fetchPage: (cursor: string) => Promise<Page<T>>,
  ) {
    this.data = answer.data;
    this.has_more = answer.has_more;
    this.next_cursor = answer.next_cursor ?? null;
    Object.defineProperty(this, 'fetchPage', { enumerable: false });
    this.lastResponse = lastResponse;
  }

  hasNextPage(): boolean {
    return this.has_more && typeof this.next_cursor === 'string';
  }

  /** The page after this one; throws when there is none (check `hasNextPage()`). */
  getNextPage(): Promise<Page<T>> {
    if (!this.hasNextPage()) throw new Error('this is the last page');
    return this.fetchPage(this.next_cursor as string);
  }

  /** Every item from this page on, across pages. */
  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the walk starts at this page and moves on
    let page: Page<T> = this;
    for (;;) {
      yield* page.data;
      if (!page.hasNextPage()) return;
      page = await page.getNextPage();
    }
  }
}

/**
 * What `list` returns: await it for the first page, or iterate it directly with `for await` for
 * every item across pages (as in stripe-node and openai-node). A real Promise, so it works
 * wherever one is expected.
 */
export class PagePromise<T> extends Promise<Page<T>> implements AsyncIterable<T> {
  // then() and catch() make plain promises, not more PagePromises (whose constructor takes a loader).
  static override get [Symbol.species](): PromiseConstructor {
    return Promise;
  }

  constructor(load: () => Promise<Page<T>>) {
    super((resolve, reject) => {
      load().then(resolve, reject);
    });
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    yield* await this;
  }
}

/** The query of a list call: its generated params type (limit, cursor, filters). */
export type ListParams = object;
