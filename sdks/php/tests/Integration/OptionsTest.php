<?php

declare(strict_types=1);

namespace Merx\Tests\Integration;

use Merx\Core\RequestOptions;
use Merx\Exception\ConfigurationError;
use Merx\Merx;
use Merx\Tests\Support\FaultProxy;
use Merx\Tests\Support\IntegrationTestCase;
use Symfony\Component\HttpClient\Psr18Client;

/** Construction, per-request options, telemetry. */
final class OptionsTest extends IntegrationTestCase
{
    public function testHeadersUserAgentAndOptionsObject(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key'], viaProxy: true, defaultHeaders: ['X-Shop' => 'acme']);

        $merx->products->list([], ['headers' => ['X-Trace' => 'abc']]);
        $merx->products->list([], new RequestOptions(headers: ['X-Trace' => 'def']));

        $gets = FaultProxy::requestsTo('GET', '/api/v1/products');
        self::assertSame(['abc', 'def'], array_column(array_column($gets, 'headers'), 'x-trace'));
        foreach (FaultProxy::log() as $entry) {
            self::assertSame('acme', $entry['headers']['x-shop']);
            self::assertMatchesRegularExpression('#^merx-php/\d+\.\d+\.\d+ php/8\.\d+\.\d+#', $entry['headers']['user-agent']);
            self::assertSame('application/json', $entry['headers']['accept']);
        }
    }

    public function testUnknownOptionsAreRefusedBeforeAnyRequest(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key'], viaProxy: true);
        try {
            $merx->products->list([], ['idempotencyKey' => 'typo']);
            self::fail('expected a ConfigurationError');
        } catch (ConfigurationError $e) {
            self::assertStringContainsString('idempotencyKey', $e->getMessage());
        }
        self::assertSame([], FaultProxy::log());
    }

    public function testAnEmptyIdIsRefusedBeforeAnyRequest(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key'], viaProxy: true);

        try {
            $merx->products->retrieve('');
            self::fail('an empty id would have listed products instead');
        } catch (ConfigurationError $e) {
            self::assertStringContainsString('id', $e->getMessage());
        }
        self::assertSame([], FaultProxy::log());
        self::assertSame('/api/v1/products/a%2Fb', (string) parse_url('http://x' . \Merx\Core\Query::path('/api/v1/products/{id}', id: 'a/b'), \PHP_URL_PATH), 'ids are escaped');
    }

    public function testTheKeyAndBaseUrlComeFromTheEnvironmentWhenNotGiven(): void
    {
        $key = $this->newMerchant()['api_key'];
        putenv("MERX_API_KEY={$key}");
        putenv("MERX_BASE_URL={$this->stack->proxyUrl}");
        try {
            $merx = new Merx(httpClient: self::httpClient(), requestFactory: self::factory(), streamFactory: self::factory());
            self::assertSame([], $merx->products->list()->data);
            self::assertCount(1, FaultProxy::requestsTo('GET', '/api/v1/products'), 'MERX_BASE_URL was used');
        } finally {
            putenv('MERX_API_KEY');
            putenv('MERX_BASE_URL');
        }
    }

    public function testAMissingOrMalformedKeyIsAConfigurationError(): void
    {
        putenv('MERX_API_KEY');
        try {
            new Merx(baseUrl: $this->stack->baseUrl);
            self::fail('no key must be refused');
        } catch (ConfigurationError $e) {
            self::assertStringContainsString('MERX_API_KEY', $e->getMessage());
        }
        $this->expectException(ConfigurationError::class);
        new Merx(apiKey: 'sk_live_not_a_merx_key', baseUrl: $this->stack->baseUrl);
    }

    public function testAnyPsr18ClientWorksAndOneIsFoundWhenNoneIsGiven(): void
    {
        $key = $this->newMerchant()['api_key'];
        $plain = new Merx(apiKey: $key, baseUrl: $this->stack->baseUrl, httpClient: new Psr18Client());
        $created = $plain->products->create(['sku' => self::sku(), 'title' => 'plain Psr18Client', 'price' => '1.00', 'currency' => 'USD']);

        $discovered = new Merx(apiKey: $key, baseUrl: $this->stack->baseUrl);

        self::assertSame($created->id, $discovered->products->retrieve($created->id)->id);
    }

    public function testDebugLoggingNamesEachRequestAndNoSecret(): void
    {
        $key = $this->newMerchant()['api_key'];
        $logFile = tempnam(sys_get_temp_dir(), 'merx-log');
        $previousLog = ini_set('error_log', $logFile);
        putenv('MERX_LOG=debug');
        try {
            $merx = $this->merx($key);
            $product = $merx->products->create(['sku' => self::sku(), 'title' => 'logged', 'price' => '1.00', 'currency' => 'USD']);
        } finally {
            putenv('MERX_LOG');
            ini_set('error_log', (string) $previousLog);
        }
        $log = (string) file_get_contents($logFile);
        unlink($logFile);

        self::assertMatchesRegularExpression('#\[merx\] POST /oauth/token 200 \d+ms request_id=req_#', $log);
        self::assertStringContainsString('[merx] POST /api/v1/products 201 ', $log);
        self::assertStringContainsString('request_id=' . $product->meta()?->requestId(), $log);
        self::assertStringNotContainsString($key, $log);
        self::assertStringNotContainsString('Bearer', $log);
        self::assertStringNotContainsString('eyJ', $log, 'no access token');
    }
}
