<?php

declare(strict_types=1);

namespace Merx\Core;

use Merx\Exception\UnexpectedResponseError;

/**
 * @internal Conversions the generated models use to read decoded JSON into typed properties. Each
 * names the JSON path it failed at, so a server answer that breaks the contract says where.
 */
final class Hydrate
{
    /** @param array<string, mixed> $data */
    public static function field(array $data, string $key, string $path, bool $required): mixed
    {
        if (!\array_key_exists($key, $data)) {
            if ($required) {
                throw new UnexpectedResponseError("{$path}.{$key} is missing");
            }

            return null;
        }

        return $data[$key];
    }

    public static function string(mixed $value, string $path): string
    {
        return \is_string($value) ? $value : throw self::mismatch('a string', $value, $path);
    }

    public static function int(mixed $value, string $path): int
    {
        return \is_int($value) ? $value : throw self::mismatch('an integer', $value, $path);
    }

    public static function float(mixed $value, string $path): float
    {
        return \is_int($value) || \is_float($value) ? (float) $value : throw self::mismatch('a number', $value, $path);
    }

    public static function bool(mixed $value, string $path): bool
    {
        return \is_bool($value) ? $value : throw self::mismatch('a boolean', $value, $path);
    }

    /** @return array<mixed> */
    public static function array(mixed $value, string $path): array
    {
        return \is_array($value) ? $value : throw self::mismatch('an array or object', $value, $path);
    }

    /** @return array<string, mixed> */
    public static function object(mixed $value, string $path): array
    {
        if (!\is_array($value) || (array_is_list($value) && $value !== [])) {
            throw self::mismatch('an object', $value, $path);
        }

        /** @var array<string, mixed> $value */
        return $value;
    }

    /**
     * @template T
     *
     * @param callable(mixed, string): T $read
     *
     * @return list<T>
     */
    public static function list(mixed $value, string $path, callable $read): array
    {
        if (!\is_array($value) || !array_is_list($value)) {
            throw self::mismatch('an array', $value, $path);
        }
        $items = [];
        foreach ($value as $index => $item) {
            $items[] = $read($item, "{$path}[{$index}]");
        }

        return $items;
    }

    /**
     * @template T
     *
     * @param callable(mixed, string): T $read
     *
     * @return array<string, T>
     */
    public static function map(mixed $value, string $path, callable $read): array
    {
        $map = [];
        foreach (self::object($value, $path) as $key => $item) {
            $map[(string) $key] = $read($item, "{$path}.{$key}");
        }

        return $map;
    }

    /**
     * @template T of Model
     *
     * @param class-string<T> $class
     *
     * @return T
     */
    public static function model(mixed $value, string $path, string $class): Model
    {
        return $class::from(self::object($value, $path), $path);
    }

    /**
     * One of several models, chosen by the value of a discriminating property (`type`, `topic`...).
     *
     * @param array<string, class-string<Model>> $classes discriminator value => model class
     */
    public static function oneOf(mixed $value, string $path, string $discriminator, array $classes): Model
    {
        $data = self::object($value, $path);
        $tag = $data[$discriminator] ?? null;
        if (!\is_string($tag) || !isset($classes[$tag])) {
            throw new UnexpectedResponseError(\sprintf('%s.%s is %s, not one of %s', $path, $discriminator, json_encode($tag), implode(', ', array_keys($classes))));
        }

        return $classes[$tag]::from($data, $path);
    }

    /**
     * @template T
     *
     * @param callable(mixed, string): T $read
     *
     * @return T|null
     */
    public static function nullable(mixed $value, string $path, callable $read): mixed
    {
        return $value === null ? null : $read($value, $path);
    }

    private static function mismatch(string $expected, mixed $value, string $path): UnexpectedResponseError
    {
        return new UnexpectedResponseError(\sprintf('%s should be %s, got %s', $path, $expected, get_debug_type($value)));
    }
}
