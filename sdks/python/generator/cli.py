"""``python3 sdks/python/scripts/generate.py [--document FILE] [--check]``."""

from __future__ import annotations

import argparse
import difflib
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .document import Document, GeneratorError, load_document
from .naming import pascal
from .operations import read_operations, token_url
from .render import render_operations, render_resources, render_types
from .schema_types import TypeBuilder

SDK_ROOT = Path(__file__).resolve().parent.parent
REPO_ROOT = SDK_ROOT.parent.parent
PACKAGE = SDK_ROOT / "src" / "merx"
GENERATED = ("types.py", "_resources.py", "_operations.py")


def generate(raw_document: Dict) -> Dict[str, str]:
    """The generated modules' text by file name."""
    document = Document(raw_document)
    types = TypeBuilder(document)
    operations = read_operations(document, types)
    # The named schemas of error answers too (Problem, FieldError, OAuthError): the exceptions
    # expose them typed. Each error response narrows a base schema with allOf; the base is the type.
    for _, _, raw, _ in document.operations():
        for status, response in raw.get("responses", {}).items():
            schema = document.json_schema_of(response) if str(status)[:1] in ("4", "5") else None
            if isinstance(schema, dict):
                for part in [schema, *schema.get("allOf", [])]:
                    name = Document.schema_name(part)
                    if name is not None:
                        types.out_component(name)
    events: List[Tuple[str, str]] = []
    for name, operation in document.webhooks():
        schema = document.json_schema_of(operation.get("requestBody", {})) if operation.get("requestBody") else None
        if schema is None:
            continue
        event = types.out_type(schema, f"{pascal(name)}Event")
        if event.model:
            topic = types.constants_of(schema).get("topic", name)
            events.append((str(topic), event.model))
    files = {"_operations.py": render_operations(operations, token_url(document))}
    tags = {tag["name"]: tag["description"] for tag in raw_document.get("tags", []) if tag.get("name") and tag.get("description")}
    files["_resources.py"] = render_resources(operations, [*types.out_classes, *types.out_aliases, *types.param_dicts, *types.param_aliases], tags)
    # types.py last: rendering the resources may have created more types.
    files["types.py"] = render_types(types, events)
    return files


def write(files: Dict[str, str], target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (target / name).write_text(text, encoding="utf-8")


def stale(files: Dict[str, str], target: Path) -> List[str]:
    """Unified diffs of every committed file that differs from what the document generates."""
    diffs = []
    for name, text in files.items():
        path = target / name
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            diffs.append("".join(difflib.unified_diff(current.splitlines(True), text.splitlines(True), f"committed/{name}", f"generated/{name}")))
    return diffs


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the merx package's models and resources from the OpenAPI document.")
    parser.add_argument("--document", type=Path, help="the OpenAPI document as JSON (default: the built @merx/contracts)")
    parser.add_argument("--check", action="store_true", help="generate into a temporary directory and fail if the committed files differ")
    parser.add_argument("--out", type=Path, default=PACKAGE, help=f"where to write (default {PACKAGE})")
    arguments = parser.parse_args(argv)
    try:
        files = generate(load_document(arguments.document, REPO_ROOT))
    except GeneratorError as error:
        print(f"generate: {error}", file=sys.stderr)
        return 2
    if arguments.check:
        with tempfile.TemporaryDirectory() as scratch:
            write(files, Path(scratch))
            regenerated = {name: (Path(scratch) / name).read_text(encoding="utf-8") for name in files}
        diffs = stale(regenerated, arguments.out)
        for diff in diffs:
            sys.stdout.write(diff)
        if diffs:
            print(f"\nThe generated files are stale: run python3 {Path('sdks/python/scripts/generate.py')}", file=sys.stderr)
            return 1
        print("generated files are up to date")
        return 0
    write(files, arguments.out)
    print(f"wrote {', '.join(sorted(files))} to {arguments.out}")
    return 0
