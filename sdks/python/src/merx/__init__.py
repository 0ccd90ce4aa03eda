"""The official Python library for the Merx API.

    from merx import Merx, AsyncMerx

    merx = Merx(api_key="mx_test_...")
    product = merx.products.create(sku="TSHIRT-1", title="T-shirt", price="19.99", currency="USD")
    for product in merx.products.list(limit=100):
        print(product.sku, product.price_decimal)

The clients (and httpx) are imported on first use, so ``merx.webhooks`` and ``merx.types`` work
in a webhook receiver without loading the HTTP stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import types, webhooks
from ._errors import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    ConnectionError,
    FieldError,
    InternalServerError,
    MerxError,
    NotFoundError,
    PermissionDeniedError,
    PreconditionFailedError,
    RateLimitError,
    TimeoutError,
    UnprocessableEntityError,
    WebhookVerificationError,
)
from ._pagination import AsyncPage, AsyncPaginator, SyncPage
from ._types import NOT_GIVEN, NotGiven, ResponseInfo
from ._version import __version__

if TYPE_CHECKING:
    from ._client import AsyncMerx as AsyncMerx
    from ._client import Merx as Merx

__all__ = [
    "AsyncMerx",
    "AsyncPage",
    "AsyncPaginator",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "ConnectionError",
    "FieldError",
    "InternalServerError",
    "Merx",
    "MerxError",
    "NOT_GIVEN",
    "NotFoundError",
    "NotGiven",
    "PermissionDeniedError",
    "PreconditionFailedError",
    "RateLimitError",
    "ResponseInfo",
    "SyncPage",
    "TimeoutError",
    "UnprocessableEntityError",
    "WebhookVerificationError",
    "__version__",
    "types",
    "webhooks",
]


def __getattr__(name: str) -> Any:
    if name in ("Merx", "AsyncMerx"):
        from . import _client

        return getattr(_client, name)
    raise AttributeError(f"module 'merx' has no attribute {name!r}")


def __dir__() -> "list[str]":
    return sorted(__all__)
