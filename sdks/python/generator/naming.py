"""Python names for the document's names: operation ids, schema names, property names."""

from __future__ import annotations

import keyword
import re
from typing import Iterable

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NOT_IDENTIFIER = re.compile(r"[^0-9A-Za-z_]")


def snake(name: str) -> str:
    """``deadLetters`` / ``dead-letters`` / ``dead_letters`` -> ``dead_letters``."""
    spaced = _CAMEL_BOUNDARY.sub("_", name)
    cleaned = _NOT_IDENTIFIER.sub("_", spaced).strip("_").lower()
    return re.sub(r"_+", "_", cleaned)


def pascal(name: str) -> str:
    """``products.created`` / ``api_keys`` / ``deadLetters`` -> ``ProductsCreated`` / ``ApiKeys`` / ``DeadLetters``."""
    words = [word for word in _NOT_IDENTIFIER.sub("_", _CAMEL_BOUNDARY.sub("_", name)).split("_") if word]
    joined = "".join(word[:1].upper() + word[1:] for word in words)
    return f"N{joined}" if joined[:1].isdigit() else joined


def identifier(name: str, reserved: Iterable[str] = ()) -> str:
    """A valid Python identifier close to ``name``; keywords and reserved names get a trailing ``_``."""
    cleaned = _NOT_IDENTIFIER.sub("_", name) or "_"
    if cleaned[0].isdigit():
        cleaned = f"_{cleaned}"
    if keyword.iskeyword(cleaned) or cleaned in set(reserved):
        cleaned = f"{cleaned}_"
    return cleaned


def python_string(value: str) -> str:
    """A double-quoted Python literal for ``value``."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return f'"{escaped}"'


def python_literal(value: object) -> str:
    if isinstance(value, str):
        return python_string(value)
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    raise ValueError(f"{value!r} cannot be a Literal")
