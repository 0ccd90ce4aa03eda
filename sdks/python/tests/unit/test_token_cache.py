"""The token cache: reuse, refresh before expiry, one refresh for concurrent callers."""

from __future__ import annotations

import asyncio
import threading
import time
import unittest
from typing import List, Tuple

from merx._tokens import AsyncTokenCache, SyncTokenCache, refresh_margin


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class SyncTokenCacheTest(unittest.TestCase):
    def test_reused_until_a_minute_before_expiry(self) -> None:
        clock, issued = Clock(), []

        def fetch() -> Tuple[str, float]:
            issued.append(f"t{len(issued) + 1}")
            return issued[-1], 900.0

        cache = SyncTokenCache(fetch, clock)
        self.assertEqual(cache.get(), "t1")
        clock.now += 839
        self.assertEqual(cache.get(), "t1")
        clock.now += 1  # 60 s before expiry
        self.assertEqual(cache.get(), "t2")
        self.assertEqual(issued, ["t1", "t2"])

    def test_short_tokens_refresh_at_half_their_life(self) -> None:
        self.assertEqual(refresh_margin(900), 60)
        self.assertEqual(refresh_margin(8), 4)

    def test_invalidate_drops_only_the_token_it_names(self) -> None:
        counter = iter(range(1, 10))
        cache = SyncTokenCache(lambda: (f"t{next(counter)}", 900.0), Clock())
        self.assertEqual(cache.get(), "t1")
        cache.invalidate("t0")  # an older token: keep the current one
        self.assertEqual(cache.get(), "t1")
        cache.invalidate("t1")
        self.assertEqual(cache.get(), "t2")

    def test_threads_wait_for_one_refresh(self) -> None:
        calls: List[int] = []
        release = threading.Event()

        def slow_fetch() -> Tuple[str, float]:
            calls.append(1)
            release.wait(5)
            return "shared", 900.0

        cache = SyncTokenCache(slow_fetch)
        results: List[str] = []
        threads = [threading.Thread(target=lambda: results.append(cache.get())) for _ in range(10)]
        for thread in threads:
            thread.start()
        time.sleep(0.1)  # let every thread reach the cache while the first fetch is blocked
        release.set()
        for thread in threads:
            thread.join()
        self.assertEqual((len(calls), results), (1, ["shared"] * 10))


class AsyncTokenCacheTest(unittest.TestCase):
    def test_tasks_share_one_refresh_and_share_its_failure(self) -> None:
        calls: List[int] = []

        async def fetch() -> Tuple[str, float]:
            calls.append(1)
            await asyncio.sleep(0.05)
            if len(calls) == 1:
                raise RuntimeError("token endpoint down")
            return "second", 900.0

        async def scenario() -> None:
            cache = AsyncTokenCache(fetch)
            failures = await asyncio.gather(*(cache.get() for _ in range(5)), return_exceptions=True)
            self.assertTrue(all(isinstance(failure, RuntimeError) for failure in failures))
            tokens = await asyncio.gather(*(cache.get() for _ in range(5)))
            self.assertEqual(tokens, ["second"] * 5)

        asyncio.run(scenario())
        self.assertEqual(len(calls), 2)

    def test_a_cancelled_waiter_does_not_cancel_the_refresh(self) -> None:
        async def fetch() -> Tuple[str, float]:
            await asyncio.sleep(0.05)
            return "token", 900.0

        async def scenario() -> None:
            cache = AsyncTokenCache(fetch)
            first = asyncio.ensure_future(cache.get())
            second = asyncio.ensure_future(cache.get())
            await asyncio.sleep(0.01)
            first.cancel()
            self.assertEqual(await second, "token")

        asyncio.run(scenario())


if __name__ == "__main__":
    unittest.main()
