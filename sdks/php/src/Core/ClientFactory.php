<?php

declare(strict_types=1);

namespace Merx\Core;

use Merx\Exception\ConfigurationError;
use Merx\Http\Discovery;
use Psr\Http\Client\ClientInterface;
use Psr\Http\Message\RequestFactoryInterface;
use Psr\Http\Message\StreamFactoryInterface;

/** @internal What Merx and Operator share when they are built: settings, environment fallbacks, discovery. */
final class ClientFactory
{
    public const DEFAULT_BASE_URL = 'http://localhost:8080';

    public static function env(string $name): ?string
    {
        $value = getenv($name);

        return \is_string($value) && $value !== '' ? $value : null;
    }

    public static function baseUrl(?string $baseUrl): string
    {
        $url = rtrim($baseUrl ?? self::env('MERX_BASE_URL') ?? self::DEFAULT_BASE_URL, '/');
        if (!preg_match('#^https?://[^/]+#', $url)) {
            throw new ConfigurationError("baseUrl must be an http(s) URL, got \"{$url}\"");
        }

        return $url;
    }

    /**
     * @param array<string, string> $defaultHeaders
     */
    public static function requestor(
        string $baseUrl,
        Credentials $credentials,
        float $timeout,
        int $maxRetries,
        array $defaultHeaders,
        ?ClientInterface $httpClient,
        ?RequestFactoryInterface $requestFactory,
        ?StreamFactoryInterface $streamFactory,
    ): Requestor {
        if ($timeout <= 0) {
            throw new ConfigurationError('timeout must be a positive number of seconds');
        }
        if ($maxRetries < 0) {
            throw new ConfigurationError('maxRetries must be 0 or more');
        }
        if ($requestFactory === null || $streamFactory === null) {
            // A client that is also a factory (Symfony's Psr18Client is) serves as one.
            $factory = $httpClient instanceof RequestFactoryInterface && $httpClient instanceof StreamFactoryInterface ? $httpClient : Discovery::factory();
            $requestFactory ??= $factory;
            $streamFactory ??= $factory;
        }

        return new Requestor(
            $baseUrl,
            $credentials,
            $httpClient ?? Discovery::client($timeout),
            $requestFactory,
            $streamFactory,
            $timeout,
            $maxRetries,
            $defaultHeaders,
            \sprintf('merx-php/%s php/%s', \Merx\Merx::VERSION, \PHP_VERSION),
            strtolower(self::env('MERX_LOG') ?? '') === 'debug',
        );
    }
}
