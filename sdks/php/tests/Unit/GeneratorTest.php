<?php

declare(strict_types=1);

namespace Merx\Tests\Unit;

use Merx\Core\Page;
use Merx\Tests\Support\Processes;
use Merx\Tests\Support\Stack;
use PHPUnit\Framework\TestCase;

/** The generator: committed output is what it writes from today's document, and it types every schema feature. */
final class GeneratorTest extends TestCase
{
    private const GENERATED = ['Models', 'Resources', 'Events'];

    private string $out;

    protected function setUp(): void
    {
        $this->out = sys_get_temp_dir() . '/merx-php-generated-' . bin2hex(random_bytes(6));
    }

    protected function tearDown(): void
    {
        Processes::removeTree($this->out);
    }

    /** @param list<string> $arguments */
    private function generate(array $arguments): void
    {
        $command = array_merge(['node', \dirname(__DIR__, 2) . '/generator/generate.mjs', '--out', $this->out], $arguments);
        exec(implode(' ', array_map('escapeshellarg', $command)) . ' 2>&1', $output, $status);
        self::assertSame(0, $status, implode("\n", $output));
    }

    /** @return array<string, string> relative path => content */
    private static function files(string $root): array
    {
        $files = [];
        foreach (self::GENERATED as $dir) {
            if (!is_dir("{$root}/{$dir}")) {
                continue;
            }
            foreach (new \RecursiveIteratorIterator(new \RecursiveDirectoryIterator("{$root}/{$dir}", \FilesystemIterator::SKIP_DOTS)) as $file) {
                $files[substr($file->getPathname(), \strlen($root) + 1)] = (string) file_get_contents($file->getPathname());
            }
        }
        ksort($files);

        return $files;
    }

    public function testTheCommittedModelsAndResourcesAreWhatTheDocumentGivesToday(): void
    {
        $this->generate([]); // from @merx/contracts, built by `npm run build`
        $expected = self::files($this->out);
        $committed = self::files(\dirname(__DIR__, 2) . '/src');

        self::assertNotEmpty($expected);
        self::assertSame(array_keys($expected), array_keys($committed), 'files added or removed: run node sdks/php/generator/generate.mjs');
        foreach ($expected as $path => $content) {
            self::assertSame($content, $committed[$path], "{$path} is stale: run node sdks/php/generator/generate.mjs");
        }
    }

    public function testItTypesWebhooksOneOfAllOfEnumsConstsNullablesAndMaps(): void
    {
        $this->generate(['--from', \dirname(__DIR__) . '/fixtures/openapi-features.json', '--namespace', 'Fixture']);
        foreach (self::files($this->out) as $path => $content) {
            exec(\PHP_BINARY . ' -l ' . escapeshellarg("{$this->out}/{$path}") . ' 2>&1', $lint, $status);
            self::assertSame(0, $status, implode("\n", $lint));
            self::assertStringContainsString('declare(strict_types=1);', $content);
        }
        spl_autoload_register(function (string $class): void {
            if (str_starts_with($class, 'Fixture\\')) {
                require $this->out . '/' . str_replace('\\', '/', substr($class, \strlen('Fixture\\'))) . '.php';
            }
        });

        $household = \Fixture\Models\Household::from([
            'id' => 'h1', 'name' => 'Home', 'nickname' => null, 'kind' => 'flat',
            'pets' => [['type' => 'cat', 'lives' => 9], ['type' => 'dog', 'good' => true]],
            'favourite' => ['type' => 'dog', 'good' => false],
            'scores' => ['a' => 1, 'b' => 2.5], 'labels' => ['rex' => ['type' => 'dog', 'good' => true]],
            'address' => ['city' => 'Oslo', 'floor' => null], 'weight' => 3, 'either' => 7,
        ]);

        self::assertSame('h1', $household->id, 'allOf merges the base schema');
        self::assertNull($household->nickname);
        self::assertInstanceOf(\Fixture\Models\Cat::class, $household->pets[0]);
        self::assertSame(9, $household->pets[0]->lives);
        self::assertInstanceOf(\Fixture\Models\Dog::class, $household->pets[1]);
        self::assertInstanceOf(\Fixture\Models\Dog::class, $household->favourite);
        self::assertSame(['a' => 1.0, 'b' => 2.5], $household->scores);
        self::assertInstanceOf(\Fixture\Models\Dog::class, $household->labels['rex']);
        self::assertSame('Oslo', $household->address->city);
        self::assertSame(3.0, $household->weight);
        self::assertNull($household->object, 'an optional field left out');

        $types = [];
        foreach ((new \ReflectionClass(\Fixture\Models\Household::class))->getProperties(\ReflectionProperty::IS_PUBLIC) as $property) {
            self::assertTrue($property->isReadOnly(), $property->getName());
            $types[$property->getName()] = (string) $property->getType();
        }
        self::assertSame(['string', 'string', '?string', 'string', 'array', 'Fixture\Models\Cat|Fixture\Models\Dog|null', 'array', 'array', 'Fixture\Models\HouseholdAddress', 'float'], \array_slice(array_values($types), 0, 10));
        self::assertSame(['object' => '?string', 'extra' => '?array', 'either' => 'mixed'], \array_slice($types, 10));

        self::assertSame(['orders.created' => \Fixture\Models\OrdersCreatedEvent::class], \Fixture\Events\EventTypes::CLASSES, 'events come from the webhooks section');
        self::assertSame(Page::class, (string) (new \ReflectionMethod(\Fixture\Resources\Households::class, 'list'))->getReturnType());
        self::assertSame(['householdId', 'id', 'params', 'options'], array_map(static fn (\ReflectionParameter $p): string => $p->getName(), (new \ReflectionMethod(\Fixture\Resources\HouseholdsPets::class, 'update'))->getParameters()));
        $records = (string) (new \ReflectionMethod(\Fixture\Resources\HouseholdsRecords::class, 'create'))->getDocComment();
        self::assertStringContainsString("array{records: list<array{type: 'order', data: array{total?: float|int, ...}}|array{type: 'alert', data: array{message: string, severity?: 'warning'|'critical'}}>}", $records, 'a discriminated oneOf input is a union of shapes');
        self::assertTrue(method_exists(\Fixture\Resources\OperatorHouseholds::class, 'create'), 'operator operations lose their admin segment');
        self::assertFalse(method_exists(\Fixture\Resources\Households::class, 'create'));
    }

    public function testTheDocumentCanComeFromARunningServer(): void
    {
        $stack = Stack::get();
        $this->generate(['--from', $stack->baseUrl . '/api/v1/openapi.json']);

        self::assertSame(self::files(\dirname(__DIR__, 2) . '/src'), self::files($this->out));
    }
}
