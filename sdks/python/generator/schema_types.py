"""JSON Schema -> Python types, in two directions.

Responses become ``MerxObject`` classes with typed attributes (``Product``), parameters become
``TypedDict``s (``RecordInputParam``) or plain annotations. Both understand ``$ref``, ``oneOf`` /
``anyOf`` (a ``Union``; a runtime converter picks the variant by its constants and required
fields), ``allOf`` (merged), ``enum`` / ``const`` (``Literal``), nullable types (``type: [x,
"null"]``, ``Optional``), ``additionalProperties`` (``Dict[str, X]``) and arrays. ``if`` /
``then`` has no Python equivalent and is ignored. An inline object shaped exactly like a named
component (descriptions aside) is that component's class, so the same thing has one name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

from .document import Document, GeneratorError
from .naming import identifier, pascal, python_literal

# Names the generated module imports or MerxObject defines: a property of the same name gets a
# trailing underscore as its attribute name so it cannot shadow them.
RESERVED_ATTRIBUTES = {
    "to_dict", "to_json", "from_dict", "last_response",
    "str", "int", "float", "bool", "Any", "Dict", "List", "Literal", "Mapping", "Optional", "Sequence", "Union",
    "Decimal", "Money", "MerxObject", "TypedDict",
}
_ANNOTATION_ONLY_KEYS = {"description", "examples", "example", "title", "default", "deprecated", "readOnly", "writeOnly", "$comment"}
# Money is a decimal string: a pattern that accepts these and refuses those is a money pattern.
_DECIMALS = ("0", "19", "19.99", "1234567.5")
_NOT_DECIMALS = ("", "abc", "-1", "1e5", "1.2.3", "19,99", " 1")


@dataclass
class OutType:
    annotation: str
    converter: Optional[str] = None  # runtime converter expression; None = the JSON value as is
    model: Optional[str] = None  # the class name when the type is exactly one model class


@dataclass
class OutField:
    json_name: str
    attribute: str
    type: OutType
    description: Optional[str]
    money: bool


@dataclass
class OutClass:
    name: str
    description: Optional[str]
    fields: List[OutField] = field(default_factory=list)
    required: List[str] = field(default_factory=list)
    constants: Dict[str, Any] = field(default_factory=dict)


@dataclass
class ParamField:
    key: str
    annotation: str
    required: bool
    description: Optional[str]


@dataclass
class ParamDict:
    name: str
    description: Optional[str]
    fields: List[ParamField] = field(default_factory=list)


@dataclass
class Alias:
    name: str
    annotation: str
    description: Optional[str]


def without_null(schema: Dict[str, Any]) -> Tuple[Dict[str, Any], bool]:
    """The schema with ``null`` taken out of its type, and whether it was nullable."""
    nullable = bool(schema.get("nullable"))
    types = schema.get("type")
    if isinstance(types, list) and "null" in types:
        rest = [kind for kind in types if kind != "null"]
        schema = {**schema, "type": rest[0] if len(rest) == 1 else rest}
        nullable = True
    if isinstance(schema.get("enum"), list) and None in schema["enum"]:
        schema = {**schema, "enum": [value for value in schema["enum"] if value is not None]}
        nullable = True
    for combinator in ("oneOf", "anyOf"):
        variants = schema.get(combinator)
        if isinstance(variants, list) and any(variant == {"type": "null"} for variant in variants):
            kept = [variant for variant in variants if variant != {"type": "null"}]
            schema = {key: value for key, value in schema.items() if key != combinator}
            schema = {**schema, **kept[0]} if len(kept) == 1 else {**schema, combinator: kept}
            nullable = True
    schema = {key: value for key, value in schema.items() if key != "nullable"}
    return schema, nullable


def is_money(schema: Dict[str, Any]) -> bool:
    pattern = schema.get("pattern")
    if schema.get("type") != "string" or not isinstance(pattern, str):
        return False
    try:
        compiled = re.compile(pattern)
    except re.error:
        return False
    return all(compiled.search(sample) for sample in _DECIMALS) and not any(compiled.search(sample) for sample in _NOT_DECIMALS)


def _optional(annotation: str) -> str:
    return annotation if annotation.startswith("Optional[") or annotation in ("Any", "None") else f"Optional[{annotation}]"


def _union(annotations: List[str]) -> str:
    unique = list(dict.fromkeys(annotations))
    if "Any" in unique:
        return "Any"
    return unique[0] if len(unique) == 1 else f"Union[{', '.join(unique)}]"


def _literal(values: List[Any]) -> str:
    return f"Literal[{', '.join(python_literal(value) for value in values)}]"


def _shape_key(schema: Any) -> str:
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: strip(value) for key, value in node.items() if key not in _ANNOTATION_ONLY_KEYS}
        if isinstance(node, list):
            return [strip(item) for item in node]
        return node

    stripped, _ = without_null(strip(schema)) if isinstance(schema, dict) else (schema, False)
    return json.dumps(stripped, sort_keys=True)


def _description(schema: Dict[str, Any]) -> Optional[str]:
    text = schema.get("description")
    return text.strip() if isinstance(text, str) and text.strip() else None


class TypeBuilder:
    def __init__(self, document: Document) -> None:
        self.document = document
        self.out_classes: Dict[str, OutClass] = {}
        self.out_aliases: Dict[str, Alias] = {}
        self.param_dicts: Dict[str, ParamDict] = {}
        self.param_aliases: Dict[str, Alias] = {}
        self._names: Set[str] = set()
        # Inline types never take a component's name, whichever is generated first.
        self._component_names = {pascal(name) for name in document.schemas} | {f"{pascal(name)}Param" for name in document.schemas}
        self._component_out: Dict[str, OutType] = {}
        self._component_in: Dict[str, str] = {}
        self._object_components: Dict[str, str] = {}
        for name, schema in document.schemas.items():
            if self._is_object_class(schema):
                self._object_components.setdefault(_shape_key(self.merged(schema)), name)

    # Shared ------------------------------------------------------------------------------

    def unique_name(self, wanted: str, *, component: bool = False) -> str:
        taken = self._names | RESERVED_ATTRIBUTES | (set() if component else self._component_names)
        name, counter = wanted, 2
        while name in taken:
            name, counter = f"{wanted}{counter}", counter + 1
        self._names.add(name)
        return name

    def merged(self, schema: Any) -> Dict[str, Any]:
        """``schema`` with ``$ref`` followed and ``allOf`` folded in (properties and required
        combined); ``if``/``then``/``else``/``not`` dropped."""
        schema = self.document.follow(schema)
        if not isinstance(schema, dict):
            return {}
        result = {key: value for key, value in schema.items() if key not in ("allOf", "if", "then", "else", "not")}
        for part in schema.get("allOf", []):
            part = self.merged(part)
            properties = {**part.get("properties", {}), **result.get("properties", {})}
            required = list(dict.fromkeys([*result.get("required", []), *part.get("required", [])]))
            for key, value in part.items():
                if key not in ("properties", "required", "description"):
                    result.setdefault(key, value)
            if properties:
                result["properties"] = properties
            if required:
                result["required"] = required
        return result

    def _component(self, name: str) -> Any:
        schema = self.document.schemas.get(name)
        if schema is None:
            raise GeneratorError(f"no component schema {name}")
        return schema

    def _is_object_class(self, schema: Any) -> bool:
        merged = self.merged(schema)
        bare, _ = without_null(merged)
        kinds = bare.get("type")
        return bool(bare.get("properties")) and (kinds in (None, "object")) and not bare.get("oneOf") and not bare.get("anyOf")

    def constants_of(self, schema: Any) -> Dict[str, Any]:
        """Properties with one possible value (``const`` or a one-value ``enum``): discriminators."""
        constants: Dict[str, Any] = {}
        for name, prop in self.merged(schema).get("properties", {}).items():
            prop = self.document.follow(prop)
            if isinstance(prop, dict) and "const" in prop:
                constants[name] = prop["const"]
            elif isinstance(prop, dict) and isinstance(prop.get("enum"), list) and len(prop["enum"]) == 1:
                constants[name] = prop["enum"][0]
        return constants

    def _variant_hint(self, hint: str, variant: Any, index: int) -> str:
        named = Document.schema_name(variant)
        if named:
            return pascal(named)
        constants = self.constants_of(variant)
        text = next((str(value) for value in constants.values() if isinstance(value, str)), None)
        return f"{hint}{pascal(text)}" if text else f"{hint}Variant{index + 1}"

    # Responses ---------------------------------------------------------------------------

    def out_component(self, name: str) -> OutType:
        if name in self._component_out:
            return self._component_out[name]
        schema = self._component(name)
        if self._is_object_class(schema):
            class_name = self.unique_name(pascal(name), component=True)
            out = OutType(class_name, f"_model({class_name})", class_name)
            self._component_out[name] = out  # before the fields: a schema may contain itself
            self._build_class(class_name, schema)
            return out
        placeholder = OutType(pascal(name))
        self._component_out[name] = placeholder
        inner = self.out_type(schema, pascal(name))
        if inner.annotation in ("Any", "str", "int", "float", "bool") or inner.model:
            self._component_out[name] = inner
            return inner
        alias = self.unique_name(pascal(name), component=True)
        self.out_aliases[alias] = Alias(alias, inner.annotation, _description(self.merged(schema)))
        out = OutType(alias, inner.converter)
        self._component_out[name] = out
        return out

    def out_type(self, schema: Any, hint: str) -> OutType:
        named = Document.schema_name(schema)
        if named is not None:
            return self.out_component(named)
        schema = self.merged(schema)
        bare, nullable = without_null(schema)
        out = self._out_bare(bare, hint)
        return OutType(_optional(out.annotation), out.converter) if nullable else out

    def _out_bare(self, schema: Dict[str, Any], hint: str) -> OutType:
        if "$ref" in schema:  # what was left of a nullable oneOf: [{$ref}, {type: null}]
            return self.out_type(schema, hint)
        if "const" in schema:
            return OutType(_literal([schema["const"]]) if schema["const"] is not None else "None")
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return OutType(_literal(schema["enum"]))
        variants = schema.get("oneOf") or schema.get("anyOf")
        if isinstance(variants, list) and variants:
            return self._out_union(variants, hint)
        kinds = schema.get("type")
        if isinstance(kinds, list):
            return OutType(_union([self._out_bare({**schema, "type": kind}, hint).annotation for kind in kinds]))
        if kinds == "object" or (kinds is None and "properties" in schema):
            return self._out_object(schema, hint)
        if kinds == "array":
            item = self.out_type(schema.get("items", {}), f"{hint}Item")
            return OutType(f"List[{item.annotation}]", f"_list_of({item.converter})" if item.converter else None)
        return OutType({"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}.get(str(kinds), "Any"))

    def _out_union(self, variants: List[Any], hint: str) -> OutType:
        types = [self.out_type(variant, self._variant_hint(hint, variant, index)) for index, variant in enumerate(variants)]
        models = [out.model for out in types if out.model]
        converter = f"_one_of(({', '.join(models)},))" if models else None
        return OutType(_union([out.annotation for out in types]), converter)

    def _out_object(self, schema: Dict[str, Any], hint: str) -> OutType:
        if schema.get("properties"):
            component = self._object_components.get(_shape_key(schema))
            if component is not None:
                return self.out_component(component)
            class_name = self.unique_name(hint)
            self._build_class(class_name, schema)
            return OutType(class_name, f"_model({class_name})", class_name)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            value = self.out_type(extra, f"{hint}Value")
            return OutType(f"Dict[str, {value.annotation}]", f"_dict_of({value.converter})" if value.converter else None)
        return OutType("Dict[str, Any]")

    def _build_class(self, class_name: str, schema: Any) -> None:
        merged = self.merged(schema)
        bare, _ = without_null(merged)
        spec = OutClass(class_name, _description(bare), required=list(bare.get("required", [])), constants=self.constants_of(bare))
        self.out_classes[class_name] = spec
        taken: Set[str] = set()
        for json_name, prop in bare.get("properties", {}).items():
            attribute = identifier(json_name, RESERVED_ATTRIBUTES | taken)
            taken.add(attribute)
            prop_type = self.out_type(prop, f"{class_name}{pascal(json_name)}")
            if json_name not in spec.required:
                prop_type = OutType(_optional(prop_type.annotation), prop_type.converter, prop_type.model)
            resolved, _ = without_null(self.merged(prop))
            spec.fields.append(OutField(json_name, attribute, prop_type, _description(resolved), is_money(resolved)))

    # Parameters --------------------------------------------------------------------------

    def in_component(self, name: str) -> str:
        if name in self._component_in:
            return self._component_in[name]
        schema = self._component(name)
        if self._is_object_class(schema):
            dict_name = self.unique_name(f"{pascal(name)}Param", component=True)
            self._component_in[name] = dict_name
            self._build_param_dict(dict_name, schema)
            return dict_name
        self._component_in[name] = f"{pascal(name)}Param"
        inner = self.in_type(schema, f"{pascal(name)}Param")
        if inner in ("Any", "str", "int", "float", "bool", "Money") or inner.endswith("Param") and "[" not in inner:
            self._component_in[name] = inner
            return inner
        alias = self.unique_name(f"{pascal(name)}Param", component=True)
        self.param_aliases[alias] = Alias(alias, inner, _description(self.merged(schema)))
        self._component_in[name] = alias
        return alias

    def in_type(self, schema: Any, hint: str) -> str:
        named = Document.schema_name(schema)
        if named is not None:
            return self.in_component(named)
        schema = self.merged(schema)
        bare, nullable = without_null(schema)
        annotation = self._in_bare(bare, hint)
        return _optional(annotation) if nullable else annotation

    def _in_bare(self, schema: Dict[str, Any], hint: str) -> str:
        if "$ref" in schema:
            return self.in_type(schema, hint)
        if "const" in schema:
            return _literal([schema["const"]]) if schema["const"] is not None else "None"
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return _literal(schema["enum"])
        variants = schema.get("oneOf") or schema.get("anyOf")
        if isinstance(variants, list) and variants:
            base = hint[: -len("Param")] if hint.endswith("Param") else hint
            return _union([self.in_type(variant, f"{self._variant_hint(base, variant, index)}Param") for index, variant in enumerate(variants)])
        kinds = schema.get("type")
        if isinstance(kinds, list):
            return _union([self._in_bare({**schema, "type": kind}, hint) for kind in kinds])
        if kinds == "object" or (kinds is None and "properties" in schema):
            if schema.get("properties") and schema.get("additionalProperties", True) is not False:
                # mypy refuses keys a TypedDict does not declare, so an object that takes keys
                # of its own besides the documented ones (a record's data) stays a mapping.
                return "Mapping[str, Any]"
            if schema.get("properties"):
                component = self._object_components.get(_shape_key(schema))
                if component is not None:
                    return self.in_component(component)
                dict_name = self.unique_name(hint if hint.endswith("Param") else f"{hint}Param")
                self._build_param_dict(dict_name, schema)
                return dict_name
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                return f"Mapping[str, {self.in_type(extra, hint)}]"
            return "Mapping[str, Any]"
        if kinds == "array":
            item = self.in_type(schema.get("items", {}), f"{hint[: -len('Param')] if hint.endswith('Param') else hint}ItemParam")
            # Sequence[str] would accept a bare string; lists of strings are asked for as lists.
            return f"List[{item}]" if item == "str" or item.startswith("Literal[\"") else f"Sequence[{item}]"
        if kinds == "string":
            return "Money" if is_money(schema) else "str"
        return {"integer": "int", "number": "float", "boolean": "bool", "null": "None"}.get(str(kinds), "Any")

    def _build_param_dict(self, dict_name: str, schema: Any) -> None:
        bare, _ = without_null(self.merged(schema))
        spec = ParamDict(dict_name, _description(bare))
        self.param_dicts[dict_name] = spec
        required = set(bare.get("required", []))
        base = dict_name[: -len("Param")] if dict_name.endswith("Param") else dict_name
        for key, prop in bare.get("properties", {}).items():
            annotation = self.in_type(prop, f"{base}{pascal(key)}Param")
            resolved, _ = without_null(self.merged(prop))
            spec.fields.append(ParamField(key, annotation, key in required, _description(resolved)))
