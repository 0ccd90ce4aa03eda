"""A program using the SDK as an application would, checked with ``mypy --strict`` (never run).

Lines marked ``# type: ignore[...]`` are mistakes mypy must catch: ``--strict`` reports an
ignore that is not needed, so each of them proves the types refuse that mistake.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import List, Optional

import merx
from merx import AsyncMerx, AsyncPage, Merx, SyncPage, webhooks
from merx.types import Product, RecordBatchResult, WebhookEvent, WebhookSubscriptionWithSecret


def sync_usage() -> None:
    with Merx(api_key="mx_test_key_secret", base_url="http://localhost:8080", timeout=20, max_retries=3) as client:
        product: Product = client.products.create(sku="TSHIRT-1", title="T-shirt", price="19.99", currency="USD")
        exact: Decimal = product.price_decimal
        cheaper = client.products.update(product.id, price=exact - Decimal("1.00"), if_match=product.last_response.etag if product.last_response else None)
        version: int = cheaper.version
        description: Optional[str] = cheaper.description
        page: SyncPage[Product] = client.products.list(limit=100, status="active")
        skus: List[str] = [p.sku for p in page]
        first: List[Product] = page.data
        cursor: Optional[str] = page.next_cursor
        client.products.delete(product.id, idempotency_key="k")  # type: ignore[call-arg]
        client.products.create(sku="X", title="Y", price=19.99, currency="USD")  # type: ignore[arg-type]
        client.products.create(sku="X", title="Y", currency="USD")  # type: ignore[call-arg]
        client.products.list(status="deleted")  # type: ignore[arg-type]
        product.sku.no_such_method()  # type: ignore[attr-defined]
        client.products.list(limit=10, timeout=5.0, max_retries=0, extra_headers={"X-Trace": "1"})
        client.with_options(max_retries=5).products.retrieve("prod_123")
        batch: RecordBatchResult = client.sources.records.create(
            "src_123",
            records=[{"type": "order", "external_id": "o-1", "occurred_at": "2026-01-01T00:00:00.000Z", "data": {"total": 10}}],
        )
        statuses: List[str] = [result.status for result in batch.results]
        subscription: WebhookSubscriptionWithSecret = client.webhooks.subscriptions.create(url="https://example.com/hooks", topics=["products.created"])
        secret: str = subscription.secret
        client.webhooks.dead_letters.replay("del_123")
        print(version, description, skus, first, cursor, statuses, secret)


def errors_usage(client: Merx) -> None:
    try:
        client.products.create(sku="A", title="A", price="1", currency="USD")
    except merx.UnprocessableEntityError as error:
        fields: List[str] = [field_error.field for field_error in error.errors]
        print(fields, error.status, error.code, error.request_id, error.problem)
    except merx.RateLimitError as error:
        wait: Optional[float] = error.retry_after
        print(wait, error.throttle_class)
    except merx.PermissionDeniedError as error:
        print(error.required_scope)
    except (merx.ConnectionError, merx.TimeoutError) as error:
        print(error.status is None)
    except merx.MerxError as error:
        print(error.detail)


def webhook_usage(body: bytes, headers: dict[str, str], secret: str) -> None:
    event: WebhookEvent = webhooks.verify(body, headers, secret)
    print(event.id, event.topic, event.created_at)
    same: WebhookEvent = Merx().webhooks.verify(body, headers, [secret, "whsec_old"])
    print(same.to_dict())
    webhooks.verify(body, headers)  # type: ignore[call-arg]


async def async_usage() -> None:
    async with AsyncMerx(api_key="mx_test_key_secret") as client:
        products = await asyncio.gather(*(client.products.create(sku=f"S-{n}", title="T", price="1", currency="EUR") for n in range(3)))
        ids: List[str] = [p.id for p in products]
        page: AsyncPage[Product] = await client.products.list(limit=2)
        async for product in client.products.list(limit=2):
            print(product.sku)
        nxt: AsyncPage[Product] = await page.get_next_page()
        retrieved: Product = await client.products.retrieve(ids[0])
        await client.products.create(sku="X", title="Y", price=1.5, currency="USD")  # type: ignore[arg-type]
        client.products.retrieve(ids[0]).sku  # type: ignore[attr-defined, misc]
        print(nxt, retrieved)
