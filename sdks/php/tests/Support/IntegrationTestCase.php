<?php

declare(strict_types=1);

namespace Merx\Tests\Support;

use GuzzleHttp\Psr7\HttpFactory;
use Merx\Http\CurlClient;
use Merx\Http\SymfonyClient;
use Merx\Merx;
use Merx\Operator;
use Nyholm\Psr7\Factory\Psr17Factory;
use PHPUnit\Framework\TestCase;
use Psr\Http\Client\ClientInterface;
use Psr\Http\Message\RequestFactoryInterface;
use Psr\Http\Message\StreamFactoryInterface;

/**
 * Base of the tests that talk to the real Merx. Each run of the suite picks one PSR-18 client
 * (MERX_TEST_HTTP_CLIENT): `symfony`, Symfony's Psr18Client over its HttpClient with Nyholm's
 * PSR-7, or `curl`, the SDK's client over ext-curl with Guzzle's PSR-7. Each test makes its own merchant.
 */
abstract class IntegrationTestCase extends TestCase
{
    protected Stack $stack;

    protected function setUp(): void
    {
        $this->stack = Stack::get();
        FaultProxy::reset();
    }

    protected function tearDown(): void
    {
        FaultProxy::reset();
    }

    public static function clientName(): string
    {
        $name = getenv('MERX_TEST_HTTP_CLIENT');

        return \is_string($name) && $name !== '' ? $name : 'symfony';
    }

    protected static function factory(): RequestFactoryInterface&StreamFactoryInterface
    {
        return self::clientName() === 'curl' ? new HttpFactory() : new Psr17Factory();
    }

    protected static function httpClient(): ClientInterface
    {
        return match (self::clientName()) {
            'symfony' => new SymfonyClient(),
            'curl' => new CurlClient(new HttpFactory(), new HttpFactory()),
            default => throw new \LogicException('MERX_TEST_HTTP_CLIENT is symfony or curl'),
        };
    }

    /** A client of the merchant with this key, straight to the server or through the fault proxy. */
    protected function merx(string $apiKey, bool $viaProxy = false, mixed ...$options): Merx
    {
        return new Merx(
            ...[
                'apiKey' => $apiKey,
                'baseUrl' => $viaProxy ? $this->stack->proxyUrl : $this->stack->baseUrl,
                'httpClient' => self::httpClient(),
                'requestFactory' => self::factory(),
                'streamFactory' => self::factory(),
            ] + $options,
        );
    }

    protected function operator(): Operator
    {
        return new Operator(operatorToken: $this->stack->operatorToken, baseUrl: $this->stack->baseUrl, httpClient: self::httpClient(), requestFactory: self::factory(), streamFactory: self::factory());
    }

    /** @return array{merchant_id: string, api_key: string} a new sandbox merchant and its first API key */
    protected function newMerchant(): array
    {
        $provisioned = $this->operator()->merchants->create([
            'name' => 'PHP SDK test ' . bin2hex(random_bytes(3)),
            'owner' => ['email' => 'owner-' . bin2hex(random_bytes(6)) . '@php-sdk.test'],
        ]);

        return ['merchant_id' => $provisioned->merchant->id, 'api_key' => $provisioned->apiKey->secret];
    }

    protected static function sku(string $prefix = 'PHP'): string
    {
        return $prefix . '-' . strtoupper(bin2hex(random_bytes(4)));
    }
}
