<?php

declare(strict_types=1);

namespace Merx\Exception;

/** 404 Not Found: no such resource for this merchant. */
class NotFoundError extends MerxError
{
}
