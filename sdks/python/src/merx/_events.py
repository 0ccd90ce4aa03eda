"""The event a webhook carries when this library has no type for its topic.

The generated ``merx.types`` has a class per event of the API document's ``webhooks`` section;
an event newer than this library still verifies and arrives as an ``UntypedWebhookEvent`` with
``data`` as plain JSON, so a receiver never fails on a topic it does not know yet.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ._models import MerxObject, register_fields

__all__ = ["UntypedWebhookEvent"]


class UntypedWebhookEvent(MerxObject):
    """A webhook event of a topic without a generated class: the envelope, ``data`` untyped."""

    id: str
    """Event id (``evt_...``): the ``webhook-id`` header, the same on every retry and replay."""
    topic: str
    """The event name (``products.created``)."""
    merchant_id: str
    created_at: str
    api_version: str
    data: Dict[str, Any]
    """``object`` (the resource after the change) and, for updates, ``previous``."""
    hmac_sha256: Optional[str]


register_fields(
    UntypedWebhookEvent,
    [(name, name, None) for name in ("id", "topic", "merchant_id", "created_at", "api_version", "data", "hmac_sha256")],
    required=("id", "topic", "merchant_id", "created_at", "api_version", "data"),
)
