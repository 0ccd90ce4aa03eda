"""A real Merx for the suite: the embedded mode as its own process on a free port.

The suite builds nothing itself: run ``npm run build --silent`` at the repository root first (the
README's test command does). Settings the tests rely on:

- ``MERX_ACCESS_TOKEN_TTL`` short, so a test sees a token expire and the client refresh it;
- the token endpoint's throttle lifted (each client fetches a token every few seconds), and the
  sandbox plan's burst and write buckets roomy, as the e2e suite does; tests that need a real
  429 set a small budget for their own merchant through the operator API;
- webhook retries within seconds, so a failing endpoint produces a dead letter quickly.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

import httpx

REPO_ROOT = Path(__file__).resolve().parents[4]
EMBEDDED_MAIN = REPO_ROOT / "services" / "embedded" / "dist" / "src" / "main.js"

ACCESS_TOKEN_TTL_SECONDS = 10

SERVER_ENV = {
    "LOG_LEVEL": "warn",
    "MERX_ACCESS_TOKEN_TTL": str(ACCESS_TOKEN_TTL_SECONDS),
    "MERX_THROTTLE_TOKEN_ENDPOINT": '{"limit":1000,"window_seconds":60}',
    "MERX_THROTTLE_PLANS": (
        '{"sandbox":{"burst":{"capacity":1000,"refill_per_second":500},'
        '"writes":{"capacity":1000,"refill_per_second":500},"sensitive":{"limit":100,"window_seconds":60}}}'
    ),
    "MERX_WEBHOOK_RETRY_SCHEDULE": "500ms,500ms,1s",
    "MERX_WEBHOOK_RETRY_WINDOW": "3s",
    "MERX_WEBHOOK_TIMEOUT": "3s",
    "MERX_WEBHOOK_CONNECT_TIMEOUT": "1s",
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Merchant:
    """A merchant of its own for one test: its id and first API key (every scope)."""

    def __init__(self, merchant_id: str, api_key: str, key_id: str) -> None:
        self.id = merchant_id
        self.api_key = api_key
        self.key_id = key_id

    @property
    def client_id(self) -> str:
        return self.api_key.rsplit("_", 1)[0]


class MerxServer:
    def __init__(self) -> None:
        if not EMBEDDED_MAIN.exists():
            raise RuntimeError(f"{EMBEDDED_MAIN} is missing: run `npm run build --silent` at the repository root first")
        self.data_dir = Path(tempfile.mkdtemp(prefix="merx-python-sdk-"))
        self.port = free_port()
        self.log_path = self.data_dir / "server.log"
        self._log = open(self.log_path, "wb")
        env = {**os.environ, **SERVER_ENV, "PORT": str(self.port), "ADMIN_PORT": "0", "MERX_DATA_DIR": str(self.data_dir / "data")}
        for name in ("MERX_API_KEY", "MERX_BASE_URL", "MERX_LOG", "MERX_OPERATOR_TOKEN"):
            env.pop(name, None)
        self.process = subprocess.Popen(["node", str(EMBEDDED_MAIN)], cwd=REPO_ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        self.credentials = self._wait_for_credentials(timeout=180)
        self.base_url: str = self.credentials["base_url"]
        self.operator_token: str = self.credentials["operator_token"]
        self.operator = httpx.Client(base_url=self.base_url, headers={"Authorization": f"Bearer {self.operator_token}"}, timeout=30)

    def _wait_for_credentials(self, timeout: float) -> Dict[str, Any]:
        dev_json = self.data_dir / "data" / "dev.json"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Merx exited with {self.process.returncode}:\n{self.log_tail()}")
            if dev_json.exists():
                try:
                    loaded: Dict[str, Any] = json.loads(dev_json.read_text())
                    return loaded
                except ValueError:
                    pass  # written as we read it
            time.sleep(0.1)
        raise RuntimeError(f"Merx did not start within {timeout} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def create_merchant(self, name: Optional[str] = None) -> Merchant:
        """A new sandbox merchant through the operator API, as an operator would make one."""
        suffix = uuid.uuid4().hex[:10]
        answer = self.operator.post("/admin/v1/merchants", json={"name": name or f"Python SDK {suffix}", "owner": {"email": f"owner-{suffix}@sdk-tests.example"}})
        answer.raise_for_status()
        body = answer.json()
        return Merchant(body["merchant"]["id"], body["api_key"]["secret"], body["api_key"]["id"])

    def set_throttle(self, merchant_id: str, overrides: Mapping[str, Any]) -> None:
        self.operator.put(f"/admin/v1/merchants/{merchant_id}/throttle", json=dict(overrides)).raise_for_status()

    def set_merchant_status(self, merchant_id: str, status: str) -> None:
        self.operator.patch(f"/admin/v1/merchants/{merchant_id}", json={"status": status}).raise_for_status()

    def stop(self) -> None:
        self.operator.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._log.close()
        shutil.rmtree(self.data_dir, ignore_errors=True)
