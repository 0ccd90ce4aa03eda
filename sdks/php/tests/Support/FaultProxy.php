<?php

declare(strict_types=1);

namespace Merx\Tests\Support;

/** Drives fault-proxy.mjs over its control endpoints, with PHP's own HTTP stream (not the SDK under test). */
final class FaultProxy
{
    /**
     * Faults for the next matching requests, in order; see fault-proxy.mjs for the actions.
     *
     * @param list<array<string, mixed>> $rules
     */
    public static function inject(array $rules): void
    {
        self::control('POST', '/__proxy/faults', $rules);
    }

    public static function reset(): void
    {
        self::control('DELETE', '/__proxy/faults');
        self::control('DELETE', '/__proxy/log');
    }

    /** @return list<array{method: string, path: string, headers: array<string, string>, body: string, fault: ?string, status: ?int}> */
    public static function log(): array
    {
        return self::control('GET', '/__proxy/log');
    }

    /** @return list<array{method: string, path: string, headers: array<string, string>, body: string, fault: ?string, status: ?int}> */
    public static function requestsTo(string $method, string $pathPrefix): array
    {
        return array_values(array_filter(self::log(), static fn (array $entry): bool => $entry['method'] === $method && str_starts_with($entry['path'], $pathPrefix)));
    }

    /** @param list<array<string, mixed>>|null $body */
    private static function control(string $method, string $path, ?array $body = null): mixed
    {
        $context = stream_context_create(['http' => [
            'method' => $method,
            'header' => "Content-Type: application/json\r\n",
            'content' => $body === null ? '' : json_encode($body, \JSON_THROW_ON_ERROR),
            'ignore_errors' => true,
        ]]);
        $answer = file_get_contents(Stack::get()->proxyUrl . $path, false, $context);
        if ($answer === false) {
            throw new \RuntimeException("fault proxy {$method} {$path} failed");
        }

        return json_decode($answer, true, 512, \JSON_THROW_ON_ERROR);
    }
}
