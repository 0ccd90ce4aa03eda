"""Verifying real deliveries of the real server: signature, timestamp, body hmac, the typed
event, and both secrets during a rotation."""

from __future__ import annotations

import json
import time

import pytest

import merx
from merx import AsyncMerx, Merx, webhooks
from merx.types import WEBHOOK_EVENT_TYPES, WebhookSubscriptionWithSecret
from merx.webhooks import UntypedWebhookEvent
from support.receiver import Delivery, WebhookReceiver
from support.server import Merchant, MerxServer


def subscribe(client: Merx, receiver: WebhookReceiver) -> WebhookSubscriptionWithSecret:
    return client.webhooks.subscriptions.create(url=receiver.url, topics=["products.created"], description="Python SDK tests")


def headers_of(delivery: Delivery) -> dict:
    return dict(delivery.headers)


def test_a_real_delivery_verifies_into_its_typed_event(server: MerxServer, merchant: Merchant, receiver: WebhookReceiver) -> None:
    with Merx(merchant.api_key, base_url=server.base_url) as client:
        subscription = subscribe(client, receiver)
        product = client.products.create(sku="HOOK-1", title="Hooked", price="4.20", currency="USD")
    delivery = receiver.wait_for("products.created")[0]
    assert subscription.secret.startswith("whsec_")

    # No API key is needed to verify: the module function and a keyless client both do it.
    event = webhooks.verify(delivery.body, delivery.headers, subscription.secret)
    assert Merx(base_url="http://127.0.0.1:9").webhooks.verify(delivery.body, headers_of(delivery), subscription.secret) == event

    assert isinstance(event, WEBHOOK_EVENT_TYPES.get("products.created", UntypedWebhookEvent))
    assert event.topic == "products.created"
    assert event.id == delivery.header("webhook-id") and event.id.startswith("evt_")
    assert event.merchant_id == merchant.id
    body = json.loads(delivery.body)
    assert body["data"]["object"]["id"] == product.id
    assert event.to_dict() == body


def test_tampering_a_wrong_secret_and_stale_or_missing_headers_are_refused(server: MerxServer, merchant: Merchant, receiver: WebhookReceiver) -> None:
    with Merx(merchant.api_key, base_url=server.base_url) as client:
        subscription = subscribe(client, receiver)
        client.products.create(sku="HOOK-2", title="Hooked", price="1", currency="USD")
    delivery = receiver.wait_for("products.created")[0]
    headers = headers_of(delivery)
    secret = subscription.secret

    tampered = delivery.body.replace(b'"HOOK-2"', b'"HOOK-X"')
    with pytest.raises(merx.WebhookVerificationError, match="signature"):
        webhooks.verify(tampered, headers, secret)
    with pytest.raises(merx.WebhookVerificationError, match="signature"):
        webhooks.verify(delivery.body, headers, "whsec_" + "A" * 43 + "=")
    with pytest.raises(merx.WebhookVerificationError, match="missing"):
        webhooks.verify(delivery.body, {k: v for k, v in headers.items() if k.lower() != "webhook-signature"}, secret)

    # The same body correctly signed, but six minutes ago (or ahead): a replayed or skewed request.
    for offset, reason in ((-360, "too old"), (360, "future")):
        stamp = int(time.time()) + offset
        signature = webhooks.sign(delivery.body, secret=secret, message_id=delivery.header("webhook-id"), timestamp=stamp)
        moved = {**headers, "webhook-timestamp": str(stamp), "webhook-signature": signature}
        with pytest.raises(merx.WebhookVerificationError, match=reason):
            webhooks.verify(delivery.body, moved, secret)
        assert webhooks.verify(delivery.body, moved, secret, tolerance=400).topic == "products.created"


def test_the_body_hmac_verifies_a_stored_event_after_re_serialisation(server: MerxServer, merchant: Merchant, receiver: WebhookReceiver) -> None:
    with Merx(merchant.api_key, base_url=server.base_url) as client:
        subscription = subscribe(client, receiver)
        client.products.create(sku="HOOK-3", title="Stored ünïcode ☃", price="1", currency="USD", attributes={"note": "a\"quote\"\n"})
    delivery = receiver.wait_for("products.created")[0]
    stored = json.dumps(json.loads(delivery.body), indent=2, sort_keys=True, ensure_ascii=True)  # a database's copy

    event = webhooks.verify_body_hmac(stored, subscription.secret)
    assert event.topic == "products.created"
    assert webhooks.verify_body_hmac(json.loads(stored), subscription.secret) == event
    altered = json.loads(stored)
    altered["data"]["object"]["title"] = "Changed"
    with pytest.raises(merx.WebhookVerificationError, match="hmac_sha256"):
        webhooks.verify_body_hmac(altered, subscription.secret)


def test_during_a_rotation_either_secret_verifies(server: MerxServer, merchant: Merchant, receiver: WebhookReceiver) -> None:
    with Merx(merchant.api_key, base_url=server.base_url) as client:
        subscription = subscribe(client, receiver)
        old_secret = subscription.secret
        rotated = client.webhooks.subscriptions.rotate_secret(subscription.id)
        new_secret = rotated.secret
        client.products.create(sku="HOOK-4", title="Rotated", price="1", currency="USD")
    assert new_secret != old_secret
    delivery = receiver.wait_for("products.created")[0]
    assert len(delivery.header("webhook-signature").split()) == 2  # both secrets sign during the overlap

    by_new = webhooks.verify(delivery.body, delivery.headers, new_secret)
    by_old = webhooks.verify(delivery.body, delivery.headers, old_secret)  # a receiver not yet updated
    by_both = webhooks.verify(delivery.body, delivery.headers, [old_secret, new_secret])
    assert by_new == by_old == by_both
    with pytest.raises(merx.WebhookVerificationError):
        webhooks.verify(delivery.body, delivery.headers, "whsec_" + "B" * 43 + "=")


async def test_the_async_client_verifies_too(server: MerxServer, merchant: Merchant, receiver: WebhookReceiver) -> None:
    async with AsyncMerx(merchant.api_key, base_url=server.base_url) as client:
        subscription = await client.webhooks.subscriptions.create(url=receiver.url, topics=["products.created"])
        await client.products.create(sku="HOOK-5", title="Async", price="1", currency="USD")
        delivery = receiver.wait_for("products.created")[0]
        event = client.webhooks.verify(delivery.body, delivery.headers, subscription.secret)
    assert event.topic == "products.created"
