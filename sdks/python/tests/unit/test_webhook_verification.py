"""Webhook verification without a server: bodies signed here exactly as Merx signs them."""

from __future__ import annotations

import base64
import email.message
import hashlib
import hmac
import json
import time
import unittest
from typing import Any, Dict, List, Optional

from merx import WebhookVerificationError, webhooks
from merx._canonical_json import canonical_json
from merx.types import WEBHOOK_EVENT_TYPES
from merx.webhooks import UntypedWebhookEvent

OLD_SECRET = "whsec_" + base64.b64encode(b"old-secret-key-bytes-0123456789!").decode()
NEW_SECRET = "whsec_" + base64.b64encode(b"new-secret-key-bytes-9876543210?").decode()


def key(secret: str) -> bytes:
    return base64.b64decode(secret[len("whsec_") :])


def envelope(topic: str = "products.created", hmac_secret: str = NEW_SECRET, **data: Any) -> bytes:
    """A webhook body as the server writes it: the six fields, then hmac_sha256 over their JCS."""
    fields: Dict[str, Any] = {
        "id": "evt_01jd3k7q8m2x4v6b9c0d1e2f3g",
        "topic": topic,
        "merchant_id": "mch_01jd3k7q8m2x4v6b9c0d1e2f3g",
        "created_at": "2026-11-22T10:04:05.123Z",
        "api_version": "v1",
        "data": {"object": {"id": "prod_01jd3k7q8m2x4v6b9c0d1e2f3g", "price": "19.99", "amount": 1.5, **data}},
    }
    signature = hmac.new(key(hmac_secret), canonical_json(fields).encode(), hashlib.sha256).hexdigest()
    return json.dumps({**fields, "hmac_sha256": signature}).encode()


def headers_for(body: bytes, secrets: List[str], timestamp: Optional[int] = None) -> Dict[str, str]:
    stamp = int(time.time()) if timestamp is None else timestamp
    signed = f"evt_01jd3k7q8m2x4v6b9c0d1e2f3g.{stamp}.".encode() + body
    signatures = " ".join("v1," + base64.b64encode(hmac.new(key(s), signed, hashlib.sha256).digest()).decode() for s in secrets)
    return {"webhook-id": "evt_01jd3k7q8m2x4v6b9c0d1e2f3g", "webhook-timestamp": str(stamp), "webhook-signature": signatures}


