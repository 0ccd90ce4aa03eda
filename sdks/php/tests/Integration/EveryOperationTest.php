<?php

declare(strict_types=1);

namespace Merx\Tests\Integration;

use Merx\Exception\MerxError;
use Merx\Merx;
use Merx\Operator;
use Merx\Tests\Support\FaultProxy;
use Merx\Tests\Support\IntegrationTestCase;

/**
 * Walks every operation of the OpenAPI document the server publishes and proves the SDK reaches
 * it: the method named after its operationId exists, and calling it sends that HTTP method to
 * that path. The proxy answers each call with a 418 so nothing changes on the server.
 */
final class EveryOperationTest extends IntegrationTestCase
{
    private const METHODS = ['get', 'put', 'post', 'patch', 'delete'];

    public function testEveryOperationOfTheDocumentIsAMethodThatCallsIt(): void
    {
        $document = json_decode((string) file_get_contents($this->stack->baseUrl . '/api/v1/openapi.json'), true, 512, \JSON_THROW_ON_ERROR);
        $merx = $this->merx($this->newMerchant()['api_key'], viaProxy: true, maxRetries: 0);
        $merx->merchant->retrieve(); // a token now: every later request is one under test
        $operator = new Operator(operatorToken: 'not-needed-the-proxy-answers', baseUrl: $this->stack->proxyUrl, maxRetries: 0, httpClient: self::httpClient(), requestFactory: self::factory(), streamFactory: self::factory());
        FaultProxy::reset();
        FaultProxy::inject([['path' => '/', 'prefix' => true, 'action' => 'status', 'status' => 418, 'times' => 1000, 'body' => ['code' => 'teapot', 'status' => 418]]]);

        $checked = [];
        foreach ($document['paths'] as $route => $item) {
            foreach (self::METHODS as $method) {
                if (!isset($item[$method])) {
                    continue;
                }
                $operation = $item[$method];
                $operatorOnly = \in_array('operator', array_merge(...array_map('array_keys', $operation['security'] ?? [[]])), true);
                [$target, $name] = $this->resolve($operatorOnly ? $operator : $merx, $operation['operationId'], $operatorOnly);
                $expectedPath = preg_replace('/\{\w+\}/', 'id_test', $route);
                try {
                    $target->{$name}(...self::arguments(new \ReflectionMethod($target, $name)));
                    self::fail("{$operation['operationId']} should have met the proxy's 418");
                } catch (MerxError $e) {
                    self::assertSame(418, $e->status, $operation['operationId']);
                }
                $sent = FaultProxy::log();
                $last = end($sent);
                self::assertSame([strtoupper($method), $expectedPath], [$last['method'], strtok($last['path'], '?')], $operation['operationId']);
                $checked[] = $operation['operationId'];
            }
        }
        self::assertGreaterThanOrEqual(60, \count($checked));
        self::assertCount(\count($checked), FaultProxy::log(), 'one request per operation, no retries');
    }

    /**
     * `webhooks.dead_letters.replay` → $merx->webhooks->deadLetters and `replay`; the operator's
     * `merchants.admin.create` → $operator->merchants and `create`.
     *
     * @return array{0: object, 1: string}
     */
    private function resolve(Merx|Operator $client, string $operationId, bool $operatorOnly): array
    {
        $segments = array_map(
            static fn (string $segment): string => lcfirst(str_replace(' ', '', ucwords(str_replace(['_', '-'], ' ', $segment)))),
            array_values(array_filter(explode('.', $operationId), static fn (string $segment): bool => !($operatorOnly && $segment === 'admin'))),
        );
        $method = array_pop($segments);
        $target = $client;
        foreach ($segments as $segment) {
            self::assertTrue(property_exists($target, $segment), "{$operationId}: no ->{$segment} on " . $target::class);
            $target = $target->{$segment};
        }
        self::assertTrue(method_exists($target, $method), "{$operationId}: no {$method}() on " . $target::class);

        return [$target, $method];
    }

    /** @return list<mixed> placeholder arguments: ids for path parameters, empty parameters, no retries */
    private static function arguments(\ReflectionMethod $method): array
    {
        return array_map(static fn (\ReflectionParameter $parameter): mixed => match (true) {
            $parameter->getName() === 'options' => ['max_retries' => 0],
            (string) $parameter->getType() === 'string' => 'id_test',
            default => [],
        }, $method->getParameters());
    }
}
