<?php

declare(strict_types=1);

namespace Merx\Exception;

/**
 * A webhook request that is not provably from Merx: a missing header, a signature that matches
 * none of the secrets, a timestamp outside the tolerance, or a body whose hmac_sha256 is wrong.
 */
final class WebhookVerificationError extends \UnexpectedValueException implements ExceptionInterface
{
}
