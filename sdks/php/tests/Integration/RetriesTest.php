<?php

declare(strict_types=1);

namespace Merx\Tests\Integration;

use Merx\Exception\InternalServerError;
use Merx\Exception\UnprocessableEntityError;
use Merx\Merx;
use Merx\Tests\Support\FaultProxy;
use Merx\Tests\Support\IntegrationTestCase;

/** Retries through the fault proxy in front of the real server: what is retried, how long it waits, and that a create never happens twice. */
final class RetriesTest extends IntegrationTestCase
{
    private const UUID_V4 = '/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/';

    private function client(mixed ...$options): Merx
    {
        $merx = $this->merx($this->newMerchant()['api_key'], true, ...$options);
        $merx->merchant->retrieve(); // the token first, so faults meet only the calls under test
        FaultProxy::reset();

        return $merx;
    }

    public function testACreateWhoseAnswerWasLostIsRetriedWithTheSameKeyAndHappensOnce(): void
    {
        $merx = $this->client();
        $sku = self::sku();
        FaultProxy::inject([['method' => 'POST', 'path' => '/api/v1/products', 'action' => 'drop_after']]);

        $product = $merx->products->create(['sku' => $sku, 'title' => 'Once', 'price' => '3.00', 'currency' => 'USD']);

        $posts = FaultProxy::requestsTo('POST', '/api/v1/products');
        self::assertCount(2, $posts);
        self::assertSame('drop_after', $posts[0]['fault']);
        self::assertSame(201, $posts[0]['status'], 'the first attempt reached the server and created the product');
        self::assertMatchesRegularExpression(self::UUID_V4, $posts[0]['headers']['idempotency-key']);
        self::assertSame($posts[0]['headers']['idempotency-key'], $posts[1]['headers']['idempotency-key']);
        self::assertTrue($product->meta()?->idempotentReplayed(), 'the retry got the stored answer of the first');
        $withSku = iterator_to_array($merx->products->list(['sku' => $sku]), false);
        self::assertCount(1, $withSku);
        self::assertSame($product->id, $withSku[0]->id);
    }

    public function testAConnectionDroppedBeforeTheServerIsRetried(): void
    {
        $merx = $this->client();
        FaultProxy::inject([['method' => 'GET', 'path' => '/api/v1/products', 'action' => 'drop_before']]);

        self::assertSame([], $merx->products->list()->data);
        self::assertCount(2, FaultProxy::requestsTo('GET', '/api/v1/products'));
    }

    public function testServiceUnavailableIsRetriedHonouringRetryAfter(): void
    {
        $merx = $this->client();
        FaultProxy::inject([['method' => 'GET', 'path' => '/api/v1/products', 'action' => 'status', 'status' => 503, 'times' => 2, 'headers' => ['Retry-After' => '1']]]);

        $started = microtime(true);
        $merx->products->list();
        $elapsed = microtime(true) - $started;

        self::assertCount(3, FaultProxy::requestsTo('GET', '/api/v1/products'));
        self::assertGreaterThanOrEqual(2.0, $elapsed, 'two waits of Retry-After: 1');
        self::assertLessThan(4.0, $elapsed);
    }

    public function testTooManyRequestsIsRetriedAfterRetryAfter(): void
    {
        $merx = $this->client();
        FaultProxy::inject([['method' => 'POST', 'path' => '/api/v1/products', 'action' => 'status', 'status' => 429, 'headers' => ['Retry-After' => '1'], 'body' => ['code' => 'rate_limited', 'status' => 429, 'throttle_class' => 'writes', 'retry_after' => 1]]]);

        $started = microtime(true);
        $merx->products->create(['sku' => self::sku(), 'title' => 'x', 'price' => '1.00', 'currency' => 'USD']);

        self::assertGreaterThanOrEqual(1.0, microtime(true) - $started);
        $posts = FaultProxy::requestsTo('POST', '/api/v1/products');
        self::assertCount(2, $posts);
        self::assertSame($posts[0]['headers']['idempotency-key'], $posts[1]['headers']['idempotency-key']);
    }

