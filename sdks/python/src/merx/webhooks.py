"""Verifying the webhooks Merx sends: ``merx.webhooks.verify(payload, headers, secret)``.

Each delivery is signed twice with the subscription's ``whsec_`` secret (the HMAC key is the
base64 after the prefix):

- the Standard Webhooks headers: ``webhook-signature: v1,<base64 HMAC-SHA256 of
  "{webhook-id}.{webhook-timestamp}.{body}">``, two signatures for 24 hours after a secret
  rotation (newest first), and ``webhook-timestamp`` refused when more than five minutes off;
- ``hmac_sha256`` in the body: the hex HMAC-SHA256 of the RFC 8785 canonical JSON of the body's
  other fields, which still verifies after the JSON was parsed and stored
  (``verify_body_hmac``).

No API key is needed: this module uses neither the network nor httpx.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ._canonical_json import canonical_json
from ._errors import WebhookVerificationError
from ._events import UntypedWebhookEvent
from .types import WEBHOOK_EVENT_TYPES, WebhookEvent

__all__ = [
    "DEFAULT_TOLERANCE_SECONDS",
    "UntypedWebhookEvent",
    "WebhookEvent",
    "WebhookVerificationError",
    "construct_event",
    "sign",
    "verify",
    "verify_body_hmac",
    "verify_signature",
]

#: How far ``webhook-timestamp`` may be from this machine's clock, either way (Standard Webhooks).
DEFAULT_TOLERANCE_SECONDS = 300

_SECRET_PREFIX = "whsec_"

Payload = Union[str, bytes, bytearray]
Secrets = Union[str, Sequence[str]]
#: The request headers: a dict, httpx's or a framework's headers, ``http.server``'s message, or
#: (name, value) pairs. Names are matched without regard to case.
Headers = Union[Mapping[str, str], Iterable[Tuple[str, str]], Any]


def verify(
    payload: Payload,
    headers: Headers,
    secret: Secrets,
    *,
    tolerance: float = DEFAULT_TOLERANCE_SECONDS,
) -> WebhookEvent:
    """Checks a webhook request and returns its typed event.

    ``payload`` is the raw request body exactly as received (bytes, or the text decoded from
    UTF-8; never re-serialised JSON). ``secret`` is the subscription's ``whsec_`` secret, or a
    list of them while you move to a rotated one. Raises ``WebhookVerificationError`` when a
    header is missing, the timestamp is more than ``tolerance`` seconds off, no signature
    matches, or the body's ``hmac_sha256`` does not.

    During a secret rotation Merx signs the headers with both secrets but the body's
    ``hmac_sha256`` with the new one only; a receiver still holding only the old secret is
    verified by the header signature alone (it covers the whole body, ``hmac_sha256`` included),
    so rotating never breaks a receiver.
    """
    body = _body_bytes(payload)
    keys = _keys(secret)
    matched_index = _verify_headers(body, headers, keys, tolerance)
    document = _parse(body)
    if not _body_hmac_matches(document, keys) and matched_index == 0:
        # The newest signature matched one of our keys, so the body hmac was made with a key we
        # hold: a mismatch means the body was not produced by Merx for this secret.
        raise WebhookVerificationError("hmac_sha256 in the body does not match the secret")
    return construct_event(document)


def verify_signature(payload: Payload, headers: Headers, secret: Secrets, *, tolerance: float = DEFAULT_TOLERANCE_SECONDS) -> None:
    """Checks only the Standard Webhooks headers, for bodies without an envelope: an ``http``
    destination receives the routed record alone, signed the same way."""
    _verify_headers(_body_bytes(payload), headers, _keys(secret), tolerance)


def verify_body_hmac(payload: Union[Payload, Mapping[str, Any]], secret: Secrets) -> WebhookEvent:
    """Checks the body's ``hmac_sha256`` alone, for an event stored earlier (parsed or as text):
    the canonical JSON does not depend on key order or whitespace."""
    document = dict(payload) if isinstance(payload, Mapping) else _parse(_body_bytes(payload))
    if not _body_hmac_matches(document, _keys(secret)):
        raise WebhookVerificationError("hmac_sha256 in the body does not match the secret")
    return construct_event(document)


def construct_event(document: Mapping[str, Any]) -> WebhookEvent:
    """The typed event for a webhook body (no verification: use ``verify`` for requests)."""
    event_type = WEBHOOK_EVENT_TYPES.get(str(document.get("topic")))
    if event_type is None:
        return UntypedWebhookEvent(document)
    return event_type(document)  # type: ignore[return-value]  # every registered class is a WebhookEvent


def sign(payload: Payload, *, secret: str, message_id: str, timestamp: Optional[int] = None) -> str:
    """The ``webhook-signature`` value Merx would send for this body (``v1,<base64>``): for
    testing your receiver without a server."""
    stamp = int(time.time()) if timestamp is None else timestamp
    key = _keys(secret)[0]
    return "v1," + base64.b64encode(_header_hmac(key, message_id, str(stamp), _body_bytes(payload))).decode("ascii")


def _verify_headers(body: bytes, headers: Headers, keys: List[bytes], tolerance: float) -> int:
    """Index (0 = newest) of the first signature one of the keys produced; raises if none."""
    message_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not message_id or not timestamp or not signatures:
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature header")
    try:
        sent_at = int(timestamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not unix seconds") from None
    drift = time.time() - sent_at
    if drift > tolerance:
        raise WebhookVerificationError("webhook-timestamp is too old")
    if drift < -tolerance:
        raise WebhookVerificationError("webhook-timestamp is in the future")
    expected = [_header_hmac(key, message_id, timestamp, body) for key in keys]
    for index, versioned in enumerate(signatures.split()):
        version, _, encoded = versioned.partition(",")
        if version != "v1":
            continue
        try:
            received = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            continue
        if any(hmac.compare_digest(candidate, received) for candidate in expected):
            return index
    raise WebhookVerificationError("no webhook-signature matches the secret")


def _header_hmac(key: bytes, message_id: str, timestamp: str, body: bytes) -> bytes:
    return hmac.new(key, f"{message_id}.{timestamp}.".encode("utf-8") + body, hashlib.sha256).digest()


def _body_hmac_matches(document: Mapping[str, Any], keys: List[bytes]) -> bool:
    claimed = document.get("hmac_sha256")
    if not isinstance(claimed, str):
        raise WebhookVerificationError("the body has no hmac_sha256")
    signed = canonical_json({name: value for name, value in document.items() if name != "hmac_sha256"}).encode("utf-8")
    return any(hmac.compare_digest(hmac.new(key, signed, hashlib.sha256).hexdigest(), claimed) for key in keys)


def _keys(secret: Secrets) -> List[bytes]:
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise ValueError("give the webhook secret (whsec_...)")
    keys = []
    for value in secrets:
        encoded = value[len(_SECRET_PREFIX) :] if value.startswith(_SECRET_PREFIX) else value
        try:
            key = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("a webhook secret is whsec_ followed by base64") from None
        if not key:
            raise ValueError("a webhook secret has key bytes after whsec_")
        keys.append(key)
    return keys


def _body_bytes(payload: Payload) -> bytes:
    if isinstance(payload, str):
        return payload.encode("utf-8")
    if isinstance(payload, (bytes, bytearray)):
        return bytes(payload)
    raise TypeError("payload is the raw request body: bytes or str, not parsed JSON")


def _parse(body: bytes) -> Mapping[str, Any]:
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise WebhookVerificationError("the body is not JSON") from None
    if not isinstance(document, dict):
        raise WebhookVerificationError("the body is not a JSON object")
    return document


def _header(headers: Headers, name: str) -> Optional[str]:
    getter = getattr(headers, "get", None)
    if callable(getter):
        value = getter(name)
        if value is not None:
            return str(value)
    items = headers.items() if isinstance(headers, Mapping) else headers if not callable(getter) else ()
    for key, value in items:
        if str(key).lower() == name:
            return str(value)
    return None
