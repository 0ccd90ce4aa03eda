"""RFC 8785 canonical JSON, as the server's JavaScript writes it."""

from __future__ import annotations

import json
import unittest

from merx._canonical_json import canonical_json


class CanonicalJsonTest(unittest.TestCase):
    def test_the_rfc_8785_example(self) -> None:
        source = (
            '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
            ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}'
        )
        expected = '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
        self.assertEqual(canonical_json(json.loads(source)), expected)

    def test_keys_sort_by_utf16_code_units_not_code_points(self) -> None:
        keys = ["\u20ac", "\r", "\ufb33", "1", "\U0001f600", "\u0080", "\u00f6"]
        document = {key: index for index, key in enumerate(keys)}
        ordered = list(json.loads(canonical_json(document)))
        # U+1F600 is the surrogate pair D83D DE00 in UTF-16, so it sorts before U+FB33.
        self.assertEqual(ordered, ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"])

    def test_numbers_print_like_ecmascript(self) -> None:
        cases = {
            0.0: "0", -0.0: "0", 1.0: "1", 100.0: "100", 0.1: "0.1", 1e21: "1e+21", 1e20: "100000000000000000000",
            1.5e-7: "1.5e-7", 1e-6: "0.000001", 123e-20: "1.23e-18", 5e-324: "5e-324", -2.5e-9: "-2.5e-9",
            1.7976931348623157e308: "1.7976931348623157e+308", 1234.5: "1234.5",
        }
        for number, text in cases.items():
            with self.subTest(number=number):
                self.assertEqual(canonical_json(number), text)

    def test_integers_beyond_double_precision_round_like_javascript(self) -> None:
        self.assertEqual(canonical_json(9007199254740992), "9007199254740992")
        self.assertEqual(canonical_json(9007199254740993), "9007199254740992")
        self.assertEqual(canonical_json(12345678901234567891), "12345678901234567000")

    def test_strings_escape_only_what_json_stringify_escapes(self) -> None:
        self.assertEqual(canonical_json("tab\there \u2028 \x7f \x1f é ☃"), '"tab\\there \u2028 \x7f \\u001f é ☃"')
        self.assertEqual(canonical_json(json.loads('"\\ud800"')), '"\\ud800"')  # a lone surrogate

    def test_non_json_values_are_refused(self) -> None:
        for value in (float("nan"), float("inf")):
            with self.assertRaises(ValueError):
                canonical_json(value)
        with self.assertRaises(TypeError):
            canonical_json({"when": object()})
        with self.assertRaises(TypeError):
            canonical_json({1: "integer key"})


if __name__ == "__main__":
    unittest.main()
