<?php

declare(strict_types=1);

namespace Merx\Exception;

/** Every exception the SDK throws implements this, so one `catch` can take them all. */
interface ExceptionInterface extends \Throwable
{
}
