"""Which answers are retried and how long the client waits."""

from __future__ import annotations

import email.utils
import time
import unittest

from merx._retry import MAX_RETRY_AFTER, backoff_delay, delay_for_answer, retry_after_seconds, retryable_status


class RetryPolicyTest(unittest.TestCase):
    def test_retryable_answers(self) -> None:
        for status in (408, 429, 500, 502, 503, 504):
            self.assertTrue(retryable_status(status, None), status)
        self.assertTrue(retryable_status(409, "idempotency_key_in_use"))
        for status, code in ((400, None), (401, None), (403, None), (404, None), (409, "conflict"), (412, None), (422, None)):
            self.assertFalse(retryable_status(status, code), status)

    def test_backoff_doubles_up_to_eight_seconds_with_up_to_a_quarter_off(self) -> None:
        self.assertEqual([backoff_delay(n, lambda: 0.0) for n in range(6)], [0.5, 1.0, 2.0, 4.0, 8.0, 8.0])
        self.assertEqual([backoff_delay(n, lambda: 1.0) for n in range(3)], [0.375, 0.75, 1.5])

    def test_retry_after_in_seconds_or_as_a_date(self) -> None:
        self.assertEqual(retry_after_seconds({"retry-after": "3"}), 3.0)
        self.assertEqual(retry_after_seconds({"retry-after": "1.5"}), 1.5)
        now = time.time()
        date = email.utils.formatdate(now + 30, usegmt=True)
        seconds = retry_after_seconds({"retry-after": date}, now=now)
        assert seconds is not None
        self.assertAlmostEqual(seconds, 30, delta=1)
        self.assertEqual(retry_after_seconds({"retry-after": email.utils.formatdate(now - 30, usegmt=True)}, now=now), 0.0)
        self.assertIsNone(retry_after_seconds({}))

    def test_the_delay_for_an_answer(self) -> None:
        self.assertEqual(delay_for_answer(503, None, {"retry-after": "2"}, 0, 2), 2.0)  # exactly what the server said
        self.assertIsNone(delay_for_answer(503, None, {"retry-after": "2"}, 2, 2))  # retries used up
        self.assertIsNone(delay_for_answer(429, None, {"retry-after": str(int(MAX_RETRY_AFTER) + 1)}, 0, 2))  # too long to wait inside a call
        backoff = delay_for_answer(500, None, {}, 1, 2)
        assert backoff is not None
        self.assertTrue(0.75 <= backoff <= 1.0)
        zero = delay_for_answer(503, None, {"retry-after": "0"}, 0, 2)
        assert zero is not None
        self.assertTrue(0.375 <= zero <= 0.5)
        self.assertIsNone(delay_for_answer(422, None, {}, 0, 2))


if __name__ == "__main__":
    unittest.main()
