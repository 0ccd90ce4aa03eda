<?php

declare(strict_types=1);

namespace Merx\Core;

/** @internal What goes in `Authorization: Bearer`: an access token from the API key, or the operator's static token. */
final class Credentials
{
    private function __construct(
        private readonly ?TokenProvider $tokens,
        private readonly ?string $staticToken,
    ) {
    }

    public static function oauth(TokenProvider $tokens): self
    {
        return new self($tokens, null);
    }

    public static function static(string $token): self
    {
        return new self(null, $token);
    }

    public function bearerToken(): string
    {
        return $this->tokens?->token() ?? (string) $this->staticToken;
    }

    public function canRefresh(): bool
    {
        return $this->tokens !== null;
    }

    public function invalidate(): void
    {
        $this->tokens?->invalidate();
    }
}
