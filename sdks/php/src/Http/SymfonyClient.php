<?php

declare(strict_types=1);

namespace Merx\Http;

use Psr\Http\Client\ClientInterface;
use Psr\Http\Message\RequestInterface;
use Psr\Http\Message\ResponseFactoryInterface;
use Psr\Http\Message\ResponseInterface;
use Psr\Http\Message\StreamFactoryInterface;
use Symfony\Component\HttpClient\HttpClient;
use Symfony\Component\HttpClient\Psr18Client;
use Symfony\Contracts\HttpClient\HttpClientInterface;

/**
 * Symfony's Psr18Client with per-request timeouts: each timeout gets a Psr18Client over the same
 * Symfony client (`withOptions`), so connections are still shared. Needs symfony/http-client.
 */
final class SymfonyClient implements TimeoutAware
{
    private readonly HttpClientInterface $http;

    private readonly Psr18Client $psr18;

    public function __construct(
        ?HttpClientInterface $http = null,
        private readonly ?ResponseFactoryInterface $responseFactory = null,
        private readonly ?StreamFactoryInterface $streamFactory = null,
        float $timeout = 60.0,
    ) {
        $this->http = ($http ?? HttpClient::create())->withOptions(['timeout' => $timeout, 'max_duration' => $timeout]);
        $this->psr18 = new Psr18Client($this->http, $responseFactory, $streamFactory);
    }

    public function withTimeout(float $seconds): ClientInterface
    {
        return new self($this->http, $this->responseFactory, $this->streamFactory, $seconds);
    }

    public function sendRequest(RequestInterface $request): ResponseInterface
    {
        return $this->psr18->sendRequest($request);
    }
}
