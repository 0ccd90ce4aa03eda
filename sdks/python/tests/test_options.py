"""Construction from the environment, per-request and per-client options, telemetry, debug
logging without secrets, and context managers that close their connections."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

import merx
from merx import AsyncMerx, Merx
from support.proxy import FaultProxy
from support.server import Merchant, MerxServer

SRC = Path(__file__).resolve().parent.parent / "src"


def test_the_environment_supplies_the_key_and_the_base_url(server: MerxServer, merchant: Merchant, proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MERX_API_KEY", merchant.api_key)
    monkeypatch.setenv("MERX_BASE_URL", proxy.url)
    with Merx() as client:
        product = client.products.create(sku="ENV-1", title="From env", price="1", currency="USD")
    assert product.sku == "ENV-1"
    assert len(proxy.seen("POST", "/api/v1/products")) == 1  # it went to MERX_BASE_URL


def test_user_agent_names_the_library_and_the_runtime(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    with Merx(merchant.api_key, base_url=proxy.url) as client:
        client.products.list()
    expected = f"merx-python/{merx.__version__} python/{platform.python_version()}"
    assert {seen.headers["user-agent"] for seen in proxy.seen()} == {expected}


def test_extra_and_default_headers_reach_the_server(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    with Merx(merchant.api_key, base_url=proxy.url, default_headers={"X-Team": "growth"}) as client:
        client.products.list(extra_headers={"X-Trace": "abc123"})
        client.with_options(default_headers={"X-Env": "ci"}).products.list()
    first, second = proxy.seen("GET", "/api/v1/products")
    assert (first.headers["x-team"], first.headers["x-trace"]) == ("growth", "abc123")
    assert (second.headers["x-team"], second.headers["x-env"]) == ("growth", "ci")
    assert "x-trace" not in second.headers


def test_with_options_shares_connections_and_the_token(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    with Merx(merchant.api_key, base_url=proxy.url) as client:
        patient = client.with_options(timeout=120, max_retries=5)
        client.products.list()
        patient.products.list()
        assert patient.timeout == 120 and patient.max_retries == 5 and client.max_retries == 2
        patient.close()  # does not close the connections it shares
        assert not client.is_closed()
    assert client.is_closed()
    assert len(proxy.seen("POST", "/oauth/token")) == 1


def test_a_custom_httpx_client_is_used_and_left_open(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    own = httpx.Client(headers={"X-Via": "custom-transport"})
    with Merx(merchant.api_key, base_url=proxy.url, http_client=own) as client:
        client.products.list()
    assert proxy.seen("GET", "/api/v1/products")[0].headers["x-via"] == "custom-transport"
    assert not own.is_closed
    own.close()


def test_context_managers_close_their_connections(server: MerxServer, merchant: Merchant) -> None:
    with Merx(merchant.api_key, base_url=server.base_url) as client:
        client.products.list()
        assert not client.is_closed()
    assert client.is_closed()
    with pytest.raises(RuntimeError):
        client.products.list()


async def test_async_context_manager_closes_and_options_apply(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    async with AsyncMerx(merchant.api_key, base_url=proxy.url, default_headers={"X-Team": "growth"}) as client:
        await client.products.list(extra_headers={"X-Trace": "t1"})
        await client.with_options(max_retries=0).products.list()
        assert not client.is_closed()
    assert client.is_closed()
    seen = proxy.seen("GET", "/api/v1/products")
    assert seen[0].headers["x-trace"] == "t1" and all(s.headers["x-team"] == "growth" for s in seen)
    assert seen[0].headers["user-agent"].startswith("merx-python/")
    assert len(proxy.seen("POST", "/oauth/token")) == 1


def test_debug_log_shows_each_request_and_never_a_secret(server: MerxServer, merchant: Merchant, proxy: FaultProxy) -> None:
    script = textwrap.dedent(
        """
        from merx import Merx
        client = Merx()
        subscription = client.webhooks.subscriptions.create(url="https://example.com/hooks", topics=["products.created"])
        client.products.create(sku="LOG-1", title="Logged", price="1", currency="USD")
        print(subscription.secret)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(SRC), "MERX_LOG": "debug", "MERX_API_KEY": merchant.api_key, "MERX_BASE_URL": proxy.url}
    ran = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    log = ran.stderr
    webhook_secret = ran.stdout.strip()
    access_token = proxy.seen("POST", "/api/v1/products")[0].headers["authorization"].removeprefix("Bearer ")

    assert "POST /oauth/token -> 200" in log
    assert "POST /api/v1/webhooks/subscriptions -> 201" in log
    assert "POST /api/v1/products -> 201" in log and "request_id=req_" in log
    for secret in (merchant.api_key, merchant.api_key.rsplit("_", 1)[1], access_token, webhook_secret):
        assert secret not in log


def test_without_merx_log_nothing_is_logged(server: MerxServer, merchant: Merchant) -> None:
    script = "from merx import Merx\nMerx().products.list()\n"
    env = {**os.environ, "PYTHONPATH": str(SRC), "MERX_API_KEY": merchant.api_key, "MERX_BASE_URL": server.base_url}
    env.pop("MERX_LOG", None)
    ran = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and ran.stderr == ""
