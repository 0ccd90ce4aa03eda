<?php

declare(strict_types=1);

namespace Merx\Core;

/**
 * Base of every generated model: readonly typed properties (camelCase), plus the answer's fields
 * as they came on the wire through `toArray()` and read-only array access (`$product['price']`),
 * so a field newer than this SDK is still reachable. `meta()` has the request id and ETag of the
 * answer a model came from.
 *
 * @implements \ArrayAccess<string, mixed>
 */
abstract class Model implements \ArrayAccess, \JsonSerializable
{
    /** @var array<string, mixed> */
    private array $wireFields = [];

    private ?ResponseMeta $responseMeta = null;

    /**
     * Reads a model from decoded JSON.
     *
     * @param array<string, mixed> $data
     */
    abstract public static function from(array $data, string $path = '$'): static;

    /** @return array<string, mixed> the fields as the API sent them (snake_case) */
    public function toArray(): array
    {
        return $this->wireFields;
    }

    /** @return array<string, mixed> */
    public function jsonSerialize(): array
    {
        return $this->wireFields;
    }

    /** Status, headers, request id and ETag of the answer this model came from; null for a nested model. */
    public function meta(): ?ResponseMeta
    {
        return $this->responseMeta;
    }

    /** @internal */
    public function withResponseMeta(ResponseMeta $meta): static
    {
        $this->responseMeta = $meta;

        return $this;
    }

    /**
     * @internal
     *
     * @param array<string, mixed> $data
     */
    protected function withWireFields(array $data): static
    {
        $this->wireFields = $data;

        return $this;
    }

    public function offsetExists(mixed $offset): bool
    {
        return \is_string($offset) && \array_key_exists($offset, $this->wireFields);
    }

    public function offsetGet(mixed $offset): mixed
    {
        return \is_string($offset) ? ($this->wireFields[$offset] ?? null) : null;
    }

    public function offsetSet(mixed $offset, mixed $value): never
    {
        throw new \LogicException(static::class . ' is immutable');
    }

    public function offsetUnset(mixed $offset): never
    {
        throw new \LogicException(static::class . ' is immutable');
    }
}
