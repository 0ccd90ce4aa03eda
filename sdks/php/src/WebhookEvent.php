<?php

declare(strict_types=1);

namespace Merx;

use Merx\Core\Hydrate;
use Merx\Core\Model;

/**
 * A webhook event of a topic this SDK has no typed class for (a topic newer than the SDK): the
 * envelope typed, `data` as decoded JSON.
 */
final class WebhookEvent extends Model
{
    /** @param array<string, mixed> $data */
    public function __construct(
        /** Event id (`evt_…`), the same on every retry and replay: drop duplicates by it. */
        public readonly string $id,
        /** The event name, e.g. `products.created`. */
        public readonly string $topic,
        public readonly string $merchantId,
        /** ISO 8601 in UTC with milliseconds. */
        public readonly string $createdAt,
        public readonly string $apiVersion,
        /** `object` (and `previous` for updates). */
        public readonly array $data,
        /** Hex HMAC-SHA256 of the other fields' RFC 8785 canonical JSON. */
        public readonly string $hmacSha256,
    ) {
    }

    public static function from(array $data, string $path = '$'): static
    {
        $field = static fn (string $key): mixed => Hydrate::field($data, $key, $path, true);

        return (new self(
            id: Hydrate::string($field('id'), "{$path}.id"),
            topic: Hydrate::string($field('topic'), "{$path}.topic"),
            merchantId: Hydrate::string($field('merchant_id'), "{$path}.merchant_id"),
            createdAt: Hydrate::string($field('created_at'), "{$path}.created_at"),
            apiVersion: Hydrate::string($field('api_version'), "{$path}.api_version"),
            data: Hydrate::object($field('data'), "{$path}.data"),
            hmacSha256: Hydrate::string($field('hmac_sha256'), "{$path}.hmac_sha256"),
        ))->withWireFields($data);
    }
}
