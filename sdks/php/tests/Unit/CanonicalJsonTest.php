<?php

declare(strict_types=1);

namespace Merx\Tests\Unit;

use Merx\Core\CanonicalJson;
use PHPUnit\Framework\TestCase;

/** The same vectors as the server's canonicalJson (shared/kit/src/canonical-json.spec.ts), from RFC 8785. */
final class CanonicalJsonTest extends TestCase
{
    private static function canonical(string $json): string
    {
        return CanonicalJson::encode(json_decode($json, false, 512, \JSON_THROW_ON_ERROR));
    }

    public function testSortsMembersDropsWhitespaceAndKeepsArraysInOrder(): void
    {
        self::assertSame('{"a":[3,{"c":null,"d":true}],"b":1,"e":{},"f":[]}', self::canonical('{ "b": 1, "a": [3, {"d": true, "c": null}], "e": {}, "f": [] }'));
    }

    public function testSerialisesNumbersTheEcmaScriptWay(): void
    {
        self::assertSame(
            '{"numbers":[333333333.3333333,1e+30,4.5,0.002,0.000001,1,0,1e-7,123000000000000000000,1e+21,-12.5,9007199254740991]}',
            self::canonical('{"numbers":[333333333.33333329, 1E30, 4.50, 2e-3, 0.000001, 1.0, -0, 1e-7, 123e18, 1e21, -12.5, 9007199254740991]}'),
        );
    }

    public function testEscapesStringsTheEcmaScriptWay(): void
    {
        self::assertSame('{"string":"€$\u000f\nA\'B\"\\\\\\\\\"/ ' . "\u{2028}" . '"}', CanonicalJson::encode(['string' => "€$\u{000f}\nA'B\"\\\\\"/ \u{2028}"]));
    }

    public function testSortsKeysByUtf16CodeUnitsNotByBytes(): void
    {
        // U+1F600 is a surrogate pair (D83D DE00): before U+FB01 in UTF-16, after it in UTF-8.
        self::assertSame("{\"\\r\":2,\"1\":4,\"é\":5,\"€\":1,\"😀\":3,\"ﬁ\":6}", self::canonical('{"\u20ac":1,"\r":2,"\ud83d\ude00":3,"1":4,"\u00e9":5,"\ufb01":6}'));
    }

    public function testRefusesNonFiniteNumbers(): void
    {
        $this->expectException(\InvalidArgumentException::class);
        CanonicalJson::encode(['n' => \NAN]);
    }
}
