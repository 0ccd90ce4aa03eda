"""Access tokens: exchanged once, refreshed before expiry and after a 401, one refresh for
concurrent callers, and the API key sent nowhere but the token endpoint. The suite's server
issues 10-second tokens, which the client refreshes after 5 s (half their life: they are
shorter than two minutes)."""

from __future__ import annotations

import asyncio
import base64
import threading
import time
from typing import List

import httpx

from merx import AsyncMerx, Merx
from support.polling import eventually
from support.proxy import FaultProxy, Seen
from support.server import ACCESS_TOKEN_TTL_SECONDS, Merchant, MerxServer

TOKEN_PATH = "/oauth/token"


def bearer(seen: Seen) -> str:
    return seen.headers.get("authorization", "").removeprefix("Bearer ")


def refused(server: MerxServer, token: str) -> bool:
    return httpx.get(f"{server.base_url}/api/v1/products", headers={"Authorization": f"Bearer {token}"}).status_code == 401


def usable_again(server: MerxServer, merchant: Merchant) -> bool:
    """A token issued now works. Revocations compare the token's iat in whole seconds, so for the
    rest of the second of a suspension even new tokens are refused; the tests wait that out."""
    token = httpx.post(f"{server.base_url}{TOKEN_PATH}", auth=(merchant.client_id, merchant.api_key), data={"grant_type": "client_credentials"})
    return token.status_code == 200 and not refused(server, token.json()["access_token"])


def suspend_and_reactivate(server: MerxServer, merchant: Merchant, old_token: str) -> None:
    """A suspension kills every token the merchant holds, and they stay dead after reactivation."""
    server.set_merchant_status(merchant.id, "suspended")
    server.set_merchant_status(merchant.id, "active")
    eventually(lambda: refused(server, old_token), timeout=10, what="the suspension reaching the old token")
    eventually(lambda: usable_again(server, merchant), timeout=10, what="new tokens working after the reactivation")


def api_calls(proxy: FaultProxy) -> List[Seen]:
    return [seen for seen in proxy.seen() if seen.path.startswith("/api/v1/")]


def test_the_key_is_exchanged_once_and_sent_only_to_the_token_endpoint(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    with Merx(merchant.api_key, base_url=proxy.url) as client:
        client.products.create(sku="KEY-1", title="Key", price="1", currency="USD")
        client.products.list()
        client.merchant.retrieve()

    token_requests = proxy.seen("POST", TOKEN_PATH)
    assert len(token_requests) == 1
    basic = token_requests[0].headers["authorization"].removeprefix("Basic ")
    assert base64.b64decode(basic).decode() == f"{merchant.client_id}:{merchant.api_key}"
    assert token_requests[0].body == b"grant_type=client_credentials"
    for seen in api_calls(proxy):
        assert merchant.api_key not in repr(seen.headers) and merchant.api_key.encode() not in seen.body
        assert seen.headers["authorization"].startswith("Bearer ey")
    assert len({bearer(seen) for seen in api_calls(proxy)}) == 1


def test_an_expired_token_is_replaced_before_the_next_request(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    with Merx(merchant.api_key, base_url=proxy.url) as client:
        client.products.list()
        first_token = bearer(api_calls(proxy)[0])
        # Wait for the server to refuse the first token: it has expired for real.
        eventually(lambda: refused(server, first_token), timeout=ACCESS_TOKEN_TTL_SECONDS + 10, interval=0.25, what="the token expiring")
        page = client.products.list()

    assert page.data == []
    calls = api_calls(proxy)
    assert len(calls) == 2 and bearer(calls[1]) != first_token
    assert len(proxy.seen("POST", TOKEN_PATH)) == 2
    assert all(seen.fault is None for seen in calls)  # no request was refused: refreshed before use


def test_a_token_refused_with_401_is_refreshed_once_and_the_request_repeated(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    with Merx(merchant.api_key, base_url=proxy.url) as client:
        client.products.list()
        old_token = bearer(api_calls(proxy)[0])
        suspend_and_reactivate(server, merchant, old_token)
        product = client.products.create(sku="AFTER-401", title="After", price="1", currency="USD")

    assert product.sku == "AFTER-401"
    posts = proxy.seen("POST", "/api/v1/products")
    assert [bearer(seen) == old_token for seen in posts] == [True, False]  # refused once, repeated with a new token
    assert posts[0].headers["idempotency-key"] == posts[1].headers["idempotency-key"]
    assert len(proxy.seen("POST", TOKEN_PATH)) == 2


def test_a_second_401_is_raised_not_retried_forever(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    unauthenticated = b'{"type":"https://merx.dev/errors/unauthenticated","title":"Unauthenticated","status":401,"code":"unauthenticated","detail":"The access token is invalid.","request_id":"req_00000000000000000000000000"}'
    proxy.inject("respond", times=2, method="GET", path="/api/v1/products", status=401,
                 headers={"Content-Type": "application/problem+json", "WWW-Authenticate": 'Bearer error="invalid_token"'}, body=unauthenticated)
    with Merx(merchant.api_key, base_url=proxy.url) as client:
        try:
            client.products.list()
            raise AssertionError("a second 401 must be raised")
        except Exception as error:  # noqa: BLE001 - the class is the point of the test
            assert type(error).__name__ == "AuthenticationError"
    assert len(proxy.seen("GET", "/api/v1/products")) == 2
    assert len(proxy.seen("POST", TOKEN_PATH)) == 2


def test_threads_share_one_token_refresh(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    errors: List[BaseException] = []
    with Merx(merchant.api_key, base_url=proxy.url) as client:
        start = threading.Barrier(8)

        def work() -> None:
            try:
                start.wait()
                client.products.list()
            except BaseException as error:  # noqa: BLE001 - reported below
                errors.append(error)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    assert errors == []
    assert len(proxy.seen("POST", TOKEN_PATH)) == 1
    assert len(api_calls(proxy)) == 8 and len({bearer(seen) for seen in api_calls(proxy)}) == 1


async def test_async_tasks_share_one_token_refresh(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    async with AsyncMerx(merchant.api_key, base_url=proxy.url) as client:
        pages = await asyncio.gather(*(client.products.list() for _ in range(20)))
    assert len(pages) == 20
    assert len(proxy.seen("POST", TOKEN_PATH)) == 1
    assert len({bearer(seen) for seen in api_calls(proxy)}) == 1


async def test_async_client_refreshes_after_expiry_and_after_a_401(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    async with AsyncMerx(merchant.api_key, base_url=proxy.url) as client:
        await client.products.list()
        first_token = bearer(api_calls(proxy)[0])
        deadline = time.monotonic() + ACCESS_TOKEN_TTL_SECONDS + 10
        while not refused(server, first_token):
            assert time.monotonic() < deadline, "the token did not expire"
            await asyncio.sleep(0.25)
        await client.products.list()
        second_token = bearer(api_calls(proxy)[-1])
        assert second_token != first_token

        await asyncio.get_running_loop().run_in_executor(None, suspend_and_reactivate, server, merchant, second_token)
        results = await asyncio.gather(*(client.products.list() for _ in range(5)))

    assert len(results) == 5
    assert len(proxy.seen("POST", TOKEN_PATH)) == 3  # first, after expiry, after the 401 (one for all five)
