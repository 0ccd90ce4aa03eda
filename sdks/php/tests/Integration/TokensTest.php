<?php

declare(strict_types=1);

namespace Merx\Tests\Integration;

use Merx\Exception\AuthenticationError;
use Merx\Tests\Support\FaultProxy;
use Merx\Tests\Support\IntegrationTestCase;
use Merx\Tests\Support\Processes;
use Merx\Tests\Support\Stack;

/** Tokens: exchanged once, cached, refreshed before expiry and once after a 401; the key goes nowhere else. */
final class TokensTest extends IntegrationTestCase
{
    public function testTheKeyIsExchangedOnceAndSentOnlyToTheTokenEndpoint(): void
    {
        $key = $this->newMerchant()['api_key'];
        $merx = $this->merx($key, viaProxy: true);

        $product = $merx->products->create(['sku' => self::sku(), 'title' => 'x', 'price' => '1.00', 'currency' => 'USD']);
        $merx->products->retrieve($product->id);
        $merx->products->list();

        $log = FaultProxy::log();
        self::assertCount(4, $log);
        self::assertSame(['POST', '/oauth/token'], [$log[0]['method'], $log[0]['path']]);
        $clientId = implode('_', \array_slice(explode('_', $key), 0, 3));
        self::assertSame('Basic ' . base64_encode("{$clientId}:{$key}"), $log[0]['headers']['authorization']);
        self::assertSame('grant_type=client_credentials', $log[0]['body']);
        $tokens = [];
        foreach (\array_slice($log, 1) as $entry) {
            self::assertStringStartsWith('Bearer ey', $entry['headers']['authorization']);
            self::assertStringNotContainsString($key, json_encode($entry, \JSON_THROW_ON_ERROR | \JSON_UNESCAPED_SLASHES));
            $tokens[] = $entry['headers']['authorization'];
        }
        self::assertCount(1, array_unique($tokens), 'one token serves every call while it is fresh');
    }

    public function testATokenIsRefreshedBeforeItExpiresAndAfterItExpired(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key'], viaProxy: true);
        $ttl = (int) Stack::SERVER_ENV['MERX_ACCESS_TOKEN_TTL'];

        $merx->products->list();
        $exchanged = microtime(true);
        // Refresh comes a minute before expiry, or at half the lifetime when that is shorter (3 s of 6 here).
        Processes::eventually(static fn (): bool => microtime(true) - $exchanged > $ttl / 2 + 0.2, $ttl, 'half the token lifetime passing');
        $merx->products->list();
        self::assertCount(2, FaultProxy::requestsTo('POST', '/oauth/token'), 'a new token before the old one expired');

        Processes::eventually(static fn (): bool => microtime(true) - $exchanged > 2 * $ttl + 0.5, 3 * $ttl, 'every token so far expiring');
        $merx->products->list();
        self::assertCount(3, FaultProxy::requestsTo('POST', '/oauth/token'));
        $bearers = array_map(static fn (array $entry): string => $entry['headers']['authorization'], FaultProxy::requestsTo('GET', '/api/v1/products'));
        self::assertCount(3, array_unique($bearers));
    }

    public function testARefusedTokenIsRefreshedOnceAndTheCallRetried(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key'], viaProxy: true);
        $merx->products->list();
        FaultProxy::inject([['method' => 'GET', 'path' => '/api/v1/products', 'action' => 'status', 'status' => 401, 'headers' => ['WWW-Authenticate' => 'Bearer error="invalid_token"'], 'body' => ['code' => 'unauthenticated', 'status' => 401]]]);

        self::assertSame([], $merx->products->list()->data);

        $gets = FaultProxy::requestsTo('GET', '/api/v1/products');
        self::assertCount(3, $gets);
        self::assertCount(2, FaultProxy::requestsTo('POST', '/oauth/token'));
        self::assertSame($gets[0]['headers']['authorization'], $gets[1]['headers']['authorization']);
        self::assertNotSame($gets[1]['headers']['authorization'], $gets[2]['headers']['authorization'], 'the retry carries the fresh token');
    }

    public function testATokenRefusedAgainAfterARefreshIsAnAuthenticationError(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key'], viaProxy: true);
        $merx->products->list();
        FaultProxy::reset();
        FaultProxy::inject([['method' => 'GET', 'path' => '/api/v1/products', 'action' => 'status', 'status' => 401, 'times' => 5, 'body' => ['code' => 'unauthenticated', 'status' => 401]]]);

        try {
            $merx->products->list();
            self::fail('expected a 401');
        } catch (AuthenticationError $e) {
            self::assertSame('unauthenticated', $e->errorCode);
        }
        self::assertCount(2, FaultProxy::requestsTo('GET', '/api/v1/products'), 'one refresh, one more try, no loop');
        self::assertCount(1, FaultProxy::requestsTo('POST', '/oauth/token'));
    }

    public function testARevokedKeyGetsNoMoreTokens(): void
    {
        $merx = $this->merx($this->newMerchant()['api_key']);
        $second = $merx->apiKeys->create(['name' => 'to revoke', 'scopes' => ['products:read']]);
        self::assertSame([], $this->merx($second->secret)->products->list()->data);

        $merx->apiKeys->revoke($second->id);

        self::assertNotNull($merx->apiKeys->retrieve($second->id)->revokedAt);
        $this->expectException(AuthenticationError::class);
        $this->merx($second->secret)->products->list();
    }
}
