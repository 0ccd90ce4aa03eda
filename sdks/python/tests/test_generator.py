"""The generator: the committed files match the document, and documents shaped differently from
today's (a webhooks section, oneOf inputs, allOf, nullable, odd names) still give a package that
works and passes mypy --strict."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

SDK_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(SDK_ROOT))

from generator.cli import generate, write  # noqa: E402
from generator.document import GeneratorError  # noqa: E402

MONEY = {"type": "string", "pattern": "^\\d{1,15}(\\.\\d{1,4})?$"}


def test_the_committed_files_are_what_the_document_generates() -> None:
    ran = subprocess.run([sys.executable, "scripts/generate.py", "--check"], cwd=SDK_ROOT, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr


def test_check_fails_on_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "merx"
    shutil.copytree(SDK_ROOT / "src" / "merx", stale)
    with (stale / "types.py").open("a") as types:
        types.write("# edited by hand\n")
    ran = subprocess.run([sys.executable, "scripts/generate.py", "--check", "--out", str(stale)], cwd=SDK_ROOT, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 1
    assert "-# edited by hand" in ran.stdout and "stale" in ran.stderr


def operation(operation_id: str, response: Dict[str, Any], **extra: Any) -> Dict[str, Any]:
    return {"operationId": operation_id, "security": [{"oauth2": []}], "responses": response, **extra}


def json_response(schema: Dict[str, Any], status: str = "200") -> Dict[str, Any]:
    return {status: {"description": "ok", "content": {"application/json": {"schema": schema}}}}


def ref(name: str) -> Dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


SYNTHETIC: Dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "synthetic", "version": "1"},
    "components": {
        "securitySchemes": {
            "oauth2": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "/token", "scopes": {}}}},
            "operator": {"type": "http", "scheme": "bearer"},
        },
        "schemas": {
            "Widget": {
                "type": "object",
                "description": "A widget.",
                "required": ["id", "object", "kind", "price", "tags", "meta", "owner", "parts", "nickname", "class", "to_dict"],
                "additionalProperties": False,
                "properties": {
                    "id": {"type": "string"},
                    "object": {"const": "widget"},
                    "kind": {"type": "string", "enum": ["a", "b"]},
                    "price": MONEY,
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "meta": {"type": "object", "additionalProperties": {"type": "integer"}},
                    "owner": {"oneOf": [ref("Owner"), {"type": "null"}]},
                    "parts": {"type": "array", "items": ref("Part")},
                    "nickname": {"type": ["string", "null"]},
                    "class": {"type": "string"},
                    "to_dict": {"type": "string"},
                },
            },
            "Owner": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
            "Part": {"oneOf": [ref("Bolt"), ref("Nut")]},
            "Bolt": {"type": "object", "required": ["type", "length"], "properties": {"type": {"const": "bolt"}, "length": {"type": "number"}}},
            "Nut": {"type": "object", "required": ["type", "size"], "properties": {"type": {"const": "nut"}, "size": {"type": "integer"}}},
            "WidgetBase": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "kind": {"type": "string", "enum": ["a", "b"]}}},
            "WidgetCreate": {
                "allOf": [
                    ref("WidgetBase"),
                    {"type": "object", "required": ["price"], "properties": {"price": MONEY, "parts": {"type": "array", "items": ref("PartInput")}}},
                ],
            },
            "PartInput": {"oneOf": [ref("BoltInput"), ref("NutInput")]},
            "BoltInput": {"type": "object", "additionalProperties": False, "required": ["type", "length"], "properties": {"type": {"const": "bolt"}, "length": {"type": "number"}}},
            "NutInput": {"type": "object", "additionalProperties": False, "required": ["type"], "properties": {"type": {"const": "nut"}, "size": {"type": "integer"}}},
            "WidgetList": {
                "type": "object",
                "required": ["object", "data", "has_more", "next_cursor"],
                "properties": {"object": {"const": "list"}, "data": {"type": "array", "items": ref("Widget")}, "has_more": {"type": "boolean"}, "next_cursor": {"type": ["string", "null"]}},
            },
            "WidgetsCreatedEvent": {
                "type": "object",
                "required": ["id", "topic", "data"],
                "properties": {"id": {"type": "string"}, "topic": {"const": "widgets.created"}, "data": {"type": "object", "required": ["object"], "properties": {"object": ref("Widget")}}},
            },
        },
    },
    "paths": {
        "/v1/widgets": {
            "post": operation(
                "widgets.create",
                json_response(ref("Widget"), "201"),
                requestBody={"required": True, "content": {"application/json": {"schema": ref("WidgetCreate")}}},
            ),
            "get": operation(
                "widgets.list",
                json_response(ref("WidgetList")),
                parameters=[
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                    {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                    {"name": "since", "in": "query", "schema": {"type": "string", "format": "date-time"}},
                ],
            ),
        },
        "/v1/widgets/{widget-id}": {
            "parameters": [{"name": "widget-id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": operation("widgets.retrieve", json_response(ref("Widget"))),
        },
        "/v1/widgets/{id}/parts": {
            "get": operation("widgets.parts.list", json_response({"type": "array", "items": ref("Part")}), parameters=[{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]),
        },
        "/v1/widgets/{id}/archive": {
            "post": operation("widgets.archiveAll", {"204": {"description": "done"}}, parameters=[{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]),
        },
        "/admin/widgets/purge": {"post": {"operationId": "widgets.admin.purge", "security": [{"operator": []}], "responses": {"204": {"description": "purged"}}}},
        "/token": {
            "post": {
                "operationId": "oauth.token",
                "security": [],
                "requestBody": {"content": {"application/x-www-form-urlencoded": {"schema": {"type": "object"}}}},
                "responses": json_response({"type": "object"}),
            }
        },
        "/health": {"get": {"operationId": "health.retrieve", "security": [], "responses": {"200": {"description": "ok", "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
    },
    "webhooks": {
        "widgets.created": {"post": {"requestBody": {"content": {"application/json": {"schema": ref("WidgetsCreatedEvent")}}}, "responses": {"200": {"description": "ok"}}}},
    },
}

EXERCISE = """
import merx.types as t
from merx import Merx, webhooks
from merx._operations import OPERATIONS, TOKEN_PATH
widget = t.Widget({"id": "w1", "object": "widget", "kind": "a", "price": "1.50", "tags": ["x"], "meta": {"n": 1},
                   "owner": {"name": "Ada"}, "parts": [{"type": "nut", "size": 3}, {"type": "bolt", "length": 2.5}],
                   "nickname": None, "class": "premium", "to_dict": "kept"})
