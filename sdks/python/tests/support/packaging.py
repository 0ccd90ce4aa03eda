"""Building the wheel offline and installing it into fresh virtual environments."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import List

SDK_ROOT = Path(__file__).resolve().parents[2]
PYENV_VERSIONS = Path("/root/.pyenv/versions")


def run(command: List[str], **options: object) -> subprocess.CompletedProcess:
    ran = subprocess.run(command, capture_output=True, text=True, timeout=600, **options)  # type: ignore[call-overload]
    if ran.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, command))} failed ({ran.returncode}):\n{ran.stdout}\n{ran.stderr}")
    return ran


def build_wheel(target: Path) -> Path:
    """The wheel, built by hatchling itself (Debian's python3-hatchling): no index, no pip."""
    run([sys.executable, "-m", "hatchling", "build", "--target", "wheel", "--directory", str(target)], cwd=SDK_ROOT)
    wheels = sorted(target.glob("merx-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def venv_with_wheel(python: str, location: Path, wheel: Path, *, system_site_packages: bool, no_deps: bool = False) -> Path:
    """A fresh virtual environment of ``python`` with the wheel installed; its interpreter."""
    run([python, "-m", "venv", *(["--system-site-packages"] if system_site_packages else []), str(location)])
    interpreter = location / "bin" / "python"
    run([str(interpreter), "-m", "pip", "install", "--no-index", "--disable-pip-version-check", *(["--no-deps"] if no_deps else []), str(wheel)])
    return interpreter


def pyenv_python(version_prefix: str) -> str:
    matches = sorted(PYENV_VERSIONS.glob(f"{version_prefix}.*"))
    assert matches, f"no CPython {version_prefix} under {PYENV_VERSIONS}"
    return str(matches[-1] / "bin" / "python")
