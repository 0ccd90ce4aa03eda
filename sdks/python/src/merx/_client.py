"""``Merx`` and ``AsyncMerx``: the two clients, with the same resources and options."""

from __future__ import annotations

from types import TracebackType
from typing import Mapping, Optional, Type, Union

import httpx

from ._base_client import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, AsyncAPIClient, SyncAPIClient, TimeoutLike, _ClientCore
from ._resources import AsyncResources, SyncResources
from ._types import NOT_GIVEN, NotGiven

__all__ = ["Merx", "AsyncMerx"]


class Merx(SyncAPIClient, SyncResources):
    """The Merx API client.

    ``Merx(api_key="mx_test_...")``, or ``Merx()`` with ``MERX_API_KEY`` set. The key is exchanged
    for an access token on the first request and the token is refreshed before it expires; the
    key itself is sent only to the token endpoint. Safe to share between threads.

    Args:
        api_key: The API key (``mx_<mode>_<keyid>_<secret>``); default ``MERX_API_KEY``.
        base_url: Where Merx runs; default ``MERX_BASE_URL``, else ``http://localhost:8080``.
        operator_token: Only for the operator API (``client.merchants.admin...``); default
            ``MERX_OPERATOR_TOKEN``.
        timeout: Seconds per request (or an ``httpx.Timeout``; ``None`` for none); default 60.
        max_retries: Retries of a failed request (connection, 408, 409 in use, 429, 5xx); default 2.
        default_headers: Headers sent with every request.
        http_client: Your own ``httpx.Client`` (proxies, certificates, transports); you close it.
    """

    def __init__(
        self,
        api_key: Optional[str] = None,
        *,
        base_url: Optional[str] = None,
        operator_token: Optional[str] = None,
        timeout: TimeoutLike = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Optional[Mapping[str, str]] = None,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        _ClientCore.__init__(
            self,
            api_key=api_key,
            operator_token=operator_token,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
        )
        self._init_transport(http_client)
        self._init_resources(self)

    def with_options(
        self,
        *,
        timeout: Union[TimeoutLike, NotGiven] = NOT_GIVEN,
        max_retries: Union[int, NotGiven] = NOT_GIVEN,
        default_headers: Optional[Mapping[str, str]] = None,
    ) -> "Merx":
        """A client with other defaults that shares this one's connections and access token:
        ``merx.with_options(max_retries=5).products.create(...)``."""
        copy = Merx(http_client=self._http, **self._copy_settings(timeout, max_retries, default_headers))
        copy._tokens = self._tokens
        return copy

    def close(self) -> None:
        """Closes the connections (not those of an ``http_client`` you passed in)."""
        if self._owns_http:
            self._http.close()

    def is_closed(self) -> bool:
        return self._http.is_closed

    def __enter__(self) -> "Merx":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], traceback: Optional[TracebackType]) -> None:
        self.close()


class AsyncMerx(AsyncAPIClient, AsyncResources):
    """The Merx API client for asyncio: the same resources as ``Merx``, awaited.

    ``async with AsyncMerx(api_key=...) as merx: product = await merx.products.create(...)``.
    Concurrent tasks share one access token and one refresh. Use a client from one event loop.
    The arguments are those of ``Merx``; ``http_client`` is an ``httpx.AsyncClient``.
    """

    def __init__(
        self,
        api_key: Optional[str] = None,
        *,
        base_url: Optional[str] = None,
        operator_token: Optional[str] = None,
        timeout: TimeoutLike = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Optional[Mapping[str, str]] = None,
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        _ClientCore.__init__(
            self,
            api_key=api_key,
            operator_token=operator_token,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
        )
        self._init_transport(http_client)
        self._init_resources(self)

    def with_options(
        self,
        *,
        timeout: Union[TimeoutLike, NotGiven] = NOT_GIVEN,
        max_retries: Union[int, NotGiven] = NOT_GIVEN,
        default_headers: Optional[Mapping[str, str]] = None,
    ) -> "AsyncMerx":
        """A client with other defaults sharing this one's connections and access token."""
        copy = AsyncMerx(http_client=self._http, **self._copy_settings(timeout, max_retries, default_headers))
        copy._tokens = self._tokens
        return copy

    async def close(self) -> None:
        """Closes the connections (not those of an ``http_client`` you passed in)."""
        if self._owns_http:
            await self._http.aclose()

    def is_closed(self) -> bool:
        return self._http.is_closed

    async def __aenter__(self) -> "AsyncMerx":
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], traceback: Optional[TracebackType]) -> None:
        await self.close()
