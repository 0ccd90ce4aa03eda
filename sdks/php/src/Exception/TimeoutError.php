<?php

declare(strict_types=1);

namespace Merx\Exception;

/** No answer within the timeout (retried automatically). */
final class TimeoutError extends ConnectionError
{
}
