"""Retries through the fault proxy: what is retried, how long the client waits, and that a
create retried after a lost answer never creates twice (the automatic Idempotency-Key)."""

from __future__ import annotations

import re
from typing import List

import pytest

import merx
from merx import AsyncMerx, Merx
from support.proxy import FaultProxy, Seen
from support.server import Merchant, MerxServer

PRODUCTS = "/api/v1/products"
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def problem(status: int, code: str) -> bytes:
    return (
        f'{{"type":"https://merx.dev/errors/{code}","title":"{code}","status":{status},"code":"{code}",'
        f'"detail":"Injected by the test proxy.","request_id":"req_00000000000000000000000000"}}'
    ).encode()


def gaps(seen: List[Seen]) -> List[float]:
    return [later.at - earlier.at for earlier, later in zip(seen, seen[1:])]


def test_a_create_whose_answer_was_lost_is_retried_without_a_duplicate(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    proxy.inject("cut_after_forward", method="POST", path=PRODUCTS)
    with Merx(merchant.api_key, base_url=proxy.url) as client:
        product = client.products.create(sku="ONCE-1", title="Once", price="10.00", currency="USD")
        same_sku = client.products.list(sku="ONCE-1")

    attempts = proxy.seen("POST", PRODUCTS)
    assert [seen.fault for seen in attempts] == ["cut_after_forward", None]
    assert attempts[0].headers["idempotency-key"] == attempts[1].headers["idempotency-key"]
    assert UUID4.match(attempts[0].headers["idempotency-key"])
    assert product.last_response is not None and product.last_response.idempotent_replayed  # the first answer, replayed
    assert [p.id for p in same_sku.data] == [product.id]


async def test_async_create_whose_answer_was_lost_is_retried_without_a_duplicate(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    proxy.inject("cut_after_forward", method="POST", path=PRODUCTS)
    async with AsyncMerx(merchant.api_key, base_url=proxy.url) as client:
        product = await client.products.create(sku="AONCE-1", title="Once", price="10.00", currency="USD")
        same_sku = await client.products.list(sku="AONCE-1")
    assert product.last_response is not None and product.last_response.idempotent_replayed
    assert [p.id for p in same_sku.data] == [product.id]
    attempts = proxy.seen("POST", PRODUCTS)
    assert len(attempts) == 2 and attempts[0].headers["idempotency-key"] == attempts[1].headers["idempotency-key"]


def test_a_connection_dropped_before_the_server_saw_it_is_retried(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    proxy.inject("drop", method="POST", path=PRODUCTS)
    with Merx(merchant.api_key, base_url=proxy.url) as client:
        product = client.products.create(sku="DROP-1", title="Dropped", price="1", currency="USD")
    assert product.last_response is not None and not product.last_response.idempotent_replayed
    assert [seen.fault for seen in proxy.seen("POST", PRODUCTS)] == ["drop", None]


def test_503_is_retried_after_its_retry_after(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    proxy.inject("respond", method="GET", path=PRODUCTS, status=503, headers={"Content-Type": "application/problem+json", "Retry-After": "1"}, body=problem(503, "unavailable"))
    with Merx(merchant.api_key, base_url=proxy.url) as client:
        page = client.products.list()
    attempts = proxy.seen("GET", PRODUCTS)
    assert page.data == [] and len(attempts) == 2
    assert gaps(attempts)[0] >= 1.0  # never earlier than the server asked


def test_429_is_retried_after_its_retry_after(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    body = b'{"type":"https://merx.dev/errors/rate_limited","title":"Too many requests","status":429,"code":"rate_limited","detail":"Injected.","request_id":"req_00000000000000000000000000","throttle_class":"burst","retry_after":1}'
    proxy.inject("respond", method="POST", path=PRODUCTS, status=429, headers={"Content-Type": "application/problem+json", "Retry-After": "1"}, body=body)
    with Merx(merchant.api_key, base_url=proxy.url) as client:
        product = client.products.create(sku="RATE-1", title="Rate", price="1", currency="USD")
    attempts = proxy.seen("POST", PRODUCTS)
    assert product.sku == "RATE-1" and len(attempts) == 2
    assert gaps(attempts)[0] >= 1.0
    assert attempts[0].headers["idempotency-key"] == attempts[1].headers["idempotency-key"]


def test_backoff_grows_exponentially_with_jitter_without_retry_after(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    proxy.inject("respond", times=3, method="GET", path=PRODUCTS, status=502, headers={"Content-Type": "application/problem+json"}, body=problem(502, "unavailable"))
    with Merx(merchant.api_key, base_url=proxy.url, max_retries=3) as client:
        client.products.list()
    waits = gaps(proxy.seen("GET", PRODUCTS))
    assert len(waits) == 3
    # 0.5 s, 1 s, 2 s, each up to 25 % shorter (plus the request's own time)
    for wait, base in zip(waits, (0.5, 1.0, 2.0)):
        assert base * 0.75 <= wait < base + 0.5, waits


@pytest.mark.parametrize("status, code", [(408, "request_timeout"), (409, "idempotency_key_in_use"), (500, "internal"), (504, "unavailable")])
def test_retryable_answers_are_retried(server: MerxServer, merchant: Merchant, proxy: FaultProxy, status: int, code: str) -> None:
    proxy.inject("respond", method="POST", path=PRODUCTS, status=status, headers={"Content-Type": "application/problem+json", "Retry-After": "0"}, body=problem(status, code))
    with Merx(merchant.api_key, base_url=proxy.url) as client:
        product = client.products.create(sku=f"RETRY-{status}", title="Retried", price="1", currency="USD")
    assert product.sku == f"RETRY-{status}"
    assert len(proxy.seen("POST", PRODUCTS)) == 2


def test_answers_about_the_request_itself_are_not_retried(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    with Merx(merchant.api_key, base_url=proxy.url) as client:
        client.products.create(sku="ONE-1", title="One", price="1", currency="USD")
        with pytest.raises(merx.ConflictError):  # 409 conflict is not 409 idempotency_key_in_use
            client.products.create(sku="ONE-1", title="One", price="1", currency="USD")
        with pytest.raises(merx.UnprocessableEntityError):
            client.products.create(sku="ONE-2", title="One", price="1.999", currency="USD")
    assert len(proxy.seen("POST", PRODUCTS)) == 3


def test_max_retries_per_request_and_per_client(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    proxy.inject("respond", times=10, method="GET", path=PRODUCTS, status=503, headers={"Content-Type": "application/problem+json", "Retry-After": "0"}, body=problem(503, "unavailable"))
    with Merx(merchant.api_key, base_url=proxy.url) as client:
        with pytest.raises(merx.InternalServerError):
            client.products.list(max_retries=0)
        assert len(proxy.seen("GET", PRODUCTS)) == 1
        with pytest.raises(merx.InternalServerError):
            client.with_options(max_retries=1).products.list()
        assert len(proxy.seen("GET", PRODUCTS)) == 3
        with pytest.raises(merx.InternalServerError):
            client.products.list()  # the default: two retries
        assert len(proxy.seen("GET", PRODUCTS)) == 6


def test_every_post_gets_an_idempotency_key_and_a_given_one_replays(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    with Merx(merchant.api_key, base_url=proxy.url) as client:
        first = client.products.create(sku="IDEM-1", title="Idem", price="1", currency="USD", idempotency_key="order-42-product")
        again = client.products.create(sku="IDEM-1", title="Idem", price="1", currency="USD", idempotency_key="order-42-product")
        client.products.create(sku="IDEM-2", title="Other", price="1", currency="USD")
        client.products.list()

    posts = proxy.seen("POST", PRODUCTS)
    assert [seen.headers["idempotency-key"] for seen in posts[:2]] == ["order-42-product", "order-42-product"]
    assert UUID4.match(posts[2].headers["idempotency-key"])
    assert "idempotency-key" not in proxy.seen("GET", PRODUCTS)[0].headers
    assert again.id == first.id
    assert again.last_response is not None and again.last_response.idempotent_replayed


async def test_async_retries_honour_retry_after_and_max_retries(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    proxy.inject("respond", method="GET", path=PRODUCTS, status=503, headers={"Content-Type": "application/problem+json", "Retry-After": "1"}, body=problem(503, "unavailable"))
    proxy.inject("drop", method="POST", path=PRODUCTS)
    async with AsyncMerx(merchant.api_key, base_url=proxy.url) as client:
        await client.products.list()
        created = await client.products.create(sku="ADROP-1", title="Dropped", price="1", currency="USD")
        proxy.inject("respond", times=5, method="GET", path=PRODUCTS, status=500, headers={"Content-Type": "application/problem+json", "Retry-After": "0"}, body=problem(500, "internal"))
        with pytest.raises(merx.InternalServerError):
            await client.products.list(max_retries=1)
    assert gaps(proxy.seen("GET", PRODUCTS)[:2])[0] >= 1.0
    assert created.sku == "ADROP-1" and len(proxy.seen("POST", PRODUCTS)) == 2
    assert len(proxy.seen("GET", PRODUCTS)) == 4
