<?php

declare(strict_types=1);

namespace Merx\Core;

/**
 * RFC 8785 (JCS) canonical JSON, byte for byte what the server signs: members sorted by UTF-16
 * code units, no whitespace, numbers and strings serialised as ECMAScript does. Input is what
 * `json_decode($json, false)` returns (objects as stdClass, so `{}` and `[]` stay apart).
 */
final class CanonicalJson
{
    public static function encode(mixed $value): string
    {
        return match (true) {
            $value === null => 'null',
            \is_bool($value) => $value ? 'true' : 'false',
            \is_int($value) => (string) $value,
            \is_float($value) => self::number($value),
            \is_string($value) => json_encode($value, \JSON_THROW_ON_ERROR | \JSON_UNESCAPED_SLASHES | \JSON_UNESCAPED_UNICODE | \JSON_UNESCAPED_LINE_TERMINATORS),
            \is_array($value) && array_is_list($value) => '[' . implode(',', array_map(self::encode(...), $value)) . ']',
            \is_array($value), $value instanceof \stdClass => self::object((array) $value),
            default => throw new \InvalidArgumentException('JCS cannot represent ' . get_debug_type($value)),
        };
    }

    /** @param array<int|string, mixed> $members */
    private static function object(array $members): string
    {
        $keys = array_map('strval', array_keys($members));
        usort($keys, static fn (string $a, string $b): int => strcmp(self::utf16($a), self::utf16($b)));
        $encoded = array_map(static fn (string $key): string => self::encode($key) . ':' . self::encode($members[$key]), $keys);

        return '{' . implode(',', $encoded) . '}';
    }

    /** ECMAScript's Number::toString: the shortest digits that round-trip, placed by its rules. */
    private static function number(float $value): string
    {
        if (!is_finite($value)) {
            throw new \InvalidArgumentException('JCS cannot represent a non-finite number');
        }
        if ($value == 0.0) {
            return '0';
        }
        $previous = ini_set('serialize_precision', '-1');
        $shortest = var_export(abs($value), true);
        if ($previous !== false) {
            ini_set('serialize_precision', $previous);
        }
        // Split PHP's shortest form ("333333333.3333333", "1.0E+30", "1.0E-7") into digits and a decimal point position.
        preg_match('/^(\d+)(?:\.(\d+))?(?:E([+-]\d+))?$/i', $shortest, $parts);
        $digits = $parts[1] . ($parts[2] ?? '');
        $point = \strlen($parts[1]) + (int) ($parts[3] ?? 0);
        $trimmed = ltrim($digits, '0');
        $point -= \strlen($digits) - \strlen($trimmed);
        $digits = rtrim($trimmed, '0');
        $k = \strlen($digits);
        $sign = $value < 0 ? '-' : '';
        if ($k <= $point && $point <= 21) {
            return $sign . $digits . str_repeat('0', $point - $k);
        }
        if (0 < $point && $point <= 21) {
            return $sign . substr($digits, 0, $point) . '.' . substr($digits, $point);
        }
        if (-6 < $point && $point <= 0) {
            return $sign . '0.' . str_repeat('0', -$point) . $digits;
        }
        $exponent = $point - 1;
        $mantissa = $k === 1 ? $digits : $digits[0] . '.' . substr($digits, 1);

        return $sign . $mantissa . 'e' . ($exponent < 0 ? '-' : '+') . abs($exponent);
    }

    /** UTF-16BE bytes of a UTF-8 string: comparing them compares code units, as JCS sorts. */
    private static function utf16(string $text): string
    {
        $units = '';
        $length = \strlen($text);
        for ($i = 0; $i < $length;) {
            $byte = \ord($text[$i]);
            [$size, $bits] = match (true) {
                $byte < 0x80 => [1, $byte],
                $byte < 0xE0 => [2, $byte & 0x1F],
                $byte < 0xF0 => [3, $byte & 0x0F],
                default => [4, $byte & 0x07],
            };
            for ($j = 1; $j < $size; ++$j) {
                $bits = ($bits << 6) | (\ord($text[$i + $j] ?? "\x80") & 0x3F);
            }
            $i += $size;
            $units .= $bits >= 0x10000
                ? pack('nn', 0xD800 | (($bits - 0x10000) >> 10), 0xDC00 | (($bits - 0x10000) & 0x3FF))
                : pack('n', $bits);
        }

        return $units;
    }
}
