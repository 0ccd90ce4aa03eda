"""``mypy --strict`` over the package (for the oldest and newest Python it supports) and over a
program that uses it (tests/typing/usage.py), where marked mistakes must be refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SDK_ROOT = Path(__file__).resolve().parent.parent


def mypy(*arguments: str, cache: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), "--python-executable", sys.executable, *arguments]
    return subprocess.run(command, cwd=SDK_ROOT, env={"MYPYPATH": str(SDK_ROOT / "src"), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("python_version", ["3.9", "3.13"])
def test_the_package_passes_mypy_strict(python_version: str, mypy_cache: Path) -> None:
    ran = mypy("--python-version", python_version, "-p", "merx", cache=mypy_cache)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "Success: no issues found" in ran.stdout


def test_a_program_using_the_package_passes_mypy_strict_and_its_mistakes_are_caught(mypy_cache: Path) -> None:
    ran = mypy("tests/typing/usage.py", cache=mypy_cache)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    usage = (SDK_ROOT / "tests/typing/usage.py").read_text()
    # --strict includes --warn-unused-ignores: each of these ignores is needed, so each mistake is caught.
    assert usage.count("# type: ignore[") >= 8
