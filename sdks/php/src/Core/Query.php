<?php

declare(strict_types=1);

namespace Merx\Core;

use Merx\Exception\ConfigurationError;

/** @internal Query strings the API reads: booleans as true/false, lists as repeated names, nulls left out. */
final class Query
{
    /** @param array<string, mixed> $params */
    public static function encode(array $params): string
    {
        $pairs = [];
        foreach ($params as $name => $value) {
            foreach (\is_array($value) ? $value : [$value] as $item) {
                if ($item === null) {
                    continue;
                }
                $text = \is_bool($item) ? ($item ? 'true' : 'false') : (string) $item;
                $pairs[] = rawurlencode((string) $name) . '=' . rawurlencode($text);
            }
        }

        return $pairs === [] ? '' : '?' . implode('&', $pairs);
    }

    /** A path template (`/api/v1/products/{id}`) with its parameters filled in and escaped. */
    public static function path(string $template, string ...$params): string
    {
        return preg_replace_callback('/\{(\w+)\}/', static function (array $match) use ($params): string {
            if (!\array_key_exists($match[1], $params) || $params[$match[1]] === '') {
                throw new ConfigurationError("the path parameter {$match[1]} must be a non-empty string");
            }

            return rawurlencode($params[$match[1]]);
        }, $template) ?? $template;
    }
}
