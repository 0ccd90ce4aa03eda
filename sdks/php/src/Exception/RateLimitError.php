<?php

declare(strict_types=1);

namespace Merx\Exception;

/** 429 Too Many Requests, once the automatic retries are spent: which class refused, and when to come back. */
class RateLimitError extends MerxError
{
    /** Seconds to wait, from the problem document or the Retry-After header. */
    public function retryAfter(): ?int
    {
        if (\is_int($this->problem['retry_after'] ?? null)) {
            return $this->problem['retry_after'];
        }
        $header = $this->headers['retry-after'][0] ?? null;

        return $header !== null && ctype_digit($header) ? (int) $header : null;
    }

    /** `burst`, `sustained`, `writes` or `sensitive`. */
    public function throttleClass(): ?string
    {
        return \is_string($this->problem['throttle_class'] ?? null) ? $this->problem['throttle_class'] : null;
    }
}
