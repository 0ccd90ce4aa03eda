<?php

declare(strict_types=1);

namespace Merx\Core;

/** The answer of an operation that returns no body (204): only its meta (request id, status). */
final class NoContent
{
    public function __construct(private readonly ResponseMeta $meta)
    {
    }

    public function meta(): ResponseMeta
    {
        return $this->meta;
    }
}
