"""Each operation of the document as a method: its name, arguments, auth and result.

The method is named from the ``operationId``: ``webhooks.deadLetters.replay`` is
``client.webhooks.dead_letters.replay(...)``. Path parameters are positional, everything else
keyword-only; a JSON body whose schema is an object becomes one keyword argument per property.
The client credentials token endpoint is the client's own business (it exchanges the API key
there), so it is recorded but not offered as a method.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

from .document import Document, GeneratorError
from .naming import identifier, pascal, snake
from .schema_types import OutType, TypeBuilder, without_null

# Keyword arguments every method may take besides the operation's own.
OPTION_ARGUMENTS = ("idempotency_key", "if_match", "extra_headers", "timeout", "max_retries")
_OPTION_HEADERS = {"idempotency-key": "idempotency_key", "if-match": "if_match"}


@dataclass
class Argument:
    name: str
    wire: str
    annotation: str
    required: bool
    description: Optional[str]
    location: str  # path | query | header | body


@dataclass
class Result:
    kind: str  # model | json | none | text | page
    annotation: str
    converter: Optional[str] = None  # model: the class; page: the item converter; json: a converter


@dataclass
class Operation:
    operation_id: str
    method: str
    path: str
    attribute_path: Tuple[str, ...]
    auth: str  # oauth2 | operator | none
    summary: Optional[str]
    description: Optional[str]
    arguments: List[Argument] = field(default_factory=list)
    body_argument: Optional[str] = None  # the argument holding the whole body, if not split in fields
    has_json_body: bool = False
    takes_if_match: bool = False
    internal: bool = False
    result: Result = field(default_factory=lambda: Result("none", "None"))

    @property
    def takes_idempotency_key(self) -> bool:
        return self.method == "POST"


def token_url(document: Document) -> Optional[str]:
    """The client credentials token URL of the document's OAuth 2.0 scheme."""
    for scheme in document.raw.get("components", {}).get("securitySchemes", {}).values():
        scheme = document.follow(scheme)
        flow = (scheme.get("flows") or {}).get("clientCredentials") if scheme.get("type") == "oauth2" else None
        if flow and isinstance(flow.get("tokenUrl"), str):
            url: str = flow["tokenUrl"]
            return url
    return None


def _auth_kind(document: Document, operation: Dict[str, Any]) -> str:
    requirements = operation.get("security", document.raw.get("security", []))
    schemes = document.raw.get("components", {}).get("securitySchemes", {})
    for requirement in requirements:
        for name in requirement:
            scheme = document.follow(schemes.get(name, {}))
            if scheme.get("type") == "oauth2":
                return "oauth2"
            if scheme.get("type") == "http" and str(scheme.get("scheme", "")).lower() == "bearer":
                # A bearer credential that is not an OAuth token: the operator's configured token.
                return "operator"
        if not requirement:
            return "none"
    if requirements:
        raise GeneratorError(f"{operation.get('operationId')}: no supported security scheme in {requirements}")
    return "none"


def _parameters(document: Document, path_item: Dict[str, Any], operation: Dict[str, Any]) -> List[Dict[str, Any]]:
    merged: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for raw in [*path_item.get("parameters", []), *operation.get("parameters", [])]:
        parameter = document.follow(raw)
        merged[(parameter["name"], parameter["in"])] = parameter
    return list(merged.values())


def _claim(name: str, taken: Set[str], prefix: str) -> str:
    chosen = identifier(name, {"self"})
    if chosen in taken:
        chosen = identifier(f"{prefix}_{name}", {"self"})
    if chosen in taken:
        raise GeneratorError(f"argument name {name} is used twice")
    taken.add(chosen)
    return chosen


def _is_page(types: TypeBuilder, schema: Any, query_names: Set[str]) -> Optional[Any]:
    """The items schema when the response is one page of a cursor-paginated list."""
    properties = types.merged(schema).get("properties", {})
    data = without_null(types.merged(properties.get("data", {})))[0]
    if "cursor" in query_names and {"data", "has_more", "next_cursor"} <= set(properties) and data.get("type") == "array":
        return data.get("items", {})
    return None


def _result(document: Document, types: TypeBuilder, operation: Dict[str, Any], hint: str, query_names: Set[str]) -> Result:
    responses = operation.get("responses", {})
    success = sorted(code for code in responses if str(code).startswith("2"))
    if not success:
        return Result("none", "None")
    response = responses[success[0]]
    schema = document.json_schema_of(response)
    if schema is None:
        media = document.content_types(response)
        if any(kind.startswith("text/") for kind in media):
            return Result("text", "str")
        return Result("none", "None")
    items = _is_page(types, schema, query_names)
    if items is not None:
        item: OutType = types.out_type(items, f"{hint}Item")
        return Result("page", item.annotation, item.model or item.converter or "_identity")
    out = types.out_type(schema, f"{hint}Response")
    if out.model:
        return Result("model", out.annotation, out.model)
    return Result("json", out.annotation, out.converter or "_identity")


