"""Reading the OpenAPI document: loading it and following its local ``$ref``s."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Tuple

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

# The contracts package builds the document in TypeScript; this prints it as JSON.
_PRINT_DOCUMENT = (
    "const { openApiDocument } = await import('@merx/contracts');"
    "process.stdout.write(JSON.stringify(openApiDocument));"
)


class GeneratorError(Exception):
    """The document cannot be turned into a consistent API (a name clash, a broken $ref)."""


def load_document(path: Optional[Path], repo_root: Path) -> Dict[str, Any]:
    """The document from a JSON file, else from the built ``@merx/contracts`` (``npm run build``)."""
    if path is not None:
        loaded: Dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return loaded
    try:
        printed = subprocess.run(
            ["node", "--input-type=module", "-e", _PRINT_DOCUMENT],
            cwd=repo_root,
            check=True,
            capture_output=True,
            text=True,
        )
    except (OSError, subprocess.CalledProcessError) as error:
        stderr = getattr(error, "stderr", "") or ""
        raise GeneratorError(f"could not read the document from @merx/contracts (run `npm run build` first): {error}\n{stderr}") from error
    document: Dict[str, Any] = json.loads(printed.stdout)
    return document


class Document:
    def __init__(self, raw: Dict[str, Any]) -> None:
        self.raw = raw
        self.schemas: Dict[str, Any] = raw.get("components", {}).get("schemas", {})

    def follow(self, node: Any) -> Any:
        """``node`` with every ``$ref`` followed (for parameters, request bodies, responses)."""
        seen = set()
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if ref in seen:
                raise GeneratorError(f"circular $ref {ref}")
            seen.add(ref)
            node = self.pointer(ref)
        return node

    def pointer(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise GeneratorError(f"only local $refs are supported, not {ref}")
        node: Any = self.raw
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                raise GeneratorError(f"$ref {ref} points nowhere")
            node = node[part]
        return node

    @staticmethod
    def schema_name(node: Any) -> Optional[str]:
        """The component name when ``node`` is ``{"$ref": "#/components/schemas/<name>"}``."""
        if isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/components/schemas/"):
            name: str = node["$ref"][len("#/components/schemas/") :]
            return name
        return None

    def operations(self) -> Iterator[Tuple[str, str, Dict[str, Any], Dict[str, Any]]]:
        """(path, method, operation, path item) in document order."""
        for path, item in self.raw.get("paths", {}).items():
            item = self.follow(item)
            for method, operation in item.items():
                if method in HTTP_METHODS and isinstance(operation, dict):
                    yield path, method, operation, item

    def webhooks(self) -> Iterator[Tuple[str, Dict[str, Any]]]:
        """(webhook name, its ``post`` operation) of the top-level ``webhooks`` section, if any."""
        for name, item in self.raw.get("webhooks", {}).items():
            item = self.follow(item)
            operation = item.get("post")
            if isinstance(operation, dict):
                yield name, operation

    def json_schema_of(self, holder: Dict[str, Any]) -> Optional[Any]:
        """The JSON schema of a request body or response (``application/json`` or ``*+json``)."""
        content = self.follow(holder).get("content") or {}
        for media_type in sorted(content, key=lambda name: (name != "application/json", name)):
            if media_type == "application/json" or media_type.endswith("+json"):
                schema: Any = content[media_type].get("schema", {})
                return schema
        return None

    def content_types(self, holder: Dict[str, Any]) -> Tuple[str, ...]:
        return tuple((self.follow(holder).get("content") or {}).keys())
