<?php

declare(strict_types=1);

namespace Merx\Exception;

/** 401 Unauthorized: the API key or access token was refused. */
class AuthenticationError extends MerxError
{
}
