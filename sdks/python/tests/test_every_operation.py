"""Every operation of the document is a method of both clients, and every one of them works
against the real server: a tour calls each operation once, through the proxy, which proves by
its record that no operation was left out."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any, Awaitable, Callable, List, Optional, TypeVar, Union

import httpx
import pytest

import merx
from merx import AsyncMerx, AsyncPaginator, Merx
from merx._operations import OPERATIONS, TOKEN_PATH
from merx.types import WebhookDeadLetter
from support.proxy import FaultProxy
from support.receiver import WebhookReceiver
from support.server import Merchant, MerxServer

T = TypeVar("T")
Client = Union[Merx, AsyncMerx]


def python_path(operation_id: str) -> List[str]:
    """The naming rule, written independently of the generator: camelCase and dashes to snake_case."""
    return [re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", segment).replace("-", "_").lower() for segment in operation_id.split(".")]


def resolve(client: Client, path: List[str]) -> Any:
    target: Any = client
    for segment in path:
        target = getattr(target, segment)
    return target


def test_every_operation_of_the_served_document_is_a_method_of_both_clients(server: MerxServer) -> None:
    document = httpx.get(f"{server.base_url}/api/v1/openapi.json").json()
    token_url = document["components"]["securitySchemes"]["oauth2"]["flows"]["clientCredentials"]["tokenUrl"]
    served = set()
    sync_client, async_client = Merx("mx_test_a_b", base_url=server.base_url), AsyncMerx("mx_test_a_b", base_url=server.base_url)
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in ("get", "put", "post", "patch", "delete") or not isinstance(operation, dict):
                continue
            served.add((operation["operationId"], method.upper(), path))
            if method == "post" and path == token_url:
                assert TOKEN_PATH == token_url  # the clients exchange the key there themselves
                continue
            for client in (sync_client, async_client):
                assert callable(resolve(client, python_path(operation["operationId"]))), operation["operationId"]
    generated = {(operation.operation_id, operation.method, operation.path) for operation in OPERATIONS}
    assert generated == served, "regenerate the SDK: python3 sdks/python/scripts/generate.py"
    sync_client.close()


def template_regex(path: str) -> "re.Pattern[str]":
    return re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + r"(\?.*)?$")


async def eventually_async(condition: Callable[[], Awaitable[Optional[T]]], *, timeout: float = 30, what: str = "the condition") -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = await condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        await asyncio.sleep(0.1)


class Caller:
    """Calls a method by operation id on either client and gives back the awaited result (the
    first page for a list)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def __call__(self, operation_id: str, *args: Any, **kwargs: Any) -> Any:
        result = resolve(self.client, python_path(operation_id))(*args, **kwargs)
        if isinstance(result, AsyncPaginator):
            return await result
        if asyncio.iscoroutine(result):
            return await result
        return result


@pytest.mark.parametrize("client_class", [Merx, AsyncMerx])
async def test_a_tour_of_every_operation(server: MerxServer, merchant: Merchant, proxy: FaultProxy, receiver: WebhookReceiver, client_class: type) -> None:
    failing = WebhookReceiver(status=500)
    client: Client = client_class(merchant.api_key, base_url=proxy.url, operator_token=server.operator_token)
    call = Caller(client)
    try:
        await tour(call, merchant, receiver, failing, server)
    finally:
        failing.close()
        if isinstance(client, AsyncMerx):
            await client.close()
        else:
            client.close()

    seen = [(seen.method, seen.path) for seen in proxy.seen()]
    missing = [
        operation.operation_id
        for operation in OPERATIONS
        if not any(method == operation.method and template_regex(operation.path).match(path) for method, path in seen)
    ]
    assert missing == [], f"operations the tour did not reach: {missing}"


