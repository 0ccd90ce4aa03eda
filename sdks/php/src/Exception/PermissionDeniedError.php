<?php

declare(strict_types=1);

namespace Merx\Exception;

/** 403 Forbidden: the token lacks the scope the operation needs (see problem['required_scope']). */
class PermissionDeniedError extends MerxError
{
}
