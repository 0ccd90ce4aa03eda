"""Create, retrieve, list across pages, update with if_match and delete, with both clients."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import List

import pytest

import merx
from merx import AsyncMerx, Merx
from merx.types import Product
from support.server import Merchant, MerxServer


def test_create_returns_a_typed_product_with_decimal_money_and_response_metadata(server: MerxServer, merchant: Merchant) -> None:
    with Merx(api_key=merchant.api_key, base_url=server.base_url) as client:
        product = client.products.create(sku="TSHIRT-1", title="T-shirt", price="19.9", currency="USD", attributes={"size": "M"})

    assert isinstance(product, Product)
    assert product.id.startswith("prod_")
    assert (product.sku, product.title, product.currency, product.status) == ("TSHIRT-1", "T-shirt", "USD", "active")
    assert product.price == "19.90"  # the server normalises to the currency's minor units
    assert product.price_decimal == Decimal("19.90")
    assert product.attributes == {"size": "M"}
    assert product.last_response is not None
    assert product.last_response.status_code == 201
    assert product.last_response.etag == '"v1"'
    assert product.last_response.request_id is not None and product.last_response.request_id.startswith("req_")
    assert product.to_dict()["price"] == "19.90"


def test_a_decimal_price_is_sent_as_its_exact_string(server: MerxServer, merchant: Merchant) -> None:
    with Merx(merchant.api_key, base_url=server.base_url) as client:
        product = client.products.create(sku="KWD-1", title="Dates", price=Decimal("12.345"), currency="KWD")
        retrieved = client.products.retrieve(product.id)
    assert retrieved.price == "12.345"
    assert retrieved == product


def test_list_iterates_every_page_lazily(server: MerxServer, merchant: Merchant) -> None:
    with Merx(merchant.api_key, base_url=server.base_url) as client:
        created = [client.products.create(sku=f"PAGE-{index}", title=f"Item {index}", price="1.00", currency="EUR").id for index in range(5)]
        first = client.products.list(limit=2)
        assert len(first.data) == 2 and first.has_more and first.next_cursor
        assert first.last_response is not None and first.last_response.status_code == 200
        walked = [product.id for product in client.products.list(limit=2)]
        pages = list(first.iter_pages())
        second = first.get_next_page()

    assert walked == list(reversed(created))  # newest first, all five across three pages
    assert [len(page.data) for page in pages] == [2, 2, 1]
    assert not pages[-1].has_next_page()
    assert [p.id for p in second.data] == walked[2:4]


def test_list_filters_are_sent_as_query_parameters(server: MerxServer, merchant: Merchant) -> None:
    with Merx(merchant.api_key, base_url=server.base_url) as client:
        client.products.create(sku="DRAFT-1", title="Draft", price="5", currency="USD", status="draft")
        client.products.create(sku="LIVE-1", title="Live", price="5", currency="USD")
        drafts = client.products.list(status="draft")
    assert [p.sku for p in drafts.data] == ["DRAFT-1"]


def test_update_with_if_match_applies_once_and_refuses_a_stale_etag(server: MerxServer, merchant: Merchant) -> None:
    with Merx(merchant.api_key, base_url=server.base_url) as client:
        product = client.products.create(sku="MUG-1", title="Mug", price="8.00", currency="USD")
        assert product.last_response is not None
        stale_etag = product.last_response.etag
        updated = client.products.update(product.id, title="Big mug", price=Decimal("9.50"), if_match=stale_etag)
        with pytest.raises(merx.PreconditionFailedError) as refused:
            client.products.update(product.id, title="Huge mug", if_match=stale_etag)
        current = client.products.retrieve(product.id)

    assert (updated.title, updated.price, updated.version) == ("Big mug", "9.50", 2)
    assert updated.last_response is not None and updated.last_response.etag == '"v2"'
    assert refused.value.status == 412 and refused.value.code == "precondition_failed"
    assert current.title == "Big mug"  # the refused update changed nothing


def test_none_clears_a_field_while_not_giving_it_keeps_it(server: MerxServer, merchant: Merchant) -> None:
    with Merx(merchant.api_key, base_url=server.base_url) as client:
        product = client.products.create(sku="DESC-1", title="Described", price="1", currency="USD", description="Soft cotton", inventory_quantity=5)
        kept = client.products.update(product.id, title="Renamed")
        cleared = client.products.update(product.id, description=None)
    assert kept.description == "Soft cotton" and kept.inventory_quantity == 5
    assert cleared.description is None and cleared.inventory_quantity == 5


def test_delete_then_retrieve_is_not_found(server: MerxServer, merchant: Merchant) -> None:
    with Merx(merchant.api_key, base_url=server.base_url) as client:
        product = client.products.create(sku="GONE-1", title="Gone", price="1", currency="USD")
        assert client.products.delete(product.id) is None
        with pytest.raises(merx.NotFoundError):
            client.products.retrieve(product.id)


async def test_async_client_creates_concurrently_and_iterates_pages_with_async_for(server: MerxServer, merchant: Merchant) -> None:
    async with AsyncMerx(api_key=merchant.api_key, base_url=server.base_url) as client:
        created = await asyncio.gather(*(client.products.create(sku=f"ASYNC-{index}", title="Async", price="2.50", currency="EUR") for index in range(6)))
        listed: List[str] = [product.sku async for product in client.products.list(limit=4)]
        first_page = await client.products.list(limit=4)
        second_page = await first_page.get_next_page()
        updated = await client.products.update(created[0].id, title="Renamed", if_match='"v1"')
        with pytest.raises(merx.PreconditionFailedError):
            await client.products.update(created[0].id, title="Again", if_match='"v1"')
        await client.products.delete(created[1].id)
        with pytest.raises(merx.NotFoundError):
            await client.products.retrieve(created[1].id)

    assert sorted(listed) == sorted(p.sku for p in created)
    assert len(first_page.data) == 4 and first_page.has_more
    assert len(second_page.data) == 2 and not second_page.has_more
    assert updated.title == "Renamed" and updated.version == 2
    assert all(isinstance(p, Product) and p.price_decimal == Decimal("2.50") for p in created)
