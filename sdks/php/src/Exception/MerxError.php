<?php

declare(strict_types=1);

namespace Merx\Exception;

/**
 * An API call that did not succeed. For an answer from the server it carries the RFC 9457 problem
 * document: `status`, `errorCode` (the problem's `code`, e.g. `validation_failed`), `title`,
 * `detail`, `requestId` and the whole document in `problem`. `ConnectionError` and `TimeoutError`
 * (no answer) have no status.
 */
class MerxError extends \RuntimeException implements ExceptionInterface
{
    /**
     * @param array<string, mixed> $problem
     * @param array<string, list<string>> $headers
     */
    public function __construct(
        string $message,
        public readonly ?int $status = null,
        public readonly ?string $errorCode = null,
        public readonly ?string $title = null,
        public readonly ?string $detail = null,
        public readonly ?string $requestId = null,
        public readonly array $problem = [],
        public readonly array $headers = [],
        ?\Throwable $previous = null,
    ) {
        parent::__construct($message, $status ?? 0, $previous);
    }

    /**
     * The exception for an error answer: the subclass of its status, filled from its problem
     * document (or from what the answer offers when it has none).
     *
     * @param array<string, mixed> $problem
     * @param array<string, list<string>> $headers
     */
    public static function fromProblem(int $status, array $problem, array $headers, ?string $requestId): self
    {
        $class = match (true) {
            $status === 400 => BadRequestError::class,
            $status === 401 => AuthenticationError::class,
            $status === 403 => PermissionDeniedError::class,
            $status === 404 => NotFoundError::class,
            $status === 409 => ConflictError::class,
            $status === 412 => PreconditionFailedError::class,
            $status === 422 => UnprocessableEntityError::class,
            $status === 429 => RateLimitError::class,
            $status >= 500 => InternalServerError::class,
            default => self::class,
        };
        $text = static fn (string $key): ?string => isset($problem[$key]) && \is_scalar($problem[$key]) ? (string) $problem[$key] : null;
        // The token endpoint answers in OAuth's shape ({error, error_description}), not RFC 9457.
        $code = $text('code') ?? $text('error');
        $title = $text('title');
        $detail = $text('detail') ?? $text('error_description');
        $requestId = $text('request_id') ?? $requestId;
        $message = \sprintf('%d %s', $status, $code ?? 'error') . ($detail !== null ? ": {$detail}" : ($title !== null ? ": {$title}" : ''));
        if ($requestId !== null) {
            $message .= " (request {$requestId})";
        }

        return new $class($message, $status, $code, $title, $detail, $requestId, $problem, $headers);
    }
}
