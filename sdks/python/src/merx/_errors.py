"""One exception hierarchy: ``MerxError`` and a subclass per HTTP status class.

Every API error carries the RFC 9457 problem document Merx answered with (``problem``) and its
main fields as attributes, so ``except merx.NotFoundError`` and ``error.code == "conflict"`` both
work. ``ConnectionError`` and ``TimeoutError`` are the cases where no answer came; they also
derive from the built-in exceptions of the same names, so generic ``except TimeoutError`` code
keeps working.
"""

from __future__ import annotations

import builtins
from typing import Any, Dict, List, Mapping, Optional, Type

from ._models import MerxObject, register_fields

__all__ = [
    "MerxError",
    "BadRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "PreconditionFailedError",
    "UnprocessableEntityError",
    "RateLimitError",
    "InternalServerError",
    "ConnectionError",
    "TimeoutError",
    "WebhookVerificationError",
    "FieldError",
    "error_for_status",
]


class MerxError(Exception):
    """The base of every error this library raises.

    For an answer from the API: ``status``, ``code`` (``"validation_failed"``, ...), ``title``,
    ``detail``, ``request_id`` and the whole ``problem`` document; ``headers`` are the
    response's. For errors without an answer (connection, timeout, configuration) ``status`` is
    ``None``.
    """

    status: Optional[int]
    code: Optional[str]
    title: Optional[str]
    detail: Optional[str]
    request_id: Optional[str]
    problem: Dict[str, Any]
    headers: Mapping[str, str]

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        problem: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
        request_id: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.problem = dict(problem or {})
        self.headers = headers if headers is not None else {}
        # The token endpoint answers in OAuth's shape ({error, error_description}), the API in
        # RFC 9457's; both read the same through these attributes.
        self.code = _text(self.problem.get("code")) or _text(self.problem.get("error"))
        self.title = _text(self.problem.get("title"))
        self.detail = _text(self.problem.get("detail")) or _text(self.problem.get("error_description"))
        self.request_id = _text(self.problem.get("request_id")) or request_id or self.headers.get("x-request-id")

    def __str__(self) -> str:
        return self.message


class BadRequestError(MerxError):
    """400: the request could not be read (malformed JSON, for instance)."""


class AuthenticationError(MerxError):
    """401: the API key or the access token was refused (``invalid_client``, ``unauthenticated``)."""


class PermissionDeniedError(MerxError):
    """403: the token lacks a scope; ``required_scope`` names it."""

    @property
    def required_scope(self) -> Optional[str]:
        return _text(self.problem.get("required_scope"))


class NotFoundError(MerxError):
    """404: no such resource for this merchant (another merchant's ids are not found either)."""


class ConflictError(MerxError):
    """409: a duplicate (``sku``), a state that forbids the change, or ``idempotency_key_in_use``."""


class PreconditionFailedError(MerxError):
    """412: ``if_match`` named an ETag the resource no longer has: someone changed it first."""


class FieldError(MerxObject):
    """One field's problem in a 422: ``field`` (``scopes[0]``), ``code`` and ``message``.

    Defined here rather than generated so the exceptions do not depend on a schema's name.
    """

    field: str
    code: str
    message: str


register_fields(FieldError, [("field", "field", None), ("code", "code", None), ("message", "message", None)], required=("field", "code", "message"))


class UnprocessableEntityError(MerxError):
    """422: the request was understood but is not valid; ``errors`` lists every field at once."""

    @property
    def errors(self) -> List[FieldError]:
        entries = self.problem.get("errors")
        if not isinstance(entries, list):
            return []
        return [FieldError(entry) for entry in entries if isinstance(entry, dict)]


class RateLimitError(MerxError):
    """429: a throttle class (``throttle_class``) is empty; ``retry_after`` says for how long."""

    @property
    def throttle_class(self) -> Optional[str]:
        return _text(self.problem.get("throttle_class"))

    @property
    def retry_after(self) -> Optional[float]:
        """Seconds to wait, from the problem document or the ``Retry-After`` header."""
        value = self.problem.get("retry_after")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        header = self.headers.get("retry-after")
        try:
            return float(header) if header is not None else None
        except ValueError:
            return None


class InternalServerError(MerxError):
    """5xx: Merx failed or is unavailable; the request was retried ``max_retries`` times first."""


class ConnectionError(MerxError, builtins.ConnectionError):
    """No answer: the connection could not be made or broke before a response arrived."""


class TimeoutError(ConnectionError, builtins.TimeoutError):
    """No answer within the timeout (60 s unless ``timeout=`` says otherwise)."""


class WebhookVerificationError(MerxError):
    """A webhook request failed verification: wrong signature, stale timestamp, bad body."""


_BY_STATUS: Dict[int, Type[MerxError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    412: PreconditionFailedError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def error_for_status(status: int) -> Type[MerxError]:
    """The class of the error for an HTTP status (``MerxError`` itself for other 4xx)."""
    if status >= 500:
        return InternalServerError
    return _BY_STATUS.get(status, MerxError)


def _text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None
