"""Creates products concurrently with AsyncMerx, then lists them back across pages.

    MERX_API_KEY=mx_test_... MERX_BASE_URL=http://localhost:8080 python3 main.py [COUNT]

Prints one JSON summary line. All requests share one access token: the client refreshes it once
for all of them, and retries what fails in transit with the same Idempotency-Key, so a create
is never made twice.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from decimal import Decimal

from merx import AsyncMerx


async def main(count: int) -> None:
    batch = uuid.uuid4().hex[:8].upper()
    started = time.perf_counter()
    async with AsyncMerx() as merx:  # MERX_API_KEY and MERX_BASE_URL from the environment
        created = await asyncio.gather(
            *(
                merx.products.create(sku=f"BATCH-{batch}-{n}", title=f"Batch item {n}", price=Decimal("4.99") + n, currency="EUR")
                for n in range(count)
            )
        )
        created_seconds = time.perf_counter() - started
        listed = [product async for product in merx.products.list(limit=10) if product.sku.startswith(f"BATCH-{batch}-")]
        pages = 0
        page = await merx.products.list(limit=10)
        async for _ in page.iter_pages():
            pages += 1

    assert sorted(p.id for p in listed) == sorted(p.id for p in created), "every created product is listed"
    print(
        json.dumps(
            {
                "created": len(created),
                "listed": len(listed),
                "pages": pages,
                "total_price": str(sum((p.price_decimal for p in created), Decimal(0))),
                "create_seconds": round(created_seconds, 3),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
