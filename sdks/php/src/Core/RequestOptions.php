<?php

declare(strict_types=1);

namespace Merx\Core;

use Merx\Exception\ConfigurationError;

/**
 * Options of one call, as the last argument of any resource method: an array with the keys
 * `idempotency_key`, `if_match`, `timeout` (seconds), `max_retries` and `headers`, or this object.
 */
final class RequestOptions
{
    private const KEYS = ['idempotency_key', 'if_match', 'timeout', 'max_retries', 'headers'];

    /** @param array<string, string> $headers */
    public function __construct(
        public readonly ?string $idempotencyKey = null,
        public readonly ?string $ifMatch = null,
        public readonly ?float $timeout = null,
        public readonly ?int $maxRetries = null,
        public readonly array $headers = [],
    ) {
        if ($timeout !== null && $timeout <= 0) {
            throw new ConfigurationError('timeout must be a positive number of seconds');
        }
        if ($maxRetries !== null && $maxRetries < 0) {
            throw new ConfigurationError('max_retries must be 0 or more');
        }
    }

    /**
     * @param self|array{idempotency_key?: string, if_match?: string, timeout?: float|int, max_retries?: int, headers?: array<string, string>}|null $options
     */
    public static function from(self|array|null $options): self
    {
        if ($options instanceof self) {
            return $options;
        }
        if ($options === null || $options === []) {
            return new self();
        }
        $unknown = array_diff(array_keys($options), self::KEYS);
        if ($unknown !== []) {
            throw new ConfigurationError(\sprintf('unknown request option %s; known: %s', implode(', ', $unknown), implode(', ', self::KEYS)));
        }

        return new self(
            idempotencyKey: $options['idempotency_key'] ?? null,
            ifMatch: $options['if_match'] ?? null,
            timeout: isset($options['timeout']) ? (float) $options['timeout'] : null,
            maxRetries: $options['max_retries'] ?? null,
            headers: $options['headers'] ?? [],
        );
    }
}
