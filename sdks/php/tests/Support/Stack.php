<?php

declare(strict_types=1);

namespace Merx\Tests\Support;

/**
 * The real Merx the suite runs against: the embedded mode (every service in one process) on a free
 * port with a fresh data directory, and the fault proxy in front of its gateway. `run.php` starts
 * one for both client runs and hands it over in MERX_TEST_* variables; a bare `phpunit` starts its
 * own and stops it at exit.
 */
final class Stack
{
    /** Short tokens, so refresh after expiry happens within a test; quick webhook retries. */
    public const SERVER_ENV = [
        'MERX_ACCESS_TOKEN_TTL' => '6',
        'MERX_THROTTLE_TOKEN_ENDPOINT' => '{"limit":1000,"window_seconds":60}',
        'MERX_WEBHOOK_RETRY_SCHEDULE' => '1s',
        'MERX_WEBHOOK_RETRY_WINDOW' => '1m',
        'LOG_LEVEL' => 'warn',
    ];

    private static ?self $current = null;

    /** @var list<resource> */
    private array $processes = [];

    private function __construct(
        public readonly string $baseUrl,
        public readonly string $proxyUrl,
        public readonly string $operatorToken,
        private readonly ?string $dataDir = null,
    ) {
    }

    public static function get(): self
    {
        if (self::$current === null) {
            $baseUrl = getenv('MERX_TEST_BASE_URL');
            self::$current = \is_string($baseUrl) && $baseUrl !== ''
                ? new self($baseUrl, (string) getenv('MERX_TEST_PROXY_URL'), (string) getenv('MERX_TEST_OPERATOR_TOKEN'))
                : self::start();
            if (self::$current->dataDir !== null) {
                register_shutdown_function(static fn () => self::$current?->stop());
            }
        }

        return self::$current;
    }

    public static function repoRoot(): string
    {
        return \dirname(__DIR__, 4);
    }

    public static function start(): self
    {
        $root = self::repoRoot();
        $dataDir = sys_get_temp_dir() . '/merx-php-sdk-' . bin2hex(random_bytes(6));
        mkdir($dataDir, 0700, true);
        $port = Processes::freePort();
        $server = Processes::start(
            ['node', "{$root}/services/embedded/dist/src/main.js"],
            ['PORT' => (string) $port, 'ADMIN_PORT' => '0', 'MERX_DATA_DIR' => $dataDir] + self::SERVER_ENV,
            "{$dataDir}/server.log",
            $root,
        );
        $devFile = "{$dataDir}/dev.json";
        try {
            $dev = Processes::eventually(static function () use ($devFile, $server): ?array {
                if (!proc_get_status($server)['running']) {
                    throw new \RuntimeException('the Merx server exited at start');
                }
                $dev = is_file($devFile) ? json_decode((string) file_get_contents($devFile), true) : null;

                return \is_array($dev) && isset($dev['operator_token']) ? $dev : null;
            }, 120, "Merx on port {$port} writing {$devFile}");
        } catch (\RuntimeException $e) {
            Processes::stop($server);
            throw new \RuntimeException($e->getMessage() . "\n" . @file_get_contents("{$dataDir}/server.log"), 0, $e);
        }
        $baseUrl = "http://127.0.0.1:{$port}";
        $proxyLog = "{$dataDir}/proxy.log";
        $proxy = Processes::start(['node', __DIR__ . '/fault-proxy.mjs', $baseUrl], [], $proxyLog);
        $proxyPort = Processes::eventually(static function () use ($proxyLog): ?int {
            $first = strtok((string) @file_get_contents($proxyLog), "\n");
            $line = \is_string($first) ? json_decode($first, true) : null;

            return \is_array($line) && isset($line['port']) ? (int) $line['port'] : null;
        }, 30, 'the fault proxy listening');
        $stack = new self($baseUrl, "http://127.0.0.1:{$proxyPort}", (string) $dev['operator_token'], $dataDir);
        $stack->processes = [$proxy, $server];

        return $stack;
    }

    /** The variables that hand this stack to another process (a phpunit run, an example). */
    public function env(): array
    {
        return ['MERX_TEST_BASE_URL' => $this->baseUrl, 'MERX_TEST_PROXY_URL' => $this->proxyUrl, 'MERX_TEST_OPERATOR_TOKEN' => $this->operatorToken];
    }

    public function stop(): void
    {
        foreach ($this->processes as $process) {
            Processes::stop($process);
        }
        $this->processes = [];
        if ($this->dataDir !== null) {
            Processes::removeTree($this->dataDir);
        }
    }
}
