<?php

declare(strict_types=1);

namespace Merx\Core;

/**
 * One page of a list (`data`, `hasMore`, `nextCursor`). Iterating it with `foreach` walks every
 * item of this page and then of the following ones, fetching each page only when the loop gets
 * there; `nextPage()` fetches the next page by hand.
 *
 * @template T
 *
 * @implements \IteratorAggregate<int, T>
 */
final class Page implements \IteratorAggregate
{
    /**
     * @param list<T> $data
     * @param \Closure(string): self<T> $fetchAfter fetches the page after a cursor, with the same filters
     */
    public function __construct(
        public readonly array $data,
        public readonly bool $hasMore,
        public readonly ?string $nextCursor,
        private readonly ResponseMeta $meta,
        private readonly \Closure $fetchAfter,
    ) {
    }

    public function hasNextPage(): bool
    {
        return $this->hasMore && $this->nextCursor !== null;
    }

    /** @return self<T>|null */
    public function nextPage(): ?self
    {
        return $this->hasNextPage() ? ($this->fetchAfter)((string) $this->nextCursor) : null;
    }

    /** @return \Generator<int, T> every item from this page on, across pages */
    public function getIterator(): \Generator
    {
        $page = $this;
        $index = 0;
        while ($page !== null) {
            foreach ($page->data as $item) {
                yield $index++ => $item;
            }
            $page = $page->nextPage();
        }
    }

    /** Status, headers and request id of this page's answer. */
    public function meta(): ResponseMeta
    {
        return $this->meta;
    }
}
