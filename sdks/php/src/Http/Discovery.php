<?php

declare(strict_types=1);

namespace Merx\Http;

use Merx\Exception\ConfigurationError;
use Psr\Http\Client\ClientInterface;
use Psr\Http\Message\RequestFactoryInterface;
use Psr\Http\Message\ResponseFactoryInterface;
use Psr\Http\Message\StreamFactoryInterface;

/**
 * @internal Finds an installed PSR-18 client and PSR-17 factories when the caller gives none:
 * Symfony HttpClient, then Guzzle, then the SDK's cURL client; Nyholm's or Guzzle's factories.
 */
final class Discovery
{
    private const FACTORIES = ['Nyholm\Psr7\Factory\Psr17Factory', 'GuzzleHttp\Psr7\HttpFactory'];

    public static function factory(): RequestFactoryInterface&ResponseFactoryInterface&StreamFactoryInterface
    {
        foreach (self::FACTORIES as $class) {
            if (class_exists($class)) {
                $factory = new $class();
                if ($factory instanceof RequestFactoryInterface && $factory instanceof ResponseFactoryInterface && $factory instanceof StreamFactoryInterface) {
                    return $factory;
                }
            }
        }
        throw new ConfigurationError('No PSR-17 factories found: install nyholm/psr7 or guzzlehttp/psr7, or pass requestFactory and streamFactory');
    }

    public static function client(float $timeout): ClientInterface
    {
        if (class_exists('Symfony\Component\HttpClient\HttpClient') && class_exists('Symfony\Component\HttpClient\Psr18Client')) {
            return new SymfonyClient(timeout: $timeout);
        }
        if (class_exists('GuzzleHttp\Client')) {
            $guzzle = new \GuzzleHttp\Client(['timeout' => $timeout, 'http_errors' => false, 'allow_redirects' => false]);
            if ($guzzle instanceof ClientInterface) {
                return $guzzle;
            }
        }
        if (\extension_loaded('curl')) {
            $factory = self::factory();

            return new CurlClient($factory, $factory, $timeout);
        }
        throw new ConfigurationError('No PSR-18 client found: install symfony/http-client or guzzlehttp/guzzle, enable ext-curl, or pass httpClient');
    }
}
