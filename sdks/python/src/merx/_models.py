"""The base of every response object and the converters the generated models are built with.

A generated model declares its attributes with type annotations (what mypy and editors see) and
registers a field table (JSON name, attribute name, converter) that turns the JSON of a response
into those attributes: nested objects become models, lists of objects lists of models, and a
`oneOf` picks its variant. The JSON itself is kept, so nothing the server sends is lost, even a
field newer than this library (``to_dict()`` has it).
"""

from __future__ import annotations

import copy
import json
from typing import Any, Callable, ClassVar, Dict, Iterable, Mapping, Optional, Sequence, Tuple, Type, TypeVar

from ._types import ResponseInfo

__all__ = ["MerxObject", "Converter", "model", "list_of", "dict_of", "one_of", "identity", "register_fields"]

Converter = Callable[[Any], Any]
_ModelT = TypeVar("_ModelT", bound="MerxObject")


class MerxObject:
    """A read-only snapshot of an object the API returned, with typed attributes.

    ``to_dict()`` gives the JSON exactly as received; ``last_response`` the response it came in
    (``None`` for objects nested in another or listed in a page).
    """

    # (JSON name, attribute name, converter or None): set once per class by register_fields().
    _merx_fields: ClassVar[Tuple[Tuple[str, str, Optional[Converter]], ...]] = ()
    # The JSON names that must be present and the constant values of discriminating fields,
    # used to pick the variant of a oneOf that has no single discriminator.
    _merx_required: ClassVar[Tuple[str, ...]] = ()
    _merx_constants: ClassVar[Mapping[str, Any]] = {}

    _merx_json: Dict[str, Any]
    last_response: Optional[ResponseInfo]

    def __init__(self, json_object: Mapping[str, Any]) -> None:
        if not isinstance(json_object, Mapping):
            raise TypeError(f"{type(self).__name__} is built from a JSON object, not {type(json_object).__name__}")
        set_attribute = object.__setattr__
        set_attribute(self, "_merx_json", dict(json_object))
        set_attribute(self, "last_response", None)
        for json_name, attribute, convert in self._merx_fields:
            value = json_object.get(json_name)
            if convert is not None and value is not None:
                value = convert(value)
            set_attribute(self, attribute, value)

    @classmethod
    def from_dict(cls: Type[_ModelT], json_object: Mapping[str, Any]) -> _ModelT:
        """Build the object from its JSON (a parsed response body, a stored webhook payload)."""
        return cls(json_object)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object as the API sent it (a deep copy: changing it changes nothing here)."""
        return copy.deepcopy(self._merx_json)

    def to_json(self, *, indent: Optional[int] = None) -> str:
        """``to_dict()`` serialised as JSON."""
        return json.dumps(self._merx_json, indent=indent, ensure_ascii=False)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is a read-only snapshot of a response; change it through the API")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is a read-only snapshot of a response")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, MerxObject)
        return self._merx_json == other._merx_json

    __hash__ = None  # type: ignore[assignment]  # equal by value and mutable underneath: unhashable

    def __repr__(self) -> str:
        shown = ", ".join(f"{attribute}={getattr(self, attribute)!r}" for _, attribute, _ in self._merx_fields[:12])
        more = ", ..." if len(self._merx_fields) > 12 else ""
        return f"{type(self).__name__}({shown}{more})"

    def _with_response(self: _ModelT, response: ResponseInfo) -> _ModelT:
        object.__setattr__(self, "last_response", response)
        return self


def register_fields(
    cls: Type[MerxObject],
    fields: Iterable[Tuple[str, str, Optional[Converter]]],
    *,
    required: Sequence[str] = (),
    constants: Optional[Mapping[str, Any]] = None,
) -> None:
    """Attach the field table to a generated class (after every class exists, so converters may
    refer to classes defined later in the module)."""
    cls._merx_fields = tuple(fields)
    cls._merx_required = tuple(required)
    cls._merx_constants = dict(constants or {})


def model(cls: Type[MerxObject]) -> Converter:
    """JSON object -> ``cls``; anything else is left as it is (the server is trusted, not checked)."""

    def convert(value: Any) -> Any:
        return cls(value) if isinstance(value, Mapping) else value

    return convert


def list_of(item: Converter) -> Converter:
    def convert(value: Any) -> Any:
        return [None if entry is None else item(entry) for entry in value] if isinstance(value, list) else value

    return convert


def dict_of(item: Converter) -> Converter:
    def convert(value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        return {key: None if entry is None else item(entry) for key, entry in value.items()}

    return convert


def one_of(variants: Sequence[Type[MerxObject]], *, fallback: Optional[Converter] = None) -> Converter:
    """A `oneOf` of objects: the first variant whose constants (``type: "order"``) match and whose
    required fields are all present; the fallback, or the plain JSON, when none does."""

    def matches(variant: Type[MerxObject], value: Mapping[str, Any]) -> bool:
        if any(value.get(name) != constant for name, constant in variant._merx_constants.items()):
            return False
        return all(name in value for name in variant._merx_required)

    def convert(value: Any) -> Any:
        if isinstance(value, Mapping):
            for variant in variants:
                if matches(variant, value):
                    return variant(value)
        return fallback(value) if fallback is not None else value

    return convert


def identity(value: Any) -> Any:
    return value
