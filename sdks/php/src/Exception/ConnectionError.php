<?php

declare(strict_types=1);

namespace Merx\Exception;

/** No answer: the connection failed or broke before a response came (retried automatically). */
class ConnectionError extends MerxError
{
}