async def tour(call: Caller, merchant: Merchant, receiver: WebhookReceiver, failing: WebhookReceiver, server: MerxServer) -> None:
    # Platform documents and health: no token needed.
    assert (await call("openapi.retrieve")).openapi.startswith("3.1")
    assert (await call("oauth.jwks")).keys[0].kid
    assert (await call("health.retrieve")).status == "ok"
    assert (await call("readiness.retrieve")).status == "ready"

    # Products.
    product = await call("products.create", sku="TOUR-1", title="Tour", price="3.00", currency="USD")
    assert (await call("products.retrieve", product.id)).id == product.id
    assert [p.id for p in (await call("products.list", limit=10)).data] == [product.id]
    updated = await call("products.update", product.id, title="Tour 2", if_match=product.last_response.etag)
    assert updated.version == 2

    # The merchant's profile (the merchants service may answer 503 for a moment: retried).
    profile = await call("merchant.retrieve")
    changed = await call("merchant.update", name="Tour merchant", if_match=profile.last_response.etag)
    assert changed.name == "Tour merchant"

    # API keys.
    key = await call("api_keys.create", name="Tour key", scopes=["products:read"])
    assert key.secret and key.secret.startswith("mx_test_")
    assert (await call("api_keys.retrieve", key.id)).name == "Tour key"
    assert key.id in [k.id for k in (await call("api_keys.list")).data]
    await call("api_keys.revoke", key.id)

    # Configuration: source, destination, rule, connection, records.
    source = await call("sources.create", name="Shop", kind="storefront", settings={"domain": "shop.example"})
    destination = await call("destinations.create", name="ERP", url=receiver.url, kind="webhook")
    assert destination.secret.startswith("whsec_")
    rule = await call("rules.create", name="Large orders", condition="data.total >= 100.0", action="forward", event_types=["orders.created"])
    connection = await call("connections.create", source_id=source.id, destination_id=destination.id, rule_ids=[rule.id])
    for kind, item in (("sources", source), ("destinations", destination), ("rules", rule), ("connections", connection)):
        assert (await call(f"{kind}.retrieve", item.id)).id == item.id
        assert item.id in [entry.id for entry in (await call(f"{kind}.list")).data]
    await call("sources.update", source.id, name="Shop EU")
    await call("destinations.update", destination.id, name="ERP EU")
    assert (await call("destinations.rotate_secret", destination.id)).secret.startswith("whsec_")
    await call("rules.update", rule.id, condition="data.total >= 50.0")
    await call("connections.update", connection.id, name="Shop to ERP")
    batch = await call(
        "sources.records.create",
        source.id,
        records=[{"type": "order", "external_id": "order-1", "occurred_at": "2026-01-02T03:04:05.678Z", "data": {"total": 120.0, "currency": "EUR"}}],
    )
    assert batch.results[0].status == "accepted"
    assert [r.external_id for r in (await call("sources.records.list", source.id)).data] == ["order-1"]
    await call("connections.delete", connection.id)
    for kind, item in (("rules", rule), ("destinations", destination), ("sources", source)):
        await call(f"{kind}.delete", item.id)

    # Webhooks: a subscription whose endpoint fails, so a delivery dies and can be replayed.
    subscription = await call("webhooks.subscriptions.create", url=failing.url, topics=["products.updated"])
    await call("products.update", product.id, title="Tour 3")
    assert (await call("webhooks.subscriptions.retrieve", subscription.id)).url == failing.url
    assert subscription.id in [s.id for s in (await call("webhooks.subscriptions.list")).data]
    rotated = await call("webhooks.subscriptions.rotate_secret", subscription.id)
    assert rotated.secret != subscription.secret
    assert (await call("webhooks.subscriptions.stats.retrieve", subscription.id)).subscription_id == subscription.id

    async def a_dead_letter() -> Optional[WebhookDeadLetter]:
        page = await call("webhooks.dead_letters.list", subscription_id=subscription.id)
        return page.data[0] if page.data else None

    dead = await eventually_async(a_dead_letter, what="a dead letter")
    assert (await call("webhooks.dead_letters.retrieve", dead.id)).event_id == dead.event_id
    deliveries = (await call("webhooks.deliveries.list", subscription_id=subscription.id)).data
    assert (await call("webhooks.deliveries.retrieve", deliveries[0].id)).attempts
    # The endpoint failed through its whole window, so the subscription may be switched off: on again.
    await call("webhooks.subscriptions.update", subscription.id, status="enabled", url=receiver.url)
    replayed = await call("webhooks.dead_letters.replay", dead.id)
    assert replayed.event_id == dead.event_id
    bulk = await call("webhooks.dead_letters.replay_all", subscription_id=subscription.id)
    assert bulk.object == "dead_letter_replay"
    await call("webhooks.subscriptions.delete", subscription.id)

    # Events and the audit log.
    events = (await call("events.list", topic="products")).data
    assert (await call("events.retrieve", events[0].id)).topic.startswith("products.")

    async def audit_entries() -> Any:
        return (await call("audit.list", resource_id=product.id)).data

    entry = (await eventually_async(audit_entries, what="audit entries"))[0]
    assert (await call("audit.retrieve", entry.id)).id == entry.id
    assert (await call("audit.verify")).valid
    await call("products.delete", product.id)

    # Installed apps: none here, so revoking a grant is a 404 from the real route.
    assert (await call("apps.list")).data == []
    with pytest.raises(merx.NotFoundError):
        await call("apps.uninstall", "app_00000000000000000000000000")

    # The operator API, with the operator token.
    provisioned = await call("merchants.admin.create", name="Tour operator merchant", owner={"email": f"op-{merchant.id}@sdk-tests.example"})
    assert provisioned.api_key.secret.startswith("mx_test_")
    assert (await call("merchants.admin.update", provisioned.merchant.id, plan="standard")).plan == "standard"
    await call("merchants.admin.throttle.update", provisioned.merchant.id, burst={"capacity": 300, "refill_per_second": 150})
    assert (await call("merchants.admin.throttle.retrieve", provisioned.merchant.id)).overrides.burst.capacity == 300
    app = await call("apps.admin.create", name="Tour app", redirect_uris=["https://app.example/callback"], scopes=["products:read"])
    assert app.client_secret
    assert (await call("signing_keys.admin.rotate")).current_kid
    poison = await call("bus.admin.poison.list", queue="audit.events", limit=5)
    assert poison.object == "bus_poison" and [q.queue for q in poison.queues] == ["audit.events"]
    # A replay naming an event the queue does not hold puts nothing back.
    assert (await call("bus.admin.poison.replay", queue="audit.events", event_ids=["evt_00000000000000000000000000"])).replayed == 0

    # Last: the sandbox reset wipes this merchant's data.
    reset = await call("sandbox.reset", seed=True)
    assert (await call("sandbox.resets.retrieve", reset.id)).id == reset.id
