<?php

declare(strict_types=1);

namespace Merx\Exception;

/** 5xx: the server failed; retried automatically up to max_retries. */
class InternalServerError extends MerxError
{
}
