<?php

declare(strict_types=1);

namespace Merx\Core;

/**
 * @internal The access token of an API key: exchanged on first use (client credentials grant),
 * cached, and exchanged again a minute before it expires (half its lifetime when that is shorter)
 * or after the server refused it. PHP runs one call at a time per client, so a refresh is never
 * made twice at once.
 */
final class TokenProvider
{
    private ?string $token = null;

    private float $refreshAt = 0.0;

    /** @param \Closure(): array{access_token: string, expires_in: int} $exchange */
    public function __construct(private readonly \Closure $exchange)
    {
    }

    public function token(): string
    {
        if ($this->token === null || microtime(true) >= $this->refreshAt) {
            $answer = ($this->exchange)();
            $lifetime = max(0, $answer['expires_in']);
            $this->token = $answer['access_token'];
            $this->refreshAt = microtime(true) + $lifetime - min(60.0, $lifetime / 2);
        }

        return $this->token;
    }

    /** Forget the token (the server refused it), so the next call exchanges the key again. */
    public function invalidate(): void
    {
        $this->token = null;
    }
}