def read_operations(document: Document, types: TypeBuilder) -> List[Operation]:
    token_path = token_url(document)
    operations = []
    for path, method, raw, path_item in document.operations():
        operation_id = raw.get("operationId")
        if not isinstance(operation_id, str) or not operation_id:
            raise GeneratorError(f"{method.upper()} {path} has no operationId")
        attribute_path = tuple(identifier(snake(segment)) for segment in operation_id.split("."))
        internal = method == "post" and path == token_path
        spec = Operation(
            operation_id=operation_id,
            method=method.upper(),
            path=path,
            attribute_path=attribute_path,
            auth=_auth_kind(document, raw),
            summary=raw.get("summary"),
            description=raw.get("description"),
            internal=internal,
        )
        operations.append(spec)
        if internal:
            continue
        hint = pascal(operation_id)
        taken: Set[str] = set(OPTION_ARGUMENTS) | {"body"}
        parameters = _parameters(document, path_item, raw)
        query_names = {parameter["name"] for parameter in parameters if parameter["in"] == "query"}
        for parameter in sorted(parameters, key=lambda item: (item["in"] != "path", not item.get("required", False))):
            location = parameter["in"]
            if location == "cookie":
                raise GeneratorError(f"{operation_id}: cookie parameters are not supported")
            option = _OPTION_HEADERS.get(parameter["name"].lower()) if location == "header" else None
            if option == "if_match":
                spec.takes_if_match = True
            if option:
                continue
            schema = parameter.get("schema", {})
            annotation = types.in_type(schema, f"{hint}{pascal(parameter['name'])}Param")
            resolved = without_null(types.merged(schema))[0]
            if location == "query" and resolved.get("format") == "date-time":
                annotation = "Timestamp"
            spec.arguments.append(
                Argument(
                    _claim(snake(parameter["name"]), taken, location),
                    parameter["name"],
                    annotation,
                    location == "path" or bool(parameter.get("required")),
                    parameter.get("description") or resolved.get("description"),
                    location,
                )
            )
        request_body = raw.get("requestBody")
        if request_body is not None:
            body_schema = document.json_schema_of(request_body)
            if body_schema is None:
                raise GeneratorError(f"{operation_id}: only JSON request bodies are supported, not {document.content_types(request_body)}")
            spec.has_json_body = True
            body_required = bool(document.follow(request_body).get("required"))
            merged = types.merged(body_schema)
            # Nested types of a named body are named after it (ThrottleOverridesBurstParam).
            body_name = Document.schema_name(body_schema)
            body_hint = pascal(body_name) if body_name else hint
            if merged.get("properties") and not merged.get("oneOf") and not merged.get("anyOf"):
                required = set(merged.get("required", []))
                for key, prop in merged["properties"].items():
                    resolved = without_null(types.merged(prop))[0]
                    spec.arguments.append(
                        Argument(
                            _claim(snake(key) if key.isidentifier() else key, taken, "body"),
                            key,
                            types.in_type(prop, f"{body_hint}{pascal(key)}Param"),
                            key in required,
                            resolved.get("description"),
                            "body",
                        )
                    )
            else:
                spec.body_argument = "body"
                spec.arguments.append(Argument("body", "", types.in_type(body_schema, f"{hint}Body"), body_required, merged.get("description"), "body"))
        spec.result = _result(document, types, raw, hint, query_names)
    _check_names(operations)
    return operations


def _check_names(operations: List[Operation]) -> None:
    """A name may not be both a method and a group of methods, or two operations' method."""
    methods: Dict[Tuple[str, ...], str] = {}
    groups: Set[Tuple[str, ...]] = set()
    for operation in operations:
        if operation.internal:
            continue
        path = operation.attribute_path
        if len(path) < 2:
            raise GeneratorError(f"{operation.operation_id}: an operationId is <resource>.<verb>")
        if path in methods:
            raise GeneratorError(f"{operation.operation_id} and {methods[path]} are both client.{'.'.join(path)}")
        methods[path] = operation.operation_id
        groups.update(path[:end] for end in range(1, len(path)))
    clash = groups & set(methods)
    if clash:
        raise GeneratorError(f"client.{'.'.join(sorted(clash)[0])} would be both a method and a group of methods")
