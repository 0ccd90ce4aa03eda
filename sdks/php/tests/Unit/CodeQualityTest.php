<?php

declare(strict_types=1);

namespace Merx\Tests\Unit;

use Merx\Merx;
use Merx\Tests\Support\Stack;
use PHPUnit\Framework\TestCase;

/**
 * Neither PHPStan nor Psalm is packaged by Debian 12 or the npm registry, so this stands in for
 * them: every file lints on this PHP, declares strict types, and every class, method, parameter
 * and property of the SDK has a declared type; and strict types hold at a call.
 */
final class CodeQualityTest extends TestCase
{
    /** @return list<string> */
    private static function phpFiles(string ...$roots): array
    {
        $files = [];
        foreach ($roots as $root) {
            foreach (new \RecursiveIteratorIterator(new \RecursiveDirectoryIterator($root, \FilesystemIterator::SKIP_DOTS)) as $file) {
                if ($file->getExtension() === 'php' && !str_contains($file->getPathname(), '/vendor/')) {
                    $files[] = $file->getPathname();
                }
            }
        }
        sort($files);

        return $files;
    }

    public function testEveryFileLintsAndDeclaresStrictTypes(): void
    {
        $sdk = \dirname(__DIR__, 2);
        $files = self::phpFiles("{$sdk}/src", "{$sdk}/tests", Stack::repoRoot() . '/examples');
        self::assertGreaterThan(100, \count($files));
        foreach ($files as $file) {
            exec(\PHP_BINARY . ' -l ' . escapeshellarg($file) . ' 2>&1', $output, $status);
            self::assertSame(0, $status, implode("\n", $output));
            self::assertMatchesRegularExpression('/^<\?php\s+(\/\/[^\n]*\n\s*|\/\*.*?\*\/\s*)*declare\(strict_types=1\);/s', preg_replace('/^#![^\n]*\n/', '', (string) file_get_contents($file)), "{$file} declares strict types first");
        }
    }

    public function testTheSdkKeepsToPhp81Syntax(): void
    {
        foreach (self::phpFiles(\dirname(__DIR__, 2) . '/src') as $file) {
            $code = (string) file_get_contents($file);
            self::assertDoesNotMatchRegularExpression('/\breadonly\s+(final\s+|abstract\s+)?class\b|\b(final|abstract)\s+readonly\s+class\b/', $code, "{$file}: readonly classes are PHP 8.2");
            self::assertDoesNotMatchRegularExpression('/\(\s*[\w\\\\]+\s*&\s*[\w\\\\]+\s*\)\s*\|/', $code, "{$file}: DNF types are PHP 8.2");
            self::assertDoesNotMatchRegularExpression('/function\s+\w+\([^)]*\)\s*:\s*\??(true|false|null)\s*[{;]/', $code, "{$file}: standalone true/false/null types are PHP 8.2");
        }
    }

    public function testEveryDeclarationOfTheSdkIsTyped(): void
    {
        $src = \dirname(__DIR__, 2) . '/src';
        $checked = 0;
        foreach (self::phpFiles($src) as $file) {
            $class = 'Merx\\' . str_replace('/', '\\', substr($file, \strlen($src) + 1, -4));
            $reflection = new \ReflectionClass($class);
            foreach ($reflection->getMethods() as $method) {
                if ($method->getDeclaringClass()->getName() !== $class || str_starts_with($method->getName(), '__') && $method->getName() !== '__construct') {
                    continue;
                }
                if ($method->getName() !== '__construct') {
                    self::assertTrue($method->hasReturnType(), "{$class}::{$method->getName()}() declares its return type");
                }
                foreach ($method->getParameters() as $parameter) {
                    self::assertTrue($parameter->hasType(), "{$class}::{$method->getName()}(\${$parameter->getName()}) declares its type");
                }
                ++$checked;
            }
            foreach ($reflection->getProperties() as $property) {
                if ($property->getDeclaringClass()->getName() === $class) {
                    self::assertTrue($property->hasType(), "{$class}::\${$property->getName()} declares its type");
                }
            }
        }
        self::assertGreaterThan(200, $checked);
    }

    public function testStrictTypesRefuseAnIntWhereAnIdIsAString(): void
    {
        $merx = new Merx(apiKey: 'mx_test_abc_def', baseUrl: 'http://127.0.0.1:9', maxRetries: 0);

        $this->expectException(\TypeError::class);
        $merx->products->retrieve(123); // @phpstan-ignore-line the point of the test
    }
}
