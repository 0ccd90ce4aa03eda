"""RFC 8785 (JSON Canonicalization Scheme) serialisation, as the Merx server writes it.

The body's ``hmac_sha256`` is computed by the server over the canonical JSON of the other
fields. The server is JavaScript, so canonical here means exactly what ``JSON.stringify`` gives
for the parsed values: numbers as ECMAScript prints doubles, strings with ECMAScript's escapes,
object keys sorted by UTF-16 code units. Python's own ``json.dumps`` differs in all three
(``1.0`` vs ``1``, ``1e+21`` vs ``1e21``, and key order for characters beyond the BMP).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, List, Mapping

__all__ = ["canonical_json"]

# JavaScript numbers are doubles: integers beyond this are rounded when the server parses them.
_MAX_SAFE_INTEGER = 2**53

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def canonical_json(value: Any) -> str:
    """The RFC 8785 text of a JSON value (``dict``, ``list``, ``str``, numbers, bools, ``None``)."""
    parts: List[str] = []
    _write(value, parts)
    return "".join(parts)


def _write(value: Any, parts: List[str]) -> None:
    if value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, str):
        parts.append(_string(value))
    elif isinstance(value, int):
        parts.append(str(value) if abs(value) <= _MAX_SAFE_INTEGER else _number(float(value)))
    elif isinstance(value, float):
        parts.append(_number(value))
    elif isinstance(value, Mapping):
        parts.append("{")
        # UTF-16 code unit order: big-endian UTF-16 bytes compare exactly like the code units.
        for index, key in enumerate(sorted(value, key=lambda k: str(k).encode("utf-16-be", "surrogatepass"))):
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys are strings, not {type(key).__name__}")
            if index:
                parts.append(",")
            parts.append(_string(key))
            parts.append(":")
            _write(value[key], parts)
        parts.append("}")
    elif isinstance(value, (list, tuple)):
        parts.append("[")
        for index, item in enumerate(value):
            if index:
                parts.append(",")
            _write(item, parts)
        parts.append("]")
    else:
        raise TypeError(f"{type(value).__name__} is not a JSON value")


def _string(text: str) -> str:
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            # Control characters, and lone surrogates (json.loads keeps an unpaired "\ud800" as
            # one), are written as \u escapes in lower-case hex, like JSON.stringify does.
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _number(number: float) -> str:
    """ECMAScript's Number::toString for a finite double."""
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError("JSON has no representation for NaN or infinity")
    if number == 0:
        return "0"  # -0 too
    sign = "-" if number < 0 else ""
    # repr() gives the shortest digits that round-trip, which is what ECMAScript prints too;
    # only the layout (exponent form, trailing ".0") differs, so rebuild it from the digits.
    shortest = Decimal(repr(abs(number))).normalize().as_tuple()  # normalize() drops trailing zeros
    digits = "".join(str(digit) for digit in shortest.digits)
    k = len(digits)
    n = int(shortest.exponent) + k  # the value is 0.<digits> x 10^n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        power = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        text = f"{mantissa}e{'+' if power >= 0 else '-'}{abs(power)}"
    return sign + text
