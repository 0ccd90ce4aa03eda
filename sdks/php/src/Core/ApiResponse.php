<?php

declare(strict_types=1);

namespace Merx\Core;

use Merx\Exception\UnexpectedResponseError;

/** @internal A successful answer, read into what the operation returns. */
final class ApiResponse
{
    public function __construct(
        public readonly string $body,
        public readonly ResponseMeta $meta,
    ) {
    }

    /**
     * @template T of Model
     *
     * @param class-string<T> $class
     *
     * @return T
     */
    public function model(string $class): Model
    {
        return Hydrate::model($this->json(), '$', $class)->withResponseMeta($this->meta);
    }

    /** @return array<mixed> a free-form JSON document (the OpenAPI document, say) */
    public function array(): array
    {
        return Hydrate::array($this->json(), '$');
    }

    public function text(): string
    {
        return $this->body;
    }

    public function noContent(): NoContent
    {
        return new NoContent($this->meta);
    }

    public function json(): mixed
    {
        try {
            return json_decode($this->body, true, 512, \JSON_THROW_ON_ERROR);
        } catch (\JsonException $e) {
            throw new UnexpectedResponseError("the answer is not JSON: {$e->getMessage()}", 0, $e);
        }
    }
}