    public function testWithoutRetryAfterTheBackoffIsExponentialWithJitter(): void
    {
        $merx = $this->client();
        FaultProxy::inject([['method' => 'GET', 'path' => '/api/v1/products', 'action' => 'status', 'status' => 500, 'times' => 2]]);

        $started = microtime(true);
        $merx->products->list();
        $elapsed = microtime(true) - $started;

        // 0.5 s then 1 s, each less up to a quarter of jitter: at least 1.125 s, at most 1.5 s plus the calls.
        self::assertGreaterThanOrEqual(1.125, $elapsed);
        self::assertLessThan(2.5, $elapsed);
        self::assertCount(3, FaultProxy::requestsTo('GET', '/api/v1/products'));
    }

    public function testAnIdempotencyKeyInUseIsRetried(): void
    {
        $merx = $this->client();
        FaultProxy::inject([['method' => 'POST', 'path' => '/api/v1/products', 'action' => 'status', 'status' => 409, 'headers' => ['Retry-After' => '0'], 'body' => ['code' => 'idempotency_key_in_use', 'status' => 409]]]);

        $product = $merx->products->create(['sku' => self::sku(), 'title' => 'x', 'price' => '1.00', 'currency' => 'USD'], ['idempotency_key' => 'php-sdk-' . bin2hex(random_bytes(8))]);

        $posts = FaultProxy::requestsTo('POST', '/api/v1/products');
        self::assertCount(2, $posts);
        self::assertStringStartsWith('php-sdk-', $posts[1]['headers']['idempotency-key'], 'a given key is used as it is');
        self::assertSame($product->id, $merx->products->retrieve($product->id)->id);
    }

    public function testClientErrorsAreNotRetried(): void
    {
        $merx = $this->client();
        try {
            $merx->products->create(['sku' => self::sku(), 'title' => 'x', 'price' => 'free', 'currency' => 'USD']);
            self::fail('expected a 422');
        } catch (UnprocessableEntityError) {
        }
        self::assertCount(1, FaultProxy::requestsTo('POST', '/api/v1/products'));
    }

    public function testMaxRetriesPerClientAndPerRequest(): void
    {
        $merx = $this->client(maxRetries: 0);
        $rule = ['method' => 'GET', 'path' => '/api/v1/products', 'action' => 'status', 'status' => 502, 'times' => 5, 'headers' => ['Retry-After' => '0']];
        FaultProxy::inject([$rule]);
        try {
            $merx->products->list();
            self::fail('expected a 502');
        } catch (InternalServerError) {
        }
        self::assertCount(1, FaultProxy::requestsTo('GET', '/api/v1/products'));

        FaultProxy::reset();
        FaultProxy::inject([$rule]);
        try {
            $merx->products->list([], ['max_retries' => 3]);
            self::fail('expected a 502');
        } catch (InternalServerError $e) {
            self::assertSame(502, $e->status);
        }
        self::assertCount(4, FaultProxy::requestsTo('GET', '/api/v1/products'));
    }

    public function testOnlyPostsGetAnAutomaticIdempotencyKey(): void
    {
        $merx = $this->client();
        $product = $merx->products->create(['sku' => self::sku(), 'title' => 'x', 'price' => '1.00', 'currency' => 'USD']);
        $merx->products->update($product->id, ['title' => 'y']);
        $merx->products->retrieve($product->id);
        $merx->products->delete($product->id);

        $keys = [];
        foreach (FaultProxy::log() as $entry) {
            $keys[$entry['method']] = $entry['headers']['idempotency-key'] ?? null;
        }
        self::assertMatchesRegularExpression(self::UUID_V4, (string) $keys['POST']);
        self::assertNull($keys['PATCH']);
        self::assertNull($keys['GET']);
        self::assertNull($keys['DELETE']);
    }
}
