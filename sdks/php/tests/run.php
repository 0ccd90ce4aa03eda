<?php

declare(strict_types=1);

// The PHP SDK's test suite, as `npm test` runs it (tests/src/run-all.ts): installs the suite's
// Composer project (no network: see composer.json), starts one real Merx and the fault proxy, runs
// PHPUnit once per PSR-18 client (Symfony's Psr18Client, then the SDK's cURL client) against
// them, and writes one JUnit report of both runs to MERX_TEST_JUNIT_FILE.
//
//   php sdks/php/tests/run.php            # from anywhere; exits non-zero when a test fails

use Merx\Tests\Support\Stack;

const CLIENT_RUNS = [
    'symfony' => ['unit', 'integration', 'examples'],
    'curl' => ['integration', 'examples'], // the unit tests do not touch HTTP: once is enough
];

chdir(__DIR__);
putenv('COMPOSER_ALLOW_SUPERUSER=1');
passthru('composer install --no-interaction --no-progress --quiet', $status);
if ($status !== 0) {
    fwrite(STDERR, "composer install failed in " . __DIR__ . "\n");
    exit(1);
}
require __DIR__ . '/autoload.php';

$stack = Stack::start();
$reports = [];
$exitCodes = [];
try {
    foreach (CLIENT_RUNS as $client => $suites) {
        $report = sys_get_temp_dir() . "/merx-php-junit-{$client}-" . getmypid() . '.xml';
        $env = $stack->env() + ['MERX_TEST_HTTP_CLIENT' => $client];
        echo "\n== PHP SDK over the {$client} PSR-18 client ==\n";
        $command = ['phpunit', '-c', __DIR__ . '/phpunit.xml', '--testsuite', implode(',', $suites), '--log-junit', $report];
        $process = proc_open($command, [0 => ['file', '/dev/null', 'r'], 1 => \STDOUT, 2 => \STDERR], $pipes, __DIR__, $env + getenv());
        $exitCodes[$client] = \is_resource($process) ? proc_close($process) : 1;
        $reports[$client] = $report;
    }
} finally {
    $stack->stop();
}

[$totals, $xml] = mergeReports($reports);
$target = getenv('MERX_TEST_JUNIT_FILE');
if (\is_string($target) && $target !== '') {
    file_put_contents($target, $xml);
}
foreach ($reports as $report) {
    @unlink($report);
}
$failed = $totals['failures'] + $totals['errors'];
printf("\nPHP SDK: %d passed, %d failed%s\n", $totals['tests'] - $failed - $totals['skipped'], $failed, $totals['skipped'] ? ", {$totals['skipped']} skipped" : '');
exit($failed > 0 || array_filter($exitCodes) !== [] ? 1 : 0);

/**
 * One JUnit document of both runs: each run's suite renamed after its client, and the counts on
 * the outer element, where run-all.ts reads them.
 *
 * @param array<string, string> $reports client => JUnit file
 *
 * @return array{0: array{tests: int, failures: int, errors: int, skipped: int}, 1: string}
 */
function mergeReports(array $reports): array
{
    $merged = new DOMDocument('1.0', 'UTF-8');
    $merged->formatOutput = true;
    $root = $merged->appendChild($merged->createElement('testsuites'));
    $totals = ['tests' => 0, 'failures' => 0, 'errors' => 0, 'skipped' => 0];
    foreach ($reports as $client => $file) {
        $report = new DOMDocument();
        if (!is_file($file) || !@$report->load($file)) {
            ++$totals['errors']; // a run that wrote no report failed before or while starting
            $missing = $root->appendChild($merged->createElement('testsuite'));
            $missing->setAttribute('name', "php-sdk {$client}: no JUnit report");
            $missing->setAttribute('tests', '0');
            $missing->setAttribute('errors', '1');
            continue;
        }
        foreach ($report->documentElement->childNodes as $suite) {
            if ($suite instanceof DOMElement && $suite->tagName === 'testsuite') {
                $suite->setAttribute('name', "php-sdk {$client}");
                foreach (array_keys($totals) as $count) {
                    $totals[$count] += (int) $suite->getAttribute($count);
                }
                $root->appendChild($merged->importNode($suite, true));
            }
        }
    }
    foreach ($totals as $name => $value) {
        $root->setAttribute($name, (string) $value);
    }

    return [$totals, (string) $merged->saveXML()];
}
