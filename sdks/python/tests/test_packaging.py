"""The built wheel: installed with pip into a fresh virtual environment it works against the
real server, sync and async, and is typed (PEP 561); its pure parts run on CPython 3.9 and 3.13."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from support.packaging import SDK_ROOT, pyenv_python, run, venv_with_wheel
from support.server import Merchant, MerxServer

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, merx
    from merx import Merx, AsyncMerx

    with Merx(api_key=KEY, base_url=URL) as client:
        client.products.create(sku="WHEEL-1", title="From the wheel", price="19.99", currency="USD")
        client.products.create(sku="WHEEL-2", title="From the wheel", price="5", currency="USD")
        synced = [p.sku for p in client.products.list(limit=1)]

    async def main():
        async with AsyncMerx(api_key=KEY, base_url=URL) as client:
            await asyncio.gather(*(client.products.create(sku=f"WHEEL-A{n}", title="Async", price="1", currency="USD") for n in range(3)))
            return [p.sku async for p in client.products.list(limit=2)]

    print(json.dumps({"file": merx.__file__, "version": merx.__version__, "sync": synced, "async": asyncio.run(main())}))
    """
)


def test_the_wheel_contains_the_package_and_its_type_marker(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "merx/py.typed" in names and "merx/types.py" in names and "merx/_resources.py" in names
    metadata = zipfile.ZipFile(wheel).read("merx-0.1.0.dist-info/METADATA").decode()
    assert "Requires-Dist: httpx<1,>=0.23" in metadata and "Requires-Python: >=3.9" in metadata
    assert not any("tests/" in name or "generator/" in name for name in names)


def test_pip_installed_wheel_creates_and_lists_products_sync_and_async(installed_python: Path, server: MerxServer, merchant: Merchant, tmp_path: Path) -> None:
    script = f"KEY = {merchant.api_key!r}\nURL = {server.base_url!r}\n" + SCRIPT
    ran = run([str(installed_python), "-c", script], cwd=tmp_path, env={"PATH": os.environ["PATH"]})
    result = json.loads(ran.stdout)
    assert result["file"].startswith(str(installed_python.parent.parent))  # the installed copy, not the source tree
    assert result["sync"] == ["WHEEL-2", "WHEEL-1"]
    assert sorted(result["async"]) == ["WHEEL-1", "WHEEL-2", "WHEEL-A0", "WHEEL-A1", "WHEEL-A2"]


def test_the_installed_package_is_typed_for_mypy(installed_python: Path, tmp_path: Path, mypy_cache: Path) -> None:
    program = tmp_path / "app.py"
    program.write_text("from merx import Merx\nproduct = Merx().products.retrieve('prod_1')\nprice: int = product.price\n")
    ran = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--python-executable", str(installed_python), "--cache-dir", str(mypy_cache), str(program)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, env={"PATH": os.environ["PATH"]},
    )
    # mypy found the installed package's types through py.typed: it knows price is a str.
    assert 'Incompatible types in assignment (expression has type "str", variable has type "int")' in ran.stdout, ran.stdout + ran.stderr


@pytest.mark.parametrize("version", ["3.9", "3.13"])
def test_oldest_and_newest_cpython_install_the_wheel_and_pass_the_pure_tests(version: str, wheel: Path, tmp_path: Path) -> None:
    """pyenv's CPython has no httpx (no index is reachable), so this proves what needs no HTTP:
    pip accepts the wheel (requires-python), every module compiles, the package imports, and the
    pure unit tests (canonical JSON, webhook verification, pagination, retry policy, token cache,
    models) pass against the installed copy."""
    python = venv_with_wheel(pyenv_python(version), tmp_path / "venv", wheel, system_site_packages=False, no_deps=True)
    site = run([str(python), "-c", "import merx, os; print(os.path.dirname(merx.__file__))"], cwd=tmp_path).stdout.strip()
    assert site.startswith(str(tmp_path / "venv"))
    run([str(python), "-m", "compileall", "-q", site])
    missing = subprocess.run([str(python), "-c", "from merx import Merx"], cwd=tmp_path, capture_output=True, text=True)
    assert "No module named 'httpx'" in missing.stderr  # the clients need httpx; nothing else does
    tests = run([str(python), "-m", "unittest", "discover", "-s", str(SDK_ROOT / "tests" / "unit"), "-t", str(SDK_ROOT / "tests" / "unit")], cwd=tmp_path)
    assert tests.stderr.strip().endswith("OK"), tests.stderr
    assert f"Python {version}" in run([str(python), "--version"]).stdout


def test_an_older_python_is_refused_by_requires_python(wheel: Path, tmp_path: Path) -> None:
    run([pyenv_python("3.8"), "-m", "venv", str(tmp_path / "venv")])
    refused = subprocess.run([str(tmp_path / "venv" / "bin" / "python"), "-m", "pip", "install", "--no-index", "--no-deps", str(wheel)], capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "requires a different Python" in refused.stderr + refused.stdout
