<?php

declare(strict_types=1);

namespace Merx\Exception;

/** 400 Bad Request: the request could not be read (malformed_request). */
class BadRequestError extends MerxError
{
}
