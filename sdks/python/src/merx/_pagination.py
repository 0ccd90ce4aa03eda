"""Pages of a list: one page of ``data``, iterable across every page, fetched lazily.

``for product in merx.products.list(limit=100)`` walks all products, fetching the next page only
when the loop reaches the end of the current one; ``page.data``, ``page.has_more`` and
``page.next_cursor`` are the page itself. The async client's ``list`` returns an
``AsyncPaginator``: ``await`` it for the first page, or ``async for`` over it for every item.

The classes take the function that fetches a page by cursor, so they need no HTTP here.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Awaitable, Callable, Generator, Generic, Iterator, List, Optional, TypeVar

from ._types import ResponseInfo

__all__ = ["SyncPage", "AsyncPage", "AsyncPaginator"]

_T = TypeVar("_T")


class _BasePage(Generic[_T]):
    data: List[_T]
    """The items of this page, newest first unless the endpoint says otherwise."""
    has_more: bool
    next_cursor: Optional[str]
    """Pass as ``cursor=`` for the next page; ``None`` on the last page."""
    last_response: Optional[ResponseInfo]

    def __init__(self, *, data: List[_T], has_more: bool, next_cursor: Optional[str], last_response: Optional[ResponseInfo] = None) -> None:
        self.data = data
        self.has_more = has_more
        self.next_cursor = next_cursor
        self.last_response = last_response

    @property
    def object(self) -> str:
        return "list"

    def has_next_page(self) -> bool:
        return self.has_more and self.next_cursor is not None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(data=[{len(self.data)} items], has_more={self.has_more}, next_cursor={self.next_cursor!r})"


class SyncPage(_BasePage[_T]):
    """One page of a list, iterable across all pages."""

    def __init__(
        self,
        *,
        data: List[_T],
        has_more: bool,
        next_cursor: Optional[str],
        fetch_page: Callable[[str], "SyncPage[_T]"],
        last_response: Optional[ResponseInfo] = None,
    ) -> None:
        super().__init__(data=data, has_more=has_more, next_cursor=next_cursor, last_response=last_response)
        self._fetch_page = fetch_page

    def get_next_page(self) -> "SyncPage[_T]":
        """The following page, with the same filters and limit."""
        if not self.has_next_page() or self.next_cursor is None:
            raise RuntimeError("this is the last page: check has_next_page() first")
        return self._fetch_page(self.next_cursor)

    def iter_pages(self) -> Iterator["SyncPage[_T]"]:
        """This page and every following one."""
        page: SyncPage[_T] = self
        while True:
            yield page
            if not page.has_next_page():
                return
            page = page.get_next_page()

    def auto_paging_iter(self) -> Iterator[_T]:
        """Every item of this page and the following ones (the same as iterating the page)."""
        for page in self.iter_pages():
            yield from page.data

    def __iter__(self) -> Iterator[_T]:
        return self.auto_paging_iter()


class AsyncPage(_BasePage[_T]):
    """One page of a list from the async client; ``async for`` walks all pages."""

    def __init__(
        self,
        *,
        data: List[_T],
        has_more: bool,
        next_cursor: Optional[str],
        fetch_page: Callable[[str], Awaitable["AsyncPage[_T]"]],
        last_response: Optional[ResponseInfo] = None,
    ) -> None:
        super().__init__(data=data, has_more=has_more, next_cursor=next_cursor, last_response=last_response)
        self._fetch_page = fetch_page

    async def get_next_page(self) -> "AsyncPage[_T]":
        if not self.has_next_page() or self.next_cursor is None:
            raise RuntimeError("this is the last page: check has_next_page() first")
        return await self._fetch_page(self.next_cursor)

    async def iter_pages(self) -> AsyncIterator["AsyncPage[_T]"]:
        page: AsyncPage[_T] = self
        while True:
            yield page
            if not page.has_next_page():
                return
            page = await page.get_next_page()

    async def auto_paging_iter(self) -> AsyncIterator[_T]:
        async for page in self.iter_pages():
            for item in page.data:
                yield item

    def __aiter__(self) -> AsyncIterator[_T]:
        return self.auto_paging_iter()


class AsyncPaginator(Generic[_T]):
    """What the async client's ``list`` returns before any request is made.

    ``await merx.products.list()`` is the first page; ``async for p in merx.products.list()``
    is every item of every page, one request per page as the loop needs it.
    """

    def __init__(self, fetch_first_page: Callable[[], Awaitable[AsyncPage[_T]]]) -> None:
        self._fetch_first_page = fetch_first_page

    def __await__(self) -> Generator[Any, None, AsyncPage[_T]]:
        return self._fetch_first_page().__await__()

    async def _items(self) -> AsyncIterator[_T]:
        page = await self._fetch_first_page()
        async for item in page:
            yield item

    def __aiter__(self) -> AsyncIterator[_T]:
        return self._items()
