<?php

declare(strict_types=1);

namespace Merx\Tests\Examples;

use Merx\Tests\Support\IntegrationTestCase;
use Merx\Tests\Support\Stack;

/** examples/php-products run as a user would, against the real server (the receiver example runs in WebhooksTest). */
final class ProductsExampleTest extends IntegrationTestCase
{
    public function testTheScriptCreatesAndListsProducts(): void
    {
        $key = $this->newMerchant()['api_key'];
        $first = $this->runExample($key, 'EXAMPLE-1');
        $second = $this->runExample($key, 'EXAMPLE-2');

        self::assertSame(0, $first['exit'], $first['stderr']);
        self::assertMatchesRegularExpression('/^created prod_[0-9a-z]{26} EXAMPLE-1 19\.99 USD \(ETag "v1", request req_/m', $first['stdout']);
        self::assertSame(0, $second['exit'], $second['stderr']);
        self::assertMatchesRegularExpression('/EXAMPLE-2 .*\n.*EXAMPLE-1 /s', $second['stdout'], 'both listed, newest first');

        $duplicate = $this->runExample($key, 'EXAMPLE-1');
        self::assertSame(1, $duplicate['exit']);
        self::assertStringContainsString('409 conflict', $duplicate['stderr']);
    }

    /** @return array{exit: int, stdout: string, stderr: string} */
    private function runExample(string $key, string $sku): array
    {
        $process = proc_open(
            [\PHP_BINARY, Stack::repoRoot() . '/examples/php-products/products.php', $sku],
            [1 => ['pipe', 'w'], 2 => ['pipe', 'w']],
            $pipes,
            null,
            ['MERX_API_KEY' => $key, 'MERX_BASE_URL' => $this->stack->baseUrl, 'MERX_EXAMPLE_AUTOLOAD' => \dirname(__DIR__) . '/autoload.php'] + getenv(),
        );
        self::assertIsResource($process);
        $stdout = (string) stream_get_contents($pipes[1]);
        $stderr = (string) stream_get_contents($pipes[2]);

        return ['exit' => proc_close($process), 'stdout' => $stdout, 'stderr' => $stderr];
    }
}