assert isinstance(widget.owner, t.Owner) and widget.owner.name == "Ada"
assert [type(p).__name__ for p in widget.parts] == ["Nut", "Bolt"]
assert str(widget.price_decimal) == "1.50" and widget.class_ == "premium" and widget.to_dict_ == "kept"
event = webhooks.construct_event({"id": "e1", "topic": "widgets.created", "data": {"object": widget.to_dict()}})
assert isinstance(event, t.WidgetsCreatedEvent) and isinstance(event.data.object, t.Widget)
assert TOKEN_PATH == "/token"
client = Merx("mx_test_a_b")
assert callable(client.widgets.archive_all) and callable(client.widgets.admin.purge) and callable(client.widgets.parts.list)
assert not hasattr(client, "oauth")  # the token endpoint is the client's own business
print("ok")
"""

USAGE = """
from typing import List
from merx import Merx, SyncPage
from merx.types import Widget, Part, PartInputParam, WebhookEvent, WidgetsCreatedEvent
client = Merx("mx_test_a_b")
widget: Widget = client.widgets.create(name="w", price="1.00", parts=[{"type": "bolt", "length": 1.0}, {"type": "nut"}])
page: SyncPage[Widget] = client.widgets.list(limit=10, since="2026-01-01T00:00:00.000Z")
parts: List[Part] = client.widgets.parts.list("w1")
client.widgets.archive_all("w1")
client.widgets.retrieve("w1")
text: str = client.health.retrieve()
client.widgets.create(name="w", price="1.00", parts=[{"type": "screw"}])  # type: ignore[typeddict-item]
event: WebhookEvent = WidgetsCreatedEvent({})
"""


def test_a_differently_shaped_document_generates_a_working_typed_package(tmp_path: Path, mypy_cache: Path) -> None:
    package = tmp_path / "merx"
    shutil.copytree(SDK_ROOT / "src" / "merx", package, ignore=shutil.ignore_patterns("__pycache__"))
    files = generate(json.loads(json.dumps(SYNTHETIC)))
    write(files, package)
    types, resources = files["types.py"], files["_resources.py"]

    assert "    owner: Optional[Owner]" in types
    assert "    parts: List[Part]" in types and "Part = Union[Bolt, Nut]" in types
    assert "    meta: Dict[str, int]" in types and "    nickname: Optional[str]" in types
    assert "    class_: str" in types and "    to_dict_: str" in types
    assert "def price_decimal(self) -> Decimal:" in types
    assert "PartInputParam = Union[BoltInputParam, NutInputParam]" in types
    assert "WebhookEvent = Union[WidgetsCreatedEvent, UntypedWebhookEvent]" in types
    assert '"widgets.created": WidgetsCreatedEvent,' in types
    assert "        price: Money," in resources and "        parts: Union[Sequence[PartInputParam], NotGiven] = NOT_GIVEN," in resources
    assert 'fill_path("/v1/widgets/{widget-id}", **{"widget-id": widget_id})' in resources
    assert "    def archive_all(" in resources and 'auth="operator"' in resources
    assert "        since: Union[Timestamp, NotGiven] = NOT_GIVEN," in resources
    assert ") -> SyncPage[Widget]:" in resources and ") -> AsyncPaginator[Widget]:" in resources

    ran = subprocess.run([sys.executable, "-c", EXERCISE], env={"PYTHONPATH": str(tmp_path)}, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and ran.stdout.strip() == "ok", ran.stdout + ran.stderr

    (tmp_path / "usage.py").write_text(USAGE)
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(mypy_cache), "merx", "usage.py"],
        cwd=tmp_path,
        env={"MYPYPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize(
    "paths, message",
    [
        ({"/a": {"get": {"operationId": "things.list", "responses": {}}}, "/b": {"get": {"operationId": "things.list", "responses": {}}}}, "both client.things.list"),
        ({"/a": {"get": {"operationId": "things.stats", "responses": {}}}, "/b": {"get": {"operationId": "things.stats.retrieve", "responses": {}}}}, "both a method and a group"),
        ({"/a": {"get": {"operationId": "ping", "responses": {}}}}, "<resource>.<verb>"),
        ({"/a": {"get": {"responses": {}}}}, "no operationId"),
    ],
)
def test_names_that_cannot_become_one_api_are_refused(paths: Dict[str, Any], message: str) -> None:
    with pytest.raises(GeneratorError, match=message.replace(".", "\\.").replace("<", ".").replace(">", ".")):
        generate({"openapi": "3.1.0", "paths": paths, "components": {}})
