<?php

declare(strict_types=1);

namespace Merx\Exception;

/** A 2xx answer the SDK could not read as the model the OpenAPI document promises. */
final class UnexpectedResponseError extends \UnexpectedValueException implements ExceptionInterface
{
}
