"""The access token cache: one token per client, refreshed before it expires.

The API key is exchanged for a token (``client_credentials``) on first use. The token is reused
until a minute before it expires (half its lifetime for tokens shorter than two minutes), then
refreshed. Concurrent callers never start two refreshes: they wait for the one in flight (a
lock in the sync client, one shared future in the async client). A token the API refused (401)
is dropped so the next caller fetches a new one.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Awaitable, Callable, Optional, Tuple

__all__ = ["AccessToken", "SyncTokenCache", "AsyncTokenCache", "refresh_margin"]

#: (access token, lifetime in seconds) as the token endpoint answered.
TokenAnswer = Tuple[str, float]

REFRESH_BEFORE_EXPIRY = 60.0


def refresh_margin(expires_in: float) -> float:
    return min(REFRESH_BEFORE_EXPIRY, expires_in / 2)


class AccessToken:
    __slots__ = ("value", "expires_at", "refresh_at")

    def __init__(self, value: str, expires_in: float, now: float) -> None:
        self.value = value
        self.expires_at = now + expires_in
        self.refresh_at = self.expires_at - refresh_margin(expires_in)


class SyncTokenCache:
    def __init__(self, fetch: Callable[[], TokenAnswer], clock: Callable[[], float] = time.monotonic) -> None:
        self._fetch = fetch
        self._clock = clock
        self._token: Optional[AccessToken] = None
        self._lock = threading.Lock()

    def get(self) -> str:
        token = self._token
        if token is not None and self._clock() < token.refresh_at:
            return token.value
        with self._lock:
            token = self._token
            if token is not None and self._clock() < token.refresh_at:
                return token.value  # another thread refreshed while this one waited
            value, expires_in = self._fetch()
            self._token = AccessToken(value, expires_in, self._clock())
            return value

    def invalidate(self, value: str) -> None:
        """Drops ``value`` if it is still the cached token (not if another thread replaced it)."""
        with self._lock:
            if self._token is not None and self._token.value == value:
                self._token = None


class AsyncTokenCache:
    def __init__(self, fetch: Callable[[], Awaitable[TokenAnswer]], clock: Callable[[], float] = time.monotonic) -> None:
        self._fetch = fetch
        self._clock = clock
        self._token: Optional[AccessToken] = None
        self._refreshing: Optional["asyncio.Future[str]"] = None

    async def get(self) -> str:
        token = self._token
        if token is not None and self._clock() < token.refresh_at:
            return token.value
        if self._refreshing is None:
            self._refreshing = asyncio.ensure_future(self._refresh())
            # If every waiter was cancelled, nobody reads a failure: mark it read, not "never retrieved".
            self._refreshing.add_done_callback(_mark_retrieved)
        # shield(): one caller being cancelled must not cancel the refresh the others wait for.
        return await asyncio.shield(self._refreshing)

    async def _refresh(self) -> str:
        try:
            value, expires_in = await self._fetch()
            self._token = AccessToken(value, expires_in, self._clock())
            return value
        finally:
            self._refreshing = None

    def invalidate(self, value: str) -> None:
        if self._token is not None and self._token.value == value:
            self._token = None


def _mark_retrieved(future: "asyncio.Future[str]") -> None:
    if not future.cancelled():
        future.exception()
