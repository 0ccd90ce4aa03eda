"""Small types shared by the hand-written runtime and the generated code.

Nothing here imports httpx: the models, the webhook verifier and the pagination logic work
without the HTTP stack.
"""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any, Dict, Mapping, Optional, Union

from typing import Literal

__all__ = ["NOT_GIVEN", "NotGiven", "Money", "Timestamp", "ResponseInfo", "omit_not_given", "format_timestamp"]


class NotGiven:
    """The default of optional parameters: "leave it out of the request".

    ``None`` cannot play that part because it is a value of its own: ``description=None`` sends
    ``"description": null`` and clears the field, while leaving ``description`` out keeps it.
    """

    _instance: Optional["NotGiven"] = None

    def __new__(cls) -> "NotGiven":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"

    def __reduce__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven()

#: A money amount: a decimal string on the wire. A ``Decimal`` is accepted and sent as its exact
#: decimal string; a float never is (binary floats cannot hold most cents exactly).
Money = Union[str, Decimal]

#: A point in time for filters: an ISO 8601 string as the API writes them, or a ``datetime``.
Timestamp = Union[str, datetime.datetime]


def omit_not_given(values: Mapping[str, Any]) -> Dict[str, Any]:
    """The entries of ``values`` that were given (``None`` included: it means null)."""
    return {key: value for key, value in values.items() if not isinstance(value, NotGiven)}


def format_timestamp(value: Timestamp) -> str:
    """The API's timestamp format (UTC, milliseconds, ``Z``); strings pass through unchanged.

    A naive ``datetime`` is taken as UTC, which is what every timestamp of the API is in.
    """
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    utc = value.astimezone(datetime.timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


class ResponseInfo:
    """What the HTTP response said besides its body: ``request_id``, ``etag``, status and headers.

    Every object a client method returns carries one as ``last_response`` (the name Stripe's
    libraries use), so ``product.last_response.etag`` feeds ``if_match=`` and
    ``product.last_response.request_id`` is what support asks for.
    """

    __slots__ = ("status_code", "headers")

    def __init__(self, status_code: int, headers: Mapping[str, str]) -> None:
        self.status_code = status_code
        #: The response headers (case-insensitive when they come from httpx).
        self.headers = headers

    @property
    def request_id(self) -> Optional[str]:
        """The ``X-Request-Id`` Merx gave the request."""
        return self.headers.get("x-request-id")

    @property
    def etag(self) -> Optional[str]:
        """The resource's ``ETag`` (``"v3"``), for ``if_match=`` on the next update."""
        return self.headers.get("etag")

    @property
    def idempotent_replayed(self) -> bool:
        """True when the answer is the stored first answer to the same ``Idempotency-Key``."""
        return self.headers.get("idempotent-replayed") == "true"

    def __repr__(self) -> str:
        return f"ResponseInfo(status_code={self.status_code}, request_id={self.request_id!r}, etag={self.etag!r})"
