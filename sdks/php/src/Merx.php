<?php

declare(strict_types=1);

namespace Merx;

use Merx\Core\ClientFactory;
use Merx\Core\Credentials;
use Merx\Core\Hydrate;
use Merx\Core\Requestor;
use Merx\Core\TokenProvider;
use Merx\Exception\ConfigurationError;
use Merx\Resources\MerxResources;
use Psr\Http\Client\ClientInterface;
use Psr\Http\Message\RequestFactoryInterface;
use Psr\Http\Message\StreamFactoryInterface;

/**
 * The Merx API client.
 *
 *     $merx = new Merx\Merx(apiKey: 'mx_test_…');
 *     $product = $merx->products->create(['sku' => 'TSHIRT-1', 'title' => 'T-shirt', 'price' => '19.99', 'currency' => 'USD']);
 *     foreach ($merx->products->list(['limit' => 10]) as $product) { … }
 *
 * The API key is exchanged for short-lived access tokens (OAuth 2.0 client credentials) on first
 * use; they are cached and refreshed before they expire. The key itself is sent only to the token
 * endpoint. Every resource of the API is a property (`products`, `webhooks->subscriptions`, …).
 */
final class Merx
{
    use MerxResources;

    public const VERSION = '0.1.0';

    private readonly Requestor $requestor;

    /**
     * @param string|null $apiKey `mx_<mode>_<keyid>_<secret>`; MERX_API_KEY when null
     * @param string|null $baseUrl MERX_BASE_URL when null, else http://localhost:8080
     * @param float $timeout seconds per attempt (honoured by clients implementing Merx\Http\TimeoutAware)
     * @param int $maxRetries retries of connection errors, 408, 409 idempotency_key_in_use, 429 and 5xx
     * @param array<string, string> $defaultHeaders sent with every request
     * @param ClientInterface|null $httpClient any PSR-18 client; found among installed ones when null
     * @param RequestFactoryInterface|null $requestFactory PSR-17; found when null
     * @param StreamFactoryInterface|null $streamFactory PSR-17; found when null
     */
    public function __construct(
        ?string $apiKey = null,
        ?string $baseUrl = null,
        float $timeout = 60.0,
        int $maxRetries = 2,
        array $defaultHeaders = [],
        ?ClientInterface $httpClient = null,
        ?RequestFactoryInterface $requestFactory = null,
        ?StreamFactoryInterface $streamFactory = null,
    ) {
        $apiKey ??= ClientFactory::env('MERX_API_KEY');
        if ($apiKey === null) {
            throw new ConfigurationError('No API key: pass apiKey to new Merx\Merx(...) or set MERX_API_KEY');
        }
        if (!preg_match('/^(mx_(?:test|live)_[0-9A-Za-z]+)_\S+$/', $apiKey, $match)) {
            throw new ConfigurationError('An API key looks like mx_test_<keyid>_<secret> (or mx_live_…)');
        }
        $clientId = $match[1];
        $tokens = new TokenProvider(fn (): array => $this->exchangeKey($clientId, $apiKey));
        $this->requestor = ClientFactory::requestor(
            ClientFactory::baseUrl($baseUrl),
            Credentials::oauth($tokens),
            $timeout,
            $maxRetries,
            $defaultHeaders,
            $httpClient,
            $requestFactory,
            $streamFactory,
        );
        $this->registerResources($this->requestor);
    }

    /**
     * The client credentials grant: HTTP Basic with the key's client id and the whole key.
     *
     * @return array{access_token: string, expires_in: int}
     */
    private function exchangeKey(string $clientId, string $apiKey): array
    {
        $answer = Hydrate::object($this->requestor->request(
            'POST',
            '/oauth/token',
            body: ['grant_type' => 'client_credentials'],
            authenticated: false,
            options: ['headers' => ['Authorization' => 'Basic ' . base64_encode("{$clientId}:{$apiKey}")]],
            encoding: 'form',
        )->json(), '$');

        return [
            'access_token' => Hydrate::string($answer['access_token'] ?? null, '$.access_token'),
            'expires_in' => Hydrate::int($answer['expires_in'] ?? null, '$.expires_in'),
        ];
    }
}
