"""The sample applications in examples/, run as smoke tests against the real server with the
wheel installed into a fresh virtual environment, exactly as their READMEs say."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List

import httpx
import pytest

from merx import Merx, webhooks
from support.polling import eventually
from support.server import Merchant, MerxServer, free_port

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


class Lines:
    """A child process's stdout, one JSON line at a time, collected in the background."""

    def __init__(self, process: "subprocess.Popen[str]") -> None:
        self.items: List[Dict[str, object]] = []
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: "subprocess.Popen[str]") -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if line.strip().startswith("{"):
                self.items.append(json.loads(line))


@pytest.fixture
def receiver_port() -> int:
    return free_port()


def with_key(items: List[Dict[str, object]], key: str, value: object, count: int) -> List[Dict[str, object]]:
    found = [item for item in items if item.get(key) == value]
    return found if len(found) >= count else []


@contextmanager
def running_receiver(installed_python: Path, port: int, secret: str) -> Iterator[Lines]:
    process = subprocess.Popen(
        [str(installed_python), str(EXAMPLES / "python-webhook-receiver" / "receiver.py")],
        env={"PATH": os.environ["PATH"], "PORT": str(port), "MERX_WEBHOOK_SECRET": secret},
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        lines = Lines(process)
        eventually(lambda: any("listening" in item for item in lines.items), what="the receiver listening")
        yield lines
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_webhook_receiver_verifies_real_deliveries_and_refuses_forgeries(installed_python: Path, server: MerxServer, merchant: Merchant, receiver_port: int) -> None:
    url = f"http://127.0.0.1:{receiver_port}/webhooks"
    with Merx(merchant.api_key, base_url=server.base_url) as client:
        subscription = client.webhooks.subscriptions.create(url=url, topics=["products"])
        with running_receiver(installed_python, receiver_port, subscription.secret) as lines:
            product = client.products.create(sku=f"EX-{uuid.uuid4().hex[:6]}", title="Example", price="9.99", currency="USD")
            client.products.update(product.id, title="Example, renamed")
            handled = eventually(lambda: with_key(lines.items, "verified", True, 2), what="two verified events")

            body = b'{"id":"evt_forged","topic":"products.deleted"}'
            stale = httpx.post(url, content=body, headers={"webhook-id": "evt_forged", "webhook-timestamp": "1", "webhook-signature": "v1,AAAA"})
            wrong_key = webhooks.sign(body, secret="whsec_" + "A" * 43 + "=", message_id="evt_forged")
            forged = httpx.post(url, content=body, headers={"webhook-id": "evt_forged", "webhook-timestamp": str(int(time.time())), "webhook-signature": wrong_key})
            refusals = eventually(lambda: with_key(lines.items, "verified", False, 2), what="two refusals")

    assert {(item["topic"], item["object_id"]) for item in handled} == {("products.created", product.id), ("products.updated", product.id)}
    assert stale.status_code == 400 and forged.status_code == 400
    assert any("too old" in str(item["reason"]) for item in refusals) and any("signature" in str(item["reason"]) for item in refusals)


def test_the_async_products_script_creates_and_lists_concurrently(installed_python: Path, server: MerxServer, merchant: Merchant) -> None:
    ran = subprocess.run(
        [str(installed_python), str(EXAMPLES / "python-async-products" / "main.py"), "12"],
        env={"PATH": os.environ["PATH"], "MERX_API_KEY": merchant.api_key, "MERX_BASE_URL": server.base_url},
        capture_output=True, text=True, timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout.strip().splitlines()[-1])
    assert (summary["created"], summary["listed"], summary["pages"]) == (12, 12, 2)
    assert summary["total_price"] == "125.88"  # 12 x 4.99 + (0 + 1 + ... + 11), exact
