"""The HTTP core of both clients: preparing a call, sending it with retries and token refresh,
and turning the answer into a model, a page or an exception.

Everything that does not wait on the network is shared (``_ClientCore``); ``SyncAPIClient`` and
``AsyncAPIClient`` differ only in how they send, sleep and fetch a token.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import logging
import os
import platform
import sys
import time
import uuid
from decimal import Decimal
from typing import Any, Callable, Dict, Generator, List, Mapping, NamedTuple, Optional, Tuple, Type, TypeVar, Union
from urllib.parse import quote, urlencode

import httpx

from ._errors import MerxError, error_for_status
from ._errors import ConnectionError as MerxConnectionError
from ._errors import TimeoutError as MerxTimeoutError
from ._models import MerxObject
from ._operations import TOKEN_PATH
from ._pagination import AsyncPage, AsyncPaginator, SyncPage
from ._retry import backoff_delay, delay_for_answer
from ._tokens import AsyncTokenCache, SyncTokenCache, TokenAnswer
from ._types import NOT_GIVEN, NotGiven, ResponseInfo, format_timestamp, omit_not_given
from ._version import __version__

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MAX_RETRIES", "DEFAULT_TIMEOUT", "RequestOptions", "SyncAPIClient", "AsyncAPIClient", "TimeoutLike", "fill_path", "merge_headers"]

DEFAULT_BASE_URL = "http://localhost:8080"
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2

#: Seconds, an ``httpx.Timeout`` for per-phase limits, or ``None`` for no limit at all.
TimeoutLike = Union[float, httpx.Timeout, None]

_ModelT = TypeVar("_ModelT", bound=MerxObject)
_ItemT = TypeVar("_ItemT")

logger = logging.getLogger("merx")

# No answer worth retrying: the network failed or the server closed the connection mid-answer.
# An unsupported URL scheme or a local protocol error would fail the same way again.
_RETRYABLE_TRANSPORT_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


class RequestOptions:
    """The per-request options every method takes as keyword arguments."""

    __slots__ = ("idempotency_key", "if_match", "extra_headers", "timeout", "max_retries")

    def __init__(
        self,
        *,
        idempotency_key: Optional[str] = None,
        if_match: Optional[str] = None,
        extra_headers: Optional[Mapping[str, str]] = None,
        timeout: Union[TimeoutLike, NotGiven] = NOT_GIVEN,
        max_retries: Union[int, NotGiven] = NOT_GIVEN,
    ) -> None:
        self.idempotency_key = idempotency_key
        self.if_match = if_match
        self.extra_headers = extra_headers
        self.timeout = timeout
        self.max_retries = max_retries


class _Call:
    """One logical request: every attempt of it sends the same bytes and Idempotency-Key."""

    __slots__ = ("method", "path", "auth", "query", "content", "headers", "timeout", "max_retries")

    def __init__(
        self,
        method: str,
        path: str,
        auth: str,
        query: Optional[Dict[str, Any]],
        content: Optional[bytes],
        headers: Dict[str, str],
        timeout: TimeoutLike,
        max_retries: int,
    ) -> None:
        self.method = method
        self.path = path
        self.auth = auth
        self.query = query
        self.content = content
        self.headers = headers
        self.timeout = timeout
        self.max_retries = max_retries


class _Authorize(NamedTuple):
    """Step: the Authorization header for this auth scheme (fetching a token if needed)."""

    auth: str


class _Send(NamedTuple):
    """Step: send the request; the outcome is the response or the transport exception."""

    request: httpx.Request


class _Sleep(NamedTuple):
    seconds: float


class _Invalidate(NamedTuple):
    """Step: drop this access token from the cache."""

    token: str


_Step = Union[_Authorize, _Send, _Sleep, _Invalidate]


def fill_path(template: str, **values: str) -> str:
    """``/api/v1/products/{id}`` with each value percent-encoded (an id can never add a segment)."""
    for name, value in values.items():
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string, not {value!r}")
        template = template.replace("{" + name + "}", quote(value, safe=""))
    return template


def merge_headers(given: Mapping[str, Any], extra: Optional[Mapping[str, str]]) -> Dict[str, str]:
    """Header parameters of an operation (those given) with the caller's extra headers on top."""
    merged = {name: str(value) for name, value in given.items() if value is not None and not isinstance(value, NotGiven)}
    merged.update(extra or {})
    return merged


