<?php

declare(strict_types=1);

namespace Merx\Core;

/** What the HTTP answer said besides its body: status, headers, request id, ETag, replay flag. */
final class ResponseMeta
{
    /** @param array<string, list<string>> $headers header names in lower case */
    public function __construct(
        public readonly int $statusCode,
        public readonly array $headers,
    ) {
    }

    public function header(string $name): ?string
    {
        return $this->headers[strtolower($name)][0] ?? null;
    }

    /** `X-Request-Id`: quote it when you ask for support. */
    public function requestId(): ?string
    {
        return $this->header('x-request-id');
    }

    /** `ETag` (`"v3"`): pass it as `if_match` for a conditional update. */
    public function etag(): ?string
    {
        return $this->header('etag');
    }

    /** True when the server replayed the stored answer of an earlier request with the same Idempotency-Key. */
    public function idempotentReplayed(): bool
    {
        return $this->header('idempotent-replayed') === 'true';
    }
}
