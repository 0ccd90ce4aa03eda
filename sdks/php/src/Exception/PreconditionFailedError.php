<?php

declare(strict_types=1);

namespace Merx\Exception;

/** 412 Precondition Failed: the If-Match ETag no longer matches; re-read and retry. */
class PreconditionFailedError extends MerxError
{
}
