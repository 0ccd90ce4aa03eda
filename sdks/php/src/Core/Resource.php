<?php

declare(strict_types=1);

namespace Merx\Core;

/** Base of the generated resource classes: each method is one operation of the API. */
abstract class Resource
{
    public function __construct(protected readonly Requestor $requestor)
    {
    }
}