def user_agent() -> str:
    return f"merx-python/{__version__} python/{platform.python_version()}"


def _configure_debug_logging() -> None:
    """``MERX_LOG=debug`` logs each request to stderr (method, path, status, time, request id)."""
    if os.environ.get("MERX_LOG", "").strip().lower() != "debug":
        return
    logger.setLevel(logging.DEBUG)
    if not any(getattr(handler, "_merx_debug", False) for handler in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        handler._merx_debug = True  # type: ignore[attr-defined]
        logger.addHandler(handler)


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        # format "f": never exponent notation ("1E+2"), which is not a decimal string the API takes.
        return format(value, "f")
    if isinstance(value, datetime.datetime):
        return format_timestamp(value)
    if isinstance(value, NotGiven):
        raise TypeError("NOT_GIVEN is only a default of top-level parameters")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.datetime):
        return format_timestamp(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, (list, tuple)):
        return [_query_value(item) for item in value]
    return value


def _client_id(api_key: str) -> str:
    client_id, separator, secret = api_key.rpartition("_")
    if not separator or not client_id or not secret or not api_key.startswith("mx_"):
        raise MerxError("api_key does not look like a Merx API key (mx_<mode>_<keyid>_<secret>)")
    return client_id


class _ClientCore:
    _http: Union[httpx.Client, httpx.AsyncClient]

    def __init__(
        self,
        *,
        api_key: Optional[str],
        operator_token: Optional[str],
        base_url: Optional[str],
        timeout: TimeoutLike,
        max_retries: int,
        default_headers: Optional[Mapping[str, str]],
    ) -> None:
        if api_key is None:
            api_key = os.environ.get("MERX_API_KEY") or None
        self.client_id = _client_id(api_key) if api_key is not None else None
        self.api_key = api_key
        self.operator_token = operator_token if operator_token is not None else os.environ.get("MERX_OPERATOR_TOKEN") or None
        url = (base_url if base_url is not None else os.environ.get("MERX_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise MerxError(f"base_url must be an http or https URL, not {url!r}")
        self.base_url = url
        if not isinstance(max_retries, int) or max_retries < 0:
            raise MerxError("max_retries is a whole number of retries, 0 or more")
        self.timeout = timeout
        self.max_retries = max_retries
        self.default_headers: Dict[str, str] = dict(default_headers or {})
        _configure_debug_logging()

    def _copy_settings(
        self, timeout: Union[TimeoutLike, NotGiven], max_retries: Union[int, NotGiven], default_headers: Optional[Mapping[str, str]]
    ) -> Dict[str, Any]:
        """The constructor arguments of a ``with_options`` copy: these settings, some replaced."""
        return {
            "api_key": self.api_key,
            "base_url": self.base_url,
            "operator_token": self.operator_token,
            "timeout": self.timeout if isinstance(timeout, NotGiven) else timeout,
            "max_retries": self.max_retries if isinstance(max_retries, NotGiven) else max_retries,
            "default_headers": {**self.default_headers, **(default_headers or {})},
        }

    def __repr__(self) -> str:  # never the key or the token
        return f"{type(self).__name__}(base_url={self.base_url!r}, client_id={self.client_id!r})"

    # Preparing ---------------------------------------------------------------------------

    def _prepare(
        self,
        method: str,
        path: str,
        *,
        auth: str,
        options: RequestOptions,
        query: Optional[Mapping[str, Any]] = None,
        body: Optional[Mapping[str, Any]] = None,
        form: Optional[Mapping[str, str]] = None,
    ) -> _Call:
        headers: Dict[str, str] = {"Accept": "application/json", "User-Agent": user_agent(), **self.default_headers}
        content: Optional[bytes] = None
        if body is not None:
            content = json.dumps(omit_not_given(body), default=_json_default, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        elif form is not None:
            content = urlencode(form).encode("ascii")
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if method == "POST" and form is None:
            # Generated once per call, so every retry of it carries the same key and a create
            # that reached the server before the connection broke is answered, not repeated.
            headers["Idempotency-Key"] = options.idempotency_key or str(uuid.uuid4())
        elif options.idempotency_key is not None:
            headers["Idempotency-Key"] = options.idempotency_key
        if options.if_match is not None:
            headers["If-Match"] = options.if_match
        headers.update(options.extra_headers or {})
        given_query = {name: _query_value(value) for name, value in omit_not_given(query or {}).items() if value is not None}
        timeout = self.timeout if isinstance(options.timeout, NotGiven) else options.timeout
        max_retries = self.max_retries if isinstance(options.max_retries, NotGiven) else options.max_retries
        return _Call(method, path, auth, given_query or None, content, headers, timeout, max_retries)

    def _operator_authorization(self) -> str:
        if self.operator_token is None:
            raise MerxError("This operation is for operators: pass operator_token= or set MERX_OPERATOR_TOKEN")
        return f"Bearer {self.operator_token}"

    def _missing_key(self) -> MerxError:
        return MerxError("No API key: pass api_key= or set MERX_API_KEY")

    def _token_call(self) -> _Call:
        if self.api_key is None or self.client_id is None:
            raise self._missing_key()
        basic = base64.b64encode(f"{self.client_id}:{self.api_key}".encode("utf-8")).decode("ascii")
        call = self._prepare("POST", TOKEN_PATH, auth="none", options=RequestOptions(), form={"grant_type": "client_credentials"})
        call.headers["Authorization"] = f"Basic {basic}"
        return call

    def _build_request(self, call: _Call, authorization: Optional[str]) -> httpx.Request:
        headers = dict(call.headers)
        if authorization is not None:
            headers["Authorization"] = authorization
        return self._http.build_request(call.method, self.base_url + call.path, params=call.query, content=call.content, headers=headers, timeout=call.timeout)

    # Sending -----------------------------------------------------------------------------

    def _attempts(self, call: _Call) -> Generator[_Step, Any, httpx.Response]:
        """The retry and token-refresh policy of one call, without I/O.

        It yields what it needs done (an Authorization header, a request sent, a pause) and is
        sent the outcome; the sync and the async client each drive it with their own I/O, so the
        policy exists once.
        """
        retries_taken = 0
        token_refreshed = False
        while True:
            authorization, token = yield _Authorize(call.auth)
            started = time.perf_counter()
            outcome = yield _Send(self._build_request(call, authorization))
            if isinstance(outcome, Exception):
                delay = self._transport_delay(call, outcome, retries_taken)
                if delay is None:
                    raise self._transport_error(call, outcome) from outcome
                self._log_retry(call, type(outcome).__name__, delay)
                yield _Sleep(delay)
                retries_taken += 1
                continue
            response: httpx.Response = outcome
            self._log_answer(call, response, started, retries_taken + 1)
            if response.status_code == 401 and call.auth == "oauth2" and token is not None and not token_refreshed:
                # The token was refused before it expired (revoked, merchant suspended and
                # reactivated, clock skew): fetch a new one once and repeat the request, outside
                # the retry budget.
                token_refreshed = True
                yield _Invalidate(token)
                continue
            delay = self._answer_delay(call, response, retries_taken)
            if delay is None:
                return response
            self._log_retry(call, f"answered {response.status_code}", delay)
            yield _Sleep(delay)
            retries_taken += 1

    # Answers -----------------------------------------------------------------------------

    def _answer_delay(self, call: _Call, response: httpx.Response, retries_taken: int) -> Optional[float]:
        code = None
        if response.status_code == 409:
            code = _problem(response).get("code")
        return delay_for_answer(response.status_code, code if isinstance(code, str) else None, response.headers, retries_taken, call.max_retries)

    def _transport_delay(self, call: _Call, error: Exception, retries_taken: int) -> Optional[float]:
        if retries_taken >= call.max_retries or not isinstance(error, _RETRYABLE_TRANSPORT_ERRORS):
            return None
        return backoff_delay(retries_taken)

    def _transport_error(self, call: _Call, error: Exception) -> MerxError:
        if isinstance(error, httpx.TimeoutException):
            return MerxTimeoutError(f"Merx did not answer {call.method} {call.path} in time ({type(error).__name__})")
        return MerxConnectionError(f"No answer from Merx at {self.base_url} for {call.method} {call.path}: {error or type(error).__name__}")

    def _error(self, response: httpx.Response) -> MerxError:
        problem = _problem(response)
        status = response.status_code
        detail = problem.get("detail") or problem.get("error_description") or response.reason_phrase
        code = problem.get("code") or problem.get("error") or "error"
        request_id = response.headers.get("x-request-id")
        message = f"{detail} ({status} {code}{f', request {request_id}' if request_id else ''})"
        return error_for_status(status)(message, status=status, problem=problem, headers=response.headers, request_id=request_id)

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            raise MerxError(f"Merx answered {response.status_code} without valid JSON", status=response.status_code, headers=response.headers) from None

    def _log_answer(self, call: _Call, response: httpx.Response, started: float, attempt: int) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s %s -> %s in %d ms (request_id=%s, attempt %d)",
                call.method,
                call.path,
                response.status_code,
                (time.perf_counter() - started) * 1000,
                response.headers.get("x-request-id"),
                attempt,
            )

    def _log_retry(self, call: _Call, reason: str, delay: float) -> None:
        logger.debug("%s %s: %s; retrying in %.2f s", call.method, call.path, reason, delay)

    def _token_answer(self, response: httpx.Response) -> TokenAnswer:
        if response.status_code >= 400:
            raise self._error(response)
        answer = self._json(response)
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if not isinstance(token, str):
            raise MerxError("The token endpoint answered without an access_token", status=response.status_code)
        expires_in = answer.get("expires_in")
        return token, float(expires_in) if isinstance(expires_in, (int, float)) else 300.0

    def _page_parts(self, response: httpx.Response, convert: Callable[[Any], _ItemT]) -> Tuple[List[_ItemT], bool, Optional[str], ResponseInfo]:
        answer = self._json(response)
        data = [convert(item) for item in answer.get("data", [])]
        next_cursor = answer.get("next_cursor")
        return data, bool(answer.get("has_more")), next_cursor if isinstance(next_cursor, str) else None, ResponseInfo(response.status_code, response.headers)

    def _model(self, response: httpx.Response, cls: Type[_ModelT]) -> _ModelT:
        return cls(self._json(response))._with_response(ResponseInfo(response.status_code, response.headers))


def _problem(response: httpx.Response) -> Dict[str, Any]:
    try:
        parsed = response.json()
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _at_cursor(call: _Call, cursor: Optional[str]) -> _Call:
    """The same list call for the page at ``cursor`` (the first page for ``None``)."""
    if cursor is None:
        return call
    query = {**(call.query or {}), "cursor": cursor}
    return _Call(call.method, call.path, call.auth, query, call.content, call.headers, call.timeout, call.max_retries)


def _accepting_text(call: _Call) -> _Call:
    call.headers["Accept"] = "text/plain, */*"
    return call


class SyncAPIClient(_ClientCore):
    _http: httpx.Client
    _tokens: SyncTokenCache

    def _init_transport(self, http_client: Optional[httpx.Client]) -> None:
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.Client(follow_redirects=False)
        self._tokens = SyncTokenCache(self._fetch_token)

    def _fetch_token(self) -> TokenAnswer:
        return self._token_answer(self._send(self._token_call()))

    def _authorization(self, auth: str) -> Tuple[Optional[str], Optional[str]]:
        """(Authorization header, the access token in it when it is one)."""
        if auth == "oauth2":
            token = self._tokens.get() if self.api_key is not None else None
            if token is None:
                raise self._missing_key()
            return f"Bearer {token}", token
        return (self._operator_authorization() if auth == "operator" else None), None

    def _send(self, call: _Call) -> httpx.Response:
        steps = self._attempts(call)
        outcome: Any = None
        while True:
            try:
                step = steps.send(outcome)
            except StopIteration as finished:
                response: httpx.Response = finished.value
                return response
            outcome = None
            if isinstance(step, _Authorize):
                outcome = self._authorization(step.auth)
            elif isinstance(step, _Send):
                try:
                    outcome = self._http.send(step.request)
                except httpx.TransportError as error:
                    outcome = error
            elif isinstance(step, _Sleep):
                time.sleep(step.seconds)
            else:
                self._tokens.invalidate(step.token)

    def _checked(self, call: _Call) -> httpx.Response:
        response = self._send(call)
        if response.status_code >= 400:
            raise self._error(response)
        return response

    def _request_model(self, cls: Type[_ModelT], call: _Call) -> _ModelT:
        return self._model(self._checked(call), cls)

    def _request_json(self, convert: Callable[[Any], Any], call: _Call) -> Any:
        return convert(self._json(self._checked(call)))

    def _request_none(self, call: _Call) -> None:
        self._checked(call)

    def _request_text(self, call: _Call) -> str:
        return self._checked(_accepting_text(call)).text

    def _request_page(self, convert: Callable[[Any], _ItemT], call: _Call) -> SyncPage[_ItemT]:
        def fetch(cursor: Optional[str]) -> SyncPage[_ItemT]:
            response = self._checked(_at_cursor(call, cursor))
            data, has_more, next_cursor, info = self._page_parts(response, convert)
            return SyncPage(data=data, has_more=has_more, next_cursor=next_cursor, fetch_page=fetch, last_response=info)

        return fetch(None)


class AsyncAPIClient(_ClientCore):
    _http: httpx.AsyncClient
    _tokens: AsyncTokenCache

    def _init_transport(self, http_client: Optional[httpx.AsyncClient]) -> None:
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.AsyncClient(follow_redirects=False)
        self._tokens = AsyncTokenCache(self._fetch_token)

    async def _fetch_token(self) -> TokenAnswer:
        return self._token_answer(await self._send(self._token_call()))

    async def _authorization(self, auth: str) -> Tuple[Optional[str], Optional[str]]:
        if auth == "oauth2":
            token = await self._tokens.get() if self.api_key is not None else None
            if token is None:
                raise self._missing_key()
            return f"Bearer {token}", token
        return (self._operator_authorization() if auth == "operator" else None), None

    async def _send(self, call: _Call) -> httpx.Response:
        steps = self._attempts(call)
        outcome: Any = None
        while True:
            try:
                step = steps.send(outcome)
            except StopIteration as finished:
                response: httpx.Response = finished.value
                return response
            outcome = None
            if isinstance(step, _Authorize):
                outcome = await self._authorization(step.auth)
            elif isinstance(step, _Send):
                try:
                    outcome = await self._http.send(step.request)
                except httpx.TransportError as error:
                    outcome = error
            elif isinstance(step, _Sleep):
                await asyncio.sleep(step.seconds)
            else:
                self._tokens.invalidate(step.token)

    async def _checked(self, call: _Call) -> httpx.Response:
        response = await self._send(call)
        if response.status_code >= 400:
            raise self._error(response)
        return response

    async def _request_model(self, cls: Type[_ModelT], call: _Call) -> _ModelT:
        return self._model(await self._checked(call), cls)

    async def _request_json(self, convert: Callable[[Any], Any], call: _Call) -> Any:
        return convert(self._json(await self._checked(call)))

    async def _request_none(self, call: _Call) -> None:
        await self._checked(call)

    async def _request_text(self, call: _Call) -> str:
        return (await self._checked(_accepting_text(call))).text

    def _request_page(self, convert: Callable[[Any], _ItemT], call: _Call) -> AsyncPaginator[_ItemT]:
        async def fetch(cursor: Optional[str]) -> AsyncPage[_ItemT]:
            response = await self._checked(_at_cursor(call, cursor))
            data, has_more, next_cursor, info = self._page_parts(response, convert)
            return AsyncPage(data=data, has_more=has_more, next_cursor=next_cursor, fetch_page=fetch, last_response=info)

        return AsyncPaginator(lambda: fetch(None))
