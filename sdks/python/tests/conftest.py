"""Fixtures: one real Merx for the whole session, a merchant of its own per test, and a proxy
for fault injection in front of the server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

SDK_ROOT = Path(__file__).resolve().parent.parent
# The tests import the package from its source tree; test_packaging proves the built wheel.
sys.path.insert(0, str(SDK_ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from support.packaging import build_wheel, venv_with_wheel  # noqa: E402
from support.proxy import FaultProxy  # noqa: E402
from support.receiver import WebhookReceiver  # noqa: E402
from support.server import Merchant, MerxServer  # noqa: E402


@pytest.fixture(autouse=True)
def _no_merx_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests set the environment variables they mean to test; none leak in from the shell."""
    for name in ("MERX_API_KEY", "MERX_BASE_URL", "MERX_LOG", "MERX_OPERATOR_TOKEN"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def server() -> Iterator[MerxServer]:
    started = MerxServer()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def merchant(server: MerxServer) -> Merchant:
    return server.create_merchant()


@pytest.fixture
def proxy(server: MerxServer) -> Iterator[FaultProxy]:
    started = FaultProxy(server.base_url)
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    started = WebhookReceiver()
    try:
        yield started
    finally:
        started.close()


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package built as a wheel, offline, as a release would build it."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def installed_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a fresh venv (Debian's Python, its httpx) with the wheel pip-installed."""
    return venv_with_wheel("/usr/bin/python3", tmp_path_factory.mktemp("venv") / "venv", wheel, system_site_packages=True)


@pytest.fixture(scope="session")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for every mypy run of the session: the standard library is analysed once."""
    return tmp_path_factory.mktemp("mypy-cache")
