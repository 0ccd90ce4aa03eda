"""Waiting for a condition with a deadline instead of sleeping a guessed time."""

from __future__ import annotations

import time
from typing import Callable, Optional, TypeVar

T = TypeVar("T")


def eventually(condition: Callable[[], Optional[T]], *, timeout: float = 20.0, interval: float = 0.05, what: str = "the condition") -> T:
    """The first truthy value ``condition()`` returns; fails the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        time.sleep(interval)
