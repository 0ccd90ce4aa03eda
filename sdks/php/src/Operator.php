<?php

declare(strict_types=1);

namespace Merx;

use Merx\Core\ClientFactory;
use Merx\Core\Credentials;
use Merx\Exception\ConfigurationError;
use Merx\Resources\OperatorResources;
use Psr\Http\Client\ClientInterface;
use Psr\Http\Message\RequestFactoryInterface;
use Psr\Http\Message\StreamFactoryInterface;

/**
 * The platform operator's API (`/admin/v1`): provisioning merchants and apps, throttle overrides,
 * signing key rotation. It authenticates with the operator token, not an API key, so it is a
 * client of its own; retries, errors and options behave exactly as in Merx\Merx.
 *
 *     $operator = new Merx\Operator(operatorToken: getenv('MERX_OPERATOR_TOKEN'));
 *     $merchant = $operator->merchants->create(['name' => 'Acme', 'owner' => ['email' => 'owner@acme.test']]);
 */
final class Operator
{
    use OperatorResources;

    /** @param array<string, string> $defaultHeaders */
    public function __construct(
        ?string $operatorToken = null,
        ?string $baseUrl = null,
        float $timeout = 60.0,
        int $maxRetries = 2,
        array $defaultHeaders = [],
        ?ClientInterface $httpClient = null,
        ?RequestFactoryInterface $requestFactory = null,
        ?StreamFactoryInterface $streamFactory = null,
    ) {
        $operatorToken ??= ClientFactory::env('MERX_OPERATOR_TOKEN');
        if ($operatorToken === null) {
            throw new ConfigurationError('No operator token: pass operatorToken or set MERX_OPERATOR_TOKEN');
        }
        $this->registerResources(ClientFactory::requestor(
            ClientFactory::baseUrl($baseUrl),
            Credentials::static($operatorToken),
            $timeout,
            $maxRetries,
            $defaultHeaders,
            $httpClient,
            $requestFactory,
            $streamFactory,
        ));
    }
}
