"""Bases of the generated resource classes, and the webhook verification every client offers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import webhooks as _webhooks
from .types import WebhookEvent

if TYPE_CHECKING:
    from ._base_client import AsyncAPIClient, SyncAPIClient

__all__ = ["SyncResource", "AsyncResource", "WebhookVerification"]


class SyncResource:
    def __init__(self, client: "SyncAPIClient") -> None:
        self._client = client


class AsyncResource:
    def __init__(self, client: "AsyncAPIClient") -> None:
        self._client = client


class WebhookVerification:
    """``client.webhooks.verify(...)``: the same as ``merx.webhooks.verify``; no API key needed."""

    def verify(
        self,
        payload: _webhooks.Payload,
        headers: _webhooks.Headers,
        secret: _webhooks.Secrets,
        *,
        tolerance: float = _webhooks.DEFAULT_TOLERANCE_SECONDS,
    ) -> WebhookEvent:
        """Checks a webhook request (signature, timestamp, body ``hmac_sha256``) and returns its
        typed event; raises ``WebhookVerificationError``. See ``merx.webhooks.verify``."""
        return _webhooks.verify(payload, headers, secret, tolerance=tolerance)

    def verify_signature(
        self,
        payload: _webhooks.Payload,
        headers: _webhooks.Headers,
        secret: _webhooks.Secrets,
        *,
        tolerance: float = _webhooks.DEFAULT_TOLERANCE_SECONDS,
    ) -> None:
        """Checks only the signature headers (an ``http`` destination's body has no envelope)."""
        _webhooks.verify_signature(payload, headers, secret, tolerance=tolerance)
