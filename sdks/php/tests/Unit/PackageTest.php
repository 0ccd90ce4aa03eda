<?php

declare(strict_types=1);

namespace Merx\Tests\Unit;

use Composer\Autoload\ClassLoader;
use Merx\Merx;
use PHPUnit\Framework\TestCase;

/** The package as Composer sees it: a valid composer.json, PSR interfaces only, classes loaded by Composer's autoloader. */
final class PackageTest extends TestCase
{
    private const SDK = __DIR__ . '/../..';

    public function testComposerValidateStrictPasses(): void
    {
        exec('COMPOSER_ALLOW_SUPERUSER=1 composer validate --strict --no-interaction -d ' . escapeshellarg(self::SDK) . ' 2>&1', $output, $status);

        self::assertSame(0, $status, implode("\n", $output));
    }

    public function testItRequiresOnlyPhpAndThePsrHttpInterfaces(): void
    {
        $composer = json_decode((string) file_get_contents(self::SDK . '/composer.json'), true, 512, \JSON_THROW_ON_ERROR);

        self::assertSame('merx/merx-php', $composer['name']);
        self::assertSame(['php', 'ext-json', 'psr/http-client', 'psr/http-factory', 'psr/http-message'], array_keys($composer['require']));
        self::assertSame('>=8.1', $composer['require']['php']);
        self::assertSame(['Merx\\' => 'src/'], $composer['autoload']['psr-4']);
        self::assertArrayHasKey('symfony/http-client', $composer['suggest']);
    }

    public function testTheSdkLoadsThroughComposersGeneratedAutoloader(): void
    {
        $files = [];
        foreach (ClassLoader::getRegisteredLoaders() as $vendorDir => $loader) {
            $files[$vendorDir] = $loader->findFile(Merx::class);
        }
        $vendor = realpath(__DIR__ . '/../vendor');

        self::assertArrayHasKey($vendor, $files, 'the suite runs on the test project\'s vendor/autoload.php');
        self::assertSame("{$vendor}/composer/../merx/merx-php/src/Merx.php", $files[$vendor]);
        self::assertSame(realpath((string) $files[$vendor]), (new \ReflectionClass(Merx::class))->getFileName());
    }
}
