"""When to retry and how long to wait: the same policy for the sync and the async client.

Retried: no answer (connection refused or cut, timeout), 408, 409 ``idempotency_key_in_use``
(the first request with that key is still running), 429 and 5xx. Everything else is an answer
about the request itself and retrying cannot change it. The wait is exponential with jitter
(0.5 s, 1 s, 2 s, ... up to 8 s, each up to 25 % shorter so clients that failed together do not
come back together), unless the server said how long with ``Retry-After``: then exactly that,
never less. A ``Retry-After`` longer than a minute is not waited out inside a call; the error is
raised with ``retry_after`` so the caller decides.
"""

from __future__ import annotations

import email.utils
import random
import time
from typing import Callable, Mapping, Optional

__all__ = ["INITIAL_DELAY", "MAX_DELAY", "MAX_RETRY_AFTER", "retryable_status", "backoff_delay", "retry_after_seconds", "delay_for_answer"]

INITIAL_DELAY = 0.5
MAX_DELAY = 8.0
MAX_RETRY_AFTER = 60.0


def retryable_status(status: int, problem_code: Optional[str]) -> bool:
    if status == 409:
        return problem_code == "idempotency_key_in_use"
    return status in (408, 429) or status >= 500


def backoff_delay(retries_taken: int, random_fraction: Callable[[], float] = random.random) -> float:
    """Seconds before retry number ``retries_taken + 1``: 0.5 s doubling up to 8 s, minus up to 25 %."""
    base = min(INITIAL_DELAY * 2.0**retries_taken, MAX_DELAY)
    return base * (1 - 0.25 * random_fraction())


def retry_after_seconds(headers: Mapping[str, str], now: Optional[float] = None) -> Optional[float]:
    """``Retry-After`` in seconds (delta-seconds or an HTTP date); ``None`` when absent or unreadable."""
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        seconds = parsed.timestamp() - (time.time() if now is None else now)
    return max(seconds, 0.0)


def delay_for_answer(
    status: int,
    problem_code: Optional[str],
    headers: Mapping[str, str],
    retries_taken: int,
    max_retries: int,
) -> Optional[float]:
    """Seconds to wait before retrying this answer, or ``None`` to give it to the caller."""
    if retries_taken >= max_retries or not retryable_status(status, problem_code):
        return None
    try:
        retry_after = retry_after_seconds(headers)
    except (TypeError, ValueError, OverflowError):
        retry_after = None
    if retry_after is None or retry_after == 0:
        return backoff_delay(retries_taken)
    if retry_after > MAX_RETRY_AFTER:
        return None
    return retry_after
