<?php

declare(strict_types=1);

namespace Merx\Tests\Support;

/** Child processes of the suite (the Merx server, the fault proxy, webhook receivers), and free ports for them. */
final class Processes
{
    public static function freePort(): int
    {
        $socket = stream_socket_server('tcp://127.0.0.1:0');
        if ($socket === false) {
            throw new \RuntimeException('cannot open a socket to find a free port');
        }
        $name = (string) stream_socket_get_name($socket, false);
        fclose($socket);

        return (int) substr($name, strrpos($name, ':') + 1);
    }

    /**
     * @param list<string> $command
     * @param array<string, string> $env added to this process's environment
     *
     * @return resource
     */
    public static function start(array $command, array $env, string $logFile, ?string $cwd = null)
    {
        $process = proc_open($command, [0 => ['file', '/dev/null', 'r'], 1 => ['file', $logFile, 'a'], 2 => ['file', $logFile, 'a']], $pipes, $cwd, $env + getenv());
        if (!\is_resource($process)) {
            throw new \RuntimeException('cannot start ' . implode(' ', $command));
        }

        return $process;
    }

    /** @param resource $process */
    public static function stop($process): void
    {
        if (!proc_get_status($process)['running']) {
            proc_close($process);

            return;
        }
        proc_terminate($process, 15);
        $deadline = microtime(true) + 10;
        while (proc_get_status($process)['running'] && microtime(true) < $deadline) {
            usleep(50_000);
        }
        if (proc_get_status($process)['running']) {
            proc_terminate($process, 9);
        }
        proc_close($process);
    }

    /**
     * Polls `$condition` until it returns something other than null or false, or the deadline passes.
     *
     * @template T
     *
     * @param callable(): T $condition
     *
     * @return T
     */
    public static function eventually(callable $condition, float $seconds, string $what): mixed
    {
        $deadline = microtime(true) + $seconds;
        do {
            $result = $condition();
            if ($result !== null && $result !== false) {
                return $result;
            }
            usleep(100_000);
        } while (microtime(true) < $deadline);
        throw new \RuntimeException("{$what}: not within {$seconds} s");
    }

    public static function removeTree(string $dir): void
    {
        if (!is_dir($dir)) {
            return;
        }
        $entries = new \RecursiveIteratorIterator(new \RecursiveDirectoryIterator($dir, \FilesystemIterator::SKIP_DOTS), \RecursiveIteratorIterator::CHILD_FIRST);
        foreach ($entries as $entry) {
            $entry->isDir() && !$entry->isLink() ? rmdir($entry->getPathname()) : unlink($entry->getPathname());
        }
        rmdir($dir);
    }
}
