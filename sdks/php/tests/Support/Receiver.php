<?php

declare(strict_types=1);

namespace Merx\Tests\Support;

/** A webhook receiver running under `php -S` on a free port, stopped at the end of the test. */
final class Receiver
{
    /** @var resource */
    private $process;

    public readonly string $url;

    private readonly string $logFile;

    /** @param array<string, string> $env */
    public function __construct(string $script, array $env, int $port)
    {
        $this->url = "http://127.0.0.1:{$port}/";
        $this->logFile = sys_get_temp_dir() . "/merx-php-receiver-{$port}.log";
        $this->process = Processes::start([\PHP_BINARY, '-S', "127.0.0.1:{$port}", $script], $env + ['MERX_EXAMPLE_AUTOLOAD' => \dirname(__DIR__) . '/autoload.php'], $this->logFile);
        Processes::eventually(static function () use ($port): bool {
            $socket = @fsockopen('127.0.0.1', $port, $code, $message, 0.2);
            if ($socket === false) {
                return false;
            }
            fclose($socket);

            return true;
        }, 10, "php -S on port {$port}");
    }

    public function stop(): void
    {
        Processes::stop($this->process);
        @unlink($this->logFile);
    }

    /**
     * POSTs a request to the receiver with PHP's own HTTP stream; returns the status code.
     *
     * @param array<string, string> $headers
     */
    public function post(string $body, array $headers): int
    {
        $lines = '';
        foreach ($headers + ['content-type' => 'application/json'] as $name => $value) {
            $lines .= "{$name}: {$value}\r\n";
        }
        $context = stream_context_create(['http' => ['method' => 'POST', 'header' => $lines, 'content' => $body, 'ignore_errors' => true]]);
        file_get_contents($this->url, false, $context);

        return (int) explode(' ', $http_response_header[0] ?? 'HTTP/1.1 0')[1];
    }
}
