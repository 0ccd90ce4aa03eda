<?php

declare(strict_types=1);

namespace Merx\Http;

use Psr\Http\Client\ClientInterface;

/**
 * A PSR-18 client that can give up after a number of seconds. PSR-18 has no per-request timeout,
 * so the SDK honours its `timeout` settings through this interface when the client offers it
 * (`CurlClient`, `SymfonyClient`); any other client keeps the timeout it was configured with.
 */
interface TimeoutAware extends ClientInterface
{
    /** The same client, giving up on a request after `$seconds` (connecting, sending and reading). */
    public function withTimeout(float $seconds): ClientInterface;
}