class VerifyTest(unittest.TestCase):
    def test_a_correctly_signed_body_gives_its_event(self) -> None:
        body = envelope()
        event = webhooks.verify(body, headers_for(body, [NEW_SECRET]), NEW_SECRET)
        self.assertEqual(event.topic, "products.created")
        self.assertEqual(event.to_dict(), json.loads(body))
        self.assertIsInstance(event, WEBHOOK_EVENT_TYPES.get("products.created", UntypedWebhookEvent))

    def test_str_payloads_and_secrets_without_the_prefix_work(self) -> None:
        body = envelope(title="Crème brûlée ☃")
        event = webhooks.verify(body.decode("utf-8"), headers_for(body, [NEW_SECRET]), NEW_SECRET[len("whsec_") :])
        self.assertEqual(event.id, "evt_01jd3k7q8m2x4v6b9c0d1e2f3g")

    def test_an_unknown_topic_is_an_untyped_event(self) -> None:
        body = envelope(topic="orders.refunded_in_the_future")
        event = webhooks.verify(body, headers_for(body, [NEW_SECRET]), NEW_SECRET)
        self.assertIsInstance(event, UntypedWebhookEvent)
        self.assertEqual(event.data["object"]["amount"], 1.5)

    def test_header_names_match_in_any_case_and_container(self) -> None:
        body = envelope()
        headers = headers_for(body, [NEW_SECRET])
        message = email.message.Message()  # what http.server gives a handler
        for name, value in headers.items():
            message[name.title()] = value
        for container in ({k.upper(): v for k, v in headers.items()}, list(headers.items()), message):
            with self.subTest(container=type(container).__name__):
                self.assertEqual(webhooks.verify(body, container, NEW_SECRET).topic, "products.created")

    def test_a_changed_body_wrong_secret_or_missing_header_is_refused(self) -> None:
        body = envelope()
        headers = headers_for(body, [NEW_SECRET])
        with self.assertRaisesRegex(WebhookVerificationError, "signature"):
            webhooks.verify(body.replace(b"19.99", b"0.01"), headers, NEW_SECRET)
        with self.assertRaisesRegex(WebhookVerificationError, "signature"):
            webhooks.verify(body, headers, OLD_SECRET)
        for missing in headers:
            with self.subTest(missing=missing), self.assertRaisesRegex(WebhookVerificationError, "missing"):
                webhooks.verify(body, {k: v for k, v in headers.items() if k != missing}, NEW_SECRET)

    def test_timestamps_more_than_five_minutes_off_are_refused(self) -> None:
        body = envelope()
        now = int(time.time())
        self.assertEqual(webhooks.verify(body, headers_for(body, [NEW_SECRET], now - 290), NEW_SECRET).topic, "products.created")
        with self.assertRaisesRegex(WebhookVerificationError, "too old"):
            webhooks.verify(body, headers_for(body, [NEW_SECRET], now - 310), NEW_SECRET)
        with self.assertRaisesRegex(WebhookVerificationError, "future"):
            webhooks.verify(body, headers_for(body, [NEW_SECRET], now + 310), NEW_SECRET)
        with self.assertRaisesRegex(WebhookVerificationError, "unix seconds"):
            webhooks.verify(body, {**headers_for(body, [NEW_SECRET]), "webhook-timestamp": "yesterday"}, NEW_SECRET)

    def test_other_versions_and_garbage_signatures_are_skipped(self) -> None:
        body = envelope()
        headers = headers_for(body, [NEW_SECRET])
        headers["webhook-signature"] = "v2,abc v1,%%%notbase64 " + headers["webhook-signature"]
        self.assertEqual(webhooks.verify(body, headers, NEW_SECRET).topic, "products.created")

    def test_a_body_hmac_that_does_not_match_is_refused(self) -> None:
        body = envelope(hmac_secret=OLD_SECRET)  # headers signed right, body hmac with another key
        with self.assertRaisesRegex(WebhookVerificationError, "hmac_sha256"):
            webhooks.verify(body, headers_for(body, [NEW_SECRET]), NEW_SECRET)
        no_hmac = json.dumps({k: v for k, v in json.loads(envelope()).items() if k != "hmac_sha256"}).encode()
        with self.assertRaisesRegex(WebhookVerificationError, "no hmac_sha256"):
            webhooks.verify(no_hmac, headers_for(no_hmac, [NEW_SECRET]), NEW_SECRET)

    def test_during_a_rotation_the_old_secret_alone_still_verifies(self) -> None:
        body = envelope(hmac_secret=NEW_SECRET)  # the body hmac uses the new secret, headers both
        headers = headers_for(body, [NEW_SECRET, OLD_SECRET])
        for secrets in (NEW_SECRET, OLD_SECRET, [OLD_SECRET, NEW_SECRET]):
            with self.subTest(secrets=secrets):
                self.assertEqual(webhooks.verify(body, headers, secrets).topic, "products.created")
        # Outside a rotation the body hmac must match the key that signed the newest signature.
        forged = envelope(hmac_secret=OLD_SECRET)
        with self.assertRaises(WebhookVerificationError):
            webhooks.verify(forged, headers_for(forged, [NEW_SECRET, OLD_SECRET]), NEW_SECRET)

    def test_the_body_hmac_alone_verifies_a_re_serialised_event(self) -> None:
        stored = json.dumps(json.loads(envelope(note="a\nb")), indent=4, sort_keys=True, ensure_ascii=True)
        self.assertEqual(webhooks.verify_body_hmac(stored, NEW_SECRET).topic, "products.created")
        with self.assertRaises(WebhookVerificationError):
            webhooks.verify_body_hmac(stored, OLD_SECRET)

    def test_verify_signature_checks_headers_of_a_body_without_envelope(self) -> None:
        record = b'{"id":"rec_1","type":"order"}'
        webhooks.verify_signature(record, headers_for(record, [NEW_SECRET]), NEW_SECRET)
        with self.assertRaises(WebhookVerificationError):
            webhooks.verify_signature(record + b" ", headers_for(record, [NEW_SECRET]), NEW_SECRET)

    def test_sign_matches_what_verify_expects(self) -> None:
        body = envelope()
        stamp = int(time.time())
        signature = webhooks.sign(body, secret=NEW_SECRET, message_id="evt_01jd3k7q8m2x4v6b9c0d1e2f3g", timestamp=stamp)
        self.assertEqual(signature, headers_for(body, [NEW_SECRET], stamp)["webhook-signature"])

    def test_misuse_is_a_clear_error(self) -> None:
        body = envelope()
        with self.assertRaises(TypeError):
            webhooks.verify(json.loads(body), headers_for(body, [NEW_SECRET]), NEW_SECRET)  # type: ignore[arg-type]
        with self.assertRaises(ValueError):
            webhooks.verify(body, headers_for(body, [NEW_SECRET]), "whsec_not base64!")
        with self.assertRaises(ValueError):
            webhooks.verify(body, headers_for(body, [NEW_SECRET]), [])
        not_json = b"<xml/>"
        with self.assertRaisesRegex(WebhookVerificationError, "not JSON"):
            webhooks.verify(not_json, headers_for(not_json, [NEW_SECRET]), NEW_SECRET)


if __name__ == "__main__":
    unittest.main()
