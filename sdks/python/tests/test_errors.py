"""Every error class, raised from real answers of the real server (the proxy only corrupts a
body or stands in for a dead server), with the problem document on it; for both clients."""

from __future__ import annotations

import builtins

import pytest

import merx
from merx import AsyncMerx, Merx
from support.proxy import FaultProxy
from support.server import Merchant, MerxServer, free_port


def test_400_malformed_request_is_a_bad_request_error(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    proxy.inject("corrupt_body", method="POST", path="/api/v1/products")
    with Merx(merchant.api_key, base_url=proxy.url) as client, pytest.raises(merx.BadRequestError) as error:
        client.products.create(sku="BAD-1", title="Bad", price="1", currency="USD")
    assert error.value.status == 400
    assert error.value.code == "malformed_request"
    assert error.value.problem["type"] == "https://merx.dev/errors/malformed_request"


def test_a_refused_api_key_is_an_authentication_error_from_the_token_endpoint(server: MerxServer, merchant: Merchant) -> None:
    wrong_secret = merchant.api_key[:-4] + ("AAAA" if not merchant.api_key.endswith("AAAA") else "BBBB")
    with Merx(wrong_secret, base_url=server.base_url) as client, pytest.raises(merx.AuthenticationError) as error:
        client.products.list()
    assert error.value.status == 401
    assert error.value.code == "invalid_client"  # OAuth's error shape, read through the same attributes
    assert error.value.request_id is not None


def test_403_names_the_missing_scope(server: MerxServer, merchant: Merchant) -> None:
    with Merx(merchant.api_key, base_url=server.base_url) as admin:
        reader = admin.api_keys.create(name="Reader", scopes=["products:read"])
    assert reader.secret is not None
    with Merx(reader.secret, base_url=server.base_url) as client:
        assert client.products.list().data == []
        with pytest.raises(merx.PermissionDeniedError) as error:
            client.products.create(sku="NOPE-1", title="Nope", price="1", currency="USD")
    assert error.value.status == 403
    assert error.value.code == "insufficient_scope"
    assert error.value.required_scope == "products:write"


def test_404_for_an_unknown_id(server: MerxServer, merchant: Merchant) -> None:
    with Merx(merchant.api_key, base_url=server.base_url) as client, pytest.raises(merx.NotFoundError) as error:
        client.products.retrieve("prod_00000000000000000000000000")
    assert error.value.status == 404 and error.value.code == "not_found"
    assert error.value.detail
    assert "404 not_found" in str(error.value)


def test_409_for_a_duplicate_sku(server: MerxServer, merchant: Merchant) -> None:
    with Merx(merchant.api_key, base_url=server.base_url) as client:
        client.products.create(sku="DUP-1", title="First", price="1", currency="USD")
        with pytest.raises(merx.ConflictError) as error:
            client.products.create(sku="DUP-1", title="Second", price="1", currency="USD")
        assert len(client.products.list(sku="DUP-1").data) == 1
    assert error.value.status == 409 and error.value.code == "conflict"


def test_422_lists_every_field_error(server: MerxServer, merchant: Merchant) -> None:
    with Merx(merchant.api_key, base_url=server.base_url) as client, pytest.raises(merx.UnprocessableEntityError) as error:
        client.products.create(sku="has spaces", title="", price="19.99", currency="USD")
    assert error.value.status == 422 and error.value.code == "validation_failed"
    fields = {field_error.field: field_error.code for field_error in error.value.errors}
    assert fields == {"sku": "invalid_format", "title": "too_short"}
    assert all(field_error.message for field_error in error.value.errors)
    # The money rule (the currency's minor units) is judged once the structure holds.
    with Merx(merchant.api_key, base_url=server.base_url) as client, pytest.raises(merx.UnprocessableEntityError) as money:
        client.products.create(sku="DEC-1", title="x", price="19.999", currency="USD")
    assert {field_error.field: field_error.code for field_error in money.value.errors} == {"price": "too_many_decimals"}


def test_429_from_the_real_throttle_carries_retry_after_and_the_class(server: MerxServer, merchant: Merchant) -> None:
    # A tiny write budget for this merchant alone, refilled slowly: the third write in a row is refused.
    server.set_throttle(merchant.id, {"writes": {"capacity": 2, "refill_per_second": 0.01}})
    with Merx(merchant.api_key, base_url=server.base_url, max_retries=0) as client:
        client.products.create(sku="RL-1", title="One", price="1", currency="USD")
        client.products.create(sku="RL-2", title="Two", price="1", currency="USD")
        with pytest.raises(merx.RateLimitError) as error:
            client.products.create(sku="RL-3", title="Three", price="1", currency="USD")
    assert error.value.status == 429 and error.value.code == "rate_limited"
    assert error.value.throttle_class == "writes"
    assert error.value.retry_after is not None and error.value.retry_after > 60
    assert error.value.headers.get("retry-after") is not None


def test_a_long_retry_after_is_not_waited_out_inside_the_call(server: MerxServer, merchant: Merchant) -> None:
    server.set_throttle(merchant.id, {"writes": {"capacity": 1, "refill_per_second": 0.001}})
    with Merx(merchant.api_key, base_url=server.base_url, max_retries=2) as client:
        client.products.create(sku="LONG-1", title="One", price="1", currency="USD")
        with pytest.raises(merx.RateLimitError) as error:
            client.products.create(sku="LONG-2", title="Two", price="1", currency="USD")
    assert error.value.retry_after is not None and error.value.retry_after > 60


def test_5xx_after_the_retries_is_an_internal_server_error(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    problem = b'{"type":"https://merx.dev/errors/unavailable","title":"Unavailable","status":503,"code":"unavailable","detail":"Try again.","request_id":"req_00000000000000000000000000"}'
    proxy.inject("respond", times=3, method="GET", path="/api/v1/products", status=503, headers={"Content-Type": "application/problem+json", "Retry-After": "0"}, body=problem)
    with Merx(merchant.api_key, base_url=proxy.url, max_retries=2) as client, pytest.raises(merx.InternalServerError) as error:
        client.products.list()
    assert error.value.status == 503 and error.value.code == "unavailable"
    assert len(proxy.seen("GET", "/api/v1/products")) == 3  # the first try and two retries


def test_no_server_is_a_connection_error(server: MerxServer, merchant: Merchant) -> None:
    with Merx(merchant.api_key, base_url=f"http://127.0.0.1:{free_port()}", max_retries=1) as client, pytest.raises(merx.ConnectionError) as error:
        client.products.list()
    assert error.value.status is None
    assert isinstance(error.value, builtins.ConnectionError)  # generic handlers still catch it


def test_no_answer_in_time_is_a_timeout_error(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    proxy.inject("delay", method="GET", path="/api/v1/products", seconds=5)
    with Merx(merchant.api_key, base_url=proxy.url) as client, pytest.raises(merx.TimeoutError) as error:
        client.products.list(timeout=0.5, max_retries=0)
    assert isinstance(error.value, merx.ConnectionError) and isinstance(error.value, builtins.TimeoutError)


def test_every_error_is_a_merx_error() -> None:
    for error_class in (
        merx.BadRequestError,
        merx.AuthenticationError,
        merx.PermissionDeniedError,
        merx.NotFoundError,
        merx.ConflictError,
        merx.PreconditionFailedError,
        merx.UnprocessableEntityError,
        merx.RateLimitError,
        merx.InternalServerError,
        merx.ConnectionError,
        merx.TimeoutError,
        merx.WebhookVerificationError,
    ):
        assert issubclass(error_class, merx.MerxError)


async def test_async_client_raises_the_same_classes(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    async with AsyncMerx(merchant.api_key, base_url=proxy.url, max_retries=0) as client:
        await client.products.create(sku="ADUP-1", title="First", price="1", currency="USD")
        with pytest.raises(merx.ConflictError):
            await client.products.create(sku="ADUP-1", title="Second", price="1", currency="USD")
        with pytest.raises(merx.UnprocessableEntityError) as invalid:
            await client.products.create(sku="AINV-1", title="x", price="1.5", currency="JPY")
        with pytest.raises(merx.NotFoundError):
            await client.products.retrieve("prod_00000000000000000000000000")
        proxy.inject("corrupt_body", method="POST", path="/api/v1/products")
        with pytest.raises(merx.BadRequestError):
            await client.products.create(sku="ABAD-1", title="Bad", price="1", currency="USD")
        proxy.inject("respond", method="GET", path="/api/v1/products", status=500, headers={"Content-Type": "application/problem+json"},
                     body=b'{"type":"https://merx.dev/errors/internal","title":"Internal","status":500,"code":"internal","detail":"Error id e1.","request_id":"req_00000000000000000000000000"}')
        with pytest.raises(merx.InternalServerError):
            await client.products.list()
        proxy.inject("delay", method="GET", path="/api/v1/products", seconds=5)
        with pytest.raises(merx.TimeoutError):
            await client.products.list(timeout=0.5)
    assert [e.field for e in invalid.value.errors] == ["price"]
    async with AsyncMerx(merchant.api_key, base_url=f"http://127.0.0.1:{free_port()}", max_retries=0) as unreachable:
        with pytest.raises(merx.ConnectionError):
            await unreachable.products.list()
    async with AsyncMerx(merchant.api_key[:-2] + "zz", base_url=server.base_url) as wrong:
        with pytest.raises(merx.AuthenticationError):
            await wrong.products.list()


async def test_async_client_raises_403_412_and_429_from_the_real_server(server: MerxServer, merchant: Merchant) -> None:
    async with AsyncMerx(merchant.api_key, base_url=server.base_url, max_retries=0) as admin:
        reader = await admin.api_keys.create(name="Reader", scopes=["products:read"])
        product = await admin.products.create(sku="A412-1", title="One", price="1", currency="USD")
        await admin.products.update(product.id, title="Two")
        with pytest.raises(merx.PreconditionFailedError):
            await admin.products.update(product.id, title="Three", if_match='"v1"')
    async with AsyncMerx(reader.secret, base_url=server.base_url) as client:
        with pytest.raises(merx.PermissionDeniedError) as denied:
            await client.products.create(sku="ANOPE-1", title="Nope", price="1", currency="USD")
    assert denied.value.required_scope == "products:write"

    server.set_throttle(merchant.id, {"writes": {"capacity": 1, "refill_per_second": 0.01}})
    async with AsyncMerx(merchant.api_key, base_url=server.base_url, max_retries=0) as client:
        await client.products.create(sku="ARL-1", title="One", price="1", currency="USD")
        with pytest.raises(merx.RateLimitError) as limited:
            await client.products.create(sku="ARL-2", title="Two", price="1", currency="USD")
    assert limited.value.throttle_class == "writes" and limited.value.retry_after is not None


def test_construction_problems_are_explained() -> None:
    with pytest.raises(merx.MerxError, match="does not look like a Merx API key"):
        Merx("sk_live_123")
    with pytest.raises(merx.MerxError, match="http or https"):
        Merx("mx_test_a_b", base_url="localhost:8080")
    with Merx(base_url="http://127.0.0.1:9") as keyless, pytest.raises(merx.MerxError, match="No API key"):
        keyless.products.list()
    with Merx("mx_test_a_b", base_url="http://127.0.0.1:9") as client:
        with pytest.raises(merx.MerxError, match="operator"):
            client.merchants.admin.create(name="x", owner={"email": "x@example.com"})
        with pytest.raises(ValueError, match="non-empty"):
            client.products.retrieve("")  # an empty id would silently become the list URL
