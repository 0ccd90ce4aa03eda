"""Page iteration: every item of every page, each page fetched only when the loop needs it."""

from __future__ import annotations

import asyncio
import unittest
from typing import Dict, List, Optional, Tuple

from merx import AsyncPage, AsyncPaginator, SyncPage

# cursor of a page -> (its items, the next page's cursor)
PAGES: Dict[Optional[str], Tuple[List[int], Optional[str]]] = {None: ([1, 2], "c2"), "c2": ([3, 4], "c3"), "c3": ([5], None)}


class SyncPagesTest(unittest.TestCase):
    def setUp(self) -> None:
        self.fetched: List[Optional[str]] = []

    def fetch(self, cursor: Optional[str]) -> SyncPage[int]:
        self.fetched.append(cursor)
        items, next_cursor = PAGES[cursor]
        return SyncPage(data=items, has_more=next_cursor is not None, next_cursor=next_cursor, fetch_page=self.fetch)

    def test_iterating_a_page_walks_every_page_lazily(self) -> None:
        first = self.fetch(None)
        iterator = iter(first)
        self.assertEqual([next(iterator), next(iterator)], [1, 2])
        self.assertEqual(self.fetched, [None])  # nothing more fetched yet
        self.assertEqual(next(iterator), 3)
        self.assertEqual(self.fetched, [None, "c2"])
        self.assertEqual(list(iterator), [4, 5])
        self.assertEqual(self.fetched, [None, "c2", "c3"])

    def test_pages_and_their_links(self) -> None:
        first = self.fetch(None)
        self.assertEqual([page.data for page in first.iter_pages()], [[1, 2], [3, 4], [5]])
        self.assertEqual(first.get_next_page().data, [3, 4])
        last = first.get_next_page().get_next_page()
        self.assertFalse(last.has_next_page())
        with self.assertRaises(RuntimeError):
            last.get_next_page()
        self.assertEqual(list(first.auto_paging_iter()), [1, 2, 3, 4, 5])
        self.assertEqual(first.object, "list")

    def test_a_single_page_list(self) -> None:
        page = SyncPage(data=[7], has_more=False, next_cursor=None, fetch_page=self.fetch)
        self.assertEqual(list(page), [7])
        self.assertEqual(self.fetched, [])


class AsyncPagesTest(unittest.TestCase):
    def test_await_gives_the_first_page_and_async_for_every_item(self) -> None:
        fetched: List[Optional[str]] = []

        async def fetch(cursor: Optional[str]) -> AsyncPage[int]:
            fetched.append(cursor)
            items, next_cursor = PAGES[cursor]
            return AsyncPage(data=items, has_more=next_cursor is not None, next_cursor=next_cursor, fetch_page=fetch)

        async def scenario() -> None:
            paginator = AsyncPaginator(lambda: fetch(None))
            first = await paginator
            self.assertEqual(first.data, [1, 2])
            self.assertEqual([item async for item in paginator], [1, 2, 3, 4, 5])
            self.assertEqual([page.data async for page in first.iter_pages()], [[1, 2], [3, 4], [5]])
            last = await (await first.get_next_page()).get_next_page()
            with self.assertRaises(RuntimeError):
                await last.get_next_page()

        asyncio.run(scenario())
        self.assertEqual(fetched[:4], [None, None, "c2", "c3"])


if __name__ == "__main__":
    unittest.main()
