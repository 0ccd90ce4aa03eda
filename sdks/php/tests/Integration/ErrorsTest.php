<?php

declare(strict_types=1);

namespace Merx\Tests\Integration;

use Merx\Exception\AuthenticationError;
use Merx\Exception\BadRequestError;
use Merx\Exception\ConflictError;
use Merx\Exception\ConnectionError;
use Merx\Exception\ExceptionInterface;
use Merx\Exception\InternalServerError;
use Merx\Exception\MerxError;
use Merx\Exception\NotFoundError;
use Merx\Exception\PermissionDeniedError;
use Merx\Exception\RateLimitError;
use Merx\Exception\TimeoutError;
use Merx\Exception\UnprocessableEntityError;
use Merx\Merx;
use Merx\Tests\Support\FaultProxy;
use Merx\Tests\Support\IntegrationTestCase;
use Merx\Tests\Support\Processes;

/** Every error class, each from a real answer of the server where the server can give it. */
final class ErrorsTest extends IntegrationTestCase
{
    public function testNotFoundCarriesTheWholeProblemDocument(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key']);
        try {
            $merx->products->retrieve('prod_00000000000000000000000000');
            self::fail('expected a 404');
        } catch (NotFoundError $e) {
            self::assertInstanceOf(MerxError::class, $e);
            self::assertInstanceOf(ExceptionInterface::class, $e);
            self::assertSame(404, $e->status);
            self::assertSame(404, $e->getCode());
            self::assertSame('not_found', $e->errorCode);
            self::assertSame('Not found', $e->title);
            self::assertStringContainsString('prod_00000000000000000000000000', (string) $e->detail);
            self::assertMatchesRegularExpression('/^req_[0-9a-z]{26}$/', (string) $e->requestId);
            self::assertSame($e->requestId, $e->problem['request_id']);
            self::assertSame('https://merx.dev/errors/not_found', $e->problem['type']);
            self::assertStringContainsString((string) $e->requestId, $e->getMessage());
        }
    }

    public function testBadRequest(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key']);
        try {
            $merx->oauth->token(['grant_type' => 'password']);
            self::fail('expected a 400');
        } catch (BadRequestError $e) {
            self::assertSame(400, $e->status);
            self::assertSame('invalid_request', $e->errorCode, 'the token endpoint answers in OAuth\'s shape: {error, error_description}');
            self::assertNotNull($e->detail);
        }
    }

    public function testAWrongKeyIsAnAuthenticationError(): void
    {
        ['api_key' => $key] = $this->newMerchant();
        $merx = $this->merx(substr($key, 0, -4) . 'XXXX');

        $this->expectException(AuthenticationError::class);
        $this->expectExceptionMessage('invalid_client');
        $merx->products->list();
    }

    public function testAMissingScopeIsPermissionDenied(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key']);
        $readOnly = $merx->apiKeys->create(['name' => 'read only', 'scopes' => ['products:read']]);
        $reader = $this->merx($readOnly->secret);

        self::assertSame([], $reader->products->list()->data);
        try {
            $reader->products->create(['sku' => self::sku(), 'title' => 'x', 'price' => '1.00', 'currency' => 'USD']);
            self::fail('expected a 403');
        } catch (PermissionDeniedError $e) {
            self::assertSame('insufficient_scope', $e->errorCode);
            self::assertSame('products:write', $e->problem['required_scope']);
        }
    }

    public function testADuplicateSkuIsAConflict(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key']);
        $sku = self::sku();
        $merx->products->create(['sku' => $sku, 'title' => 'first', 'price' => '1.00', 'currency' => 'USD']);

        $this->expectException(ConflictError::class);
        $merx->products->create(['sku' => $sku, 'title' => 'second', 'price' => '1.00', 'currency' => 'USD']);
    }

    public function testValidationErrorsNameEveryField(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key']);
        try {
            // Two structural problems, both named in one 422 (the money rule comes once the structure holds).
            $merx->products->create(['sku' => 'bad sku!', 'title' => 'x', 'price' => '19.9.9', 'currency' => 'USD']);
            self::fail('expected a 422');
        } catch (UnprocessableEntityError $e) {
            self::assertSame('validation_failed', $e->errorCode);
            $fields = array_column($e->errors(), 'field');
            sort($fields);
            self::assertSame(['price', 'sku'], $fields);
            foreach ($e->errors() as $error) {
                self::assertNotSame('', $error['code']);
                self::assertNotSame('', $error['message']);
            }
        }
    }

    public function testARealThrottleIsARateLimitErrorWithItsClassAndWait(): void
    {
        ['merchant_id' => $merchantId, 'api_key' => $key] = $this->newMerchant();
        $this->operator()->merchants->throttle->update($merchantId, ['sustained' => ['limit' => 3, 'window_seconds' => 3600]]);
        $merx = $this->merx($key, maxRetries: 0);

        // The override reaches the gateway through the bus within moments: call until it bites.
        $error = Processes::eventually(static function () use ($merx): ?RateLimitError {
            try {
                $merx->products->list(['limit' => 1]);

                return null;
            } catch (RateLimitError $e) {
                return $e;
            }
        }, 15, 'a 429 once the override applies');

        self::assertSame(429, $error->status);
        self::assertSame('rate_limited', $error->errorCode);
        self::assertSame('sustained', $error->throttleClass());
        self::assertGreaterThan(0, $error->retryAfter());
        self::assertSame((string) $error->retryAfter(), $error->headers['retry-after'][0]);
    }

    public function testAServerErrorIsAnInternalServerErrorOnceRetriesAreSpent(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key'], viaProxy: true, maxRetries: 0);
        $merx->merchant->retrieve(); // the token first, so the fault meets the call under test
        FaultProxy::inject([['method' => 'GET', 'path' => '/api/v1/products', 'action' => 'status', 'status' => 503, 'body' => ['type' => 'https://merx.dev/errors/unavailable', 'title' => 'Unavailable', 'status' => 503, 'code' => 'unavailable', 'detail' => 'try again']]]);

        try {
            $merx->products->list();
            self::fail('expected a 503');
        } catch (InternalServerError $e) {
            self::assertSame(503, $e->status);
            self::assertSame('unavailable', $e->errorCode);
        }
        self::assertCount(1, FaultProxy::requestsTo('GET', '/api/v1/products'));
    }

    public function testNoServerIsAConnectionError(): void
    {
        $merx = new Merx(apiKey: $this->newMerchant()['api_key'], baseUrl: 'http://127.0.0.1:' . Processes::freePort(), maxRetries: 0, httpClient: self::httpClient(), requestFactory: self::factory(), streamFactory: self::factory());
        try {
            $merx->products->list();
            self::fail('expected a connection error');
        } catch (ConnectionError $e) {
            self::assertNotInstanceOf(TimeoutError::class, $e);
            self::assertNull($e->status);
            self::assertInstanceOf(MerxError::class, $e);
        }
    }

    public function testAPerRequestTimeoutIsATimeoutError(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key'], viaProxy: true, maxRetries: 0);
        $merx->merchant->retrieve();
        FaultProxy::inject([['method' => 'GET', 'path' => '/api/v1/products', 'action' => 'delay', 'delay_ms' => 4000]]);

        $started = microtime(true);
        try {
            $merx->products->list([], ['timeout' => 0.5]);
            self::fail('expected a timeout');
        } catch (TimeoutError $e) {
            self::assertInstanceOf(ConnectionError::class, $e);
            self::assertLessThan(3.0, microtime(true) - $started, 'the call gave up after its own timeout, not the server\'s delay');
        }
    }
}
