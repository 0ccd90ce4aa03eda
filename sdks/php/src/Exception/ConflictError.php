<?php

declare(strict_types=1);

namespace Merx\Exception;

/** 409 Conflict: the request clashes with the resource's state, or its Idempotency-Key is in use. */
class ConflictError extends MerxError
{
}
