<?php

declare(strict_types=1);

namespace Merx\Exception;

/** The client was built with a missing or malformed setting (no API key, a bad base URL, ...). */
final class ConfigurationError extends \InvalidArgumentException implements ExceptionInterface
{
}
