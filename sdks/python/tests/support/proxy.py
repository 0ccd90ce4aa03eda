"""A small HTTP proxy of our own in front of the real Merx, to inject faults on purpose.

The SDK is pointed at the proxy's URL and talks HTTP to it exactly as to Merx. Every request is
recorded (method, path, headers, body), and queued faults apply to the next matching requests:

- ``respond``: answer with a status and headers of our choosing without forwarding (503, 429, ...);
- ``drop``: close the connection before forwarding: Merx never sees the request;
- ``cut_after_forward``: forward, let Merx do the work, then close the connection without
  answering: the client cannot know the request succeeded;
- ``delay``: hold the request for a while before forwarding (timeouts);
- ``corrupt_body``: forward a truncated body, so Merx itself answers 400.
"""

from __future__ import annotations

import http.client
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Mapping, Optional
from urllib.parse import urlsplit

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection", "content-length"}


@dataclass
class Fault:
    kind: str  # respond | drop | cut_after_forward | delay | corrupt_body
    method: Optional[str] = None
    path_prefix: Optional[str] = None
    status: int = 503
    headers: Dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    seconds: float = 0.0

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method == method) and (self.path_prefix is None or path.startswith(self.path_prefix))


@dataclass
class Seen:
    method: str
    path: str
    headers: Dict[str, str]
    body: bytes
    fault: Optional[str]
    at: float  # time.monotonic() when the request arrived


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        target = urlsplit(upstream)
        self._upstream = (target.hostname or "127.0.0.1", target.port or 80)
        self._lock = threading.Lock()
        self._faults: List[Fault] = []
        self._seen: List[Seen] = []
        self._released = threading.Event()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # quiet
                pass

            def _handle(self) -> None:
                proxy._handle(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def inject(self, kind: str, *, times: int = 1, method: Optional[str] = None, path: Optional[str] = None, status: int = 503,
               headers: Optional[Mapping[str, str]] = None, body: bytes = b"", seconds: float = 0.0) -> None:
        """Queue ``times`` faults of ``kind`` for the next requests matching ``method`` and ``path`` (a prefix)."""
        with self._lock:
            for _ in range(times):
                self._faults.append(Fault(kind, method, path, status, dict(headers or {}), body, seconds))

    def seen(self, method: Optional[str] = None, path: Optional[str] = None) -> List[Seen]:
        with self._lock:
            return [s for s in self._seen if (method is None or s.method == method) and (path is None or s.path.split("?")[0] == path)]

    def pending_faults(self) -> int:
        with self._lock:
            return len(self._faults)

    def close(self) -> None:
        self._released.set()
        self._server.shutdown()
        self._server.server_close()

    def _take_fault(self, method: str, path: str) -> Optional[Fault]:
        with self._lock:
            for index, fault in enumerate(self._faults):
                if fault.matches(method, path):
                    return self._faults.pop(index)
        return None

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        body = handler.rfile.read(length) if length else b""
        method, path = handler.command, handler.path
        fault = self._take_fault(method, path.split("?")[0])
        with self._lock:
            self._seen.append(Seen(method, path, {k.lower(): v for k, v in handler.headers.items()}, body, fault.kind if fault else None, time.monotonic()))
        if fault is not None and fault.kind == "respond":
            self._answer(handler, fault.status, list(fault.headers.items()), fault.body)
            return
        if fault is not None and fault.kind == "drop":
            handler.close_connection = True
            return
        if fault is not None and fault.kind == "delay":
            self._released.wait(fault.seconds)
        if fault is not None and fault.kind == "corrupt_body":
            body = body[: max(len(body) // 2, 1)]
        status, headers, answer = self._forward(method, path, handler.headers.items(), body)
        if fault is not None and fault.kind == "cut_after_forward":
            handler.close_connection = True
            return
        try:
            self._answer(handler, status, headers, answer)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)

    def _forward(self, method: str, path: str, headers: object, body: bytes) -> "tuple[int, list[tuple[str, str]], bytes]":
        connection = http.client.HTTPConnection(*self._upstream, timeout=60)
        try:
            forwarded = {k: v for k, v in headers if k.lower() not in _HOP_BY_HOP and k.lower() != "host"}  # type: ignore[attr-defined]
            connection.request(method, path, body=body if body or method in ("POST", "PUT", "PATCH") else None, headers=forwarded)
            response = connection.getresponse()
            return response.status, [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP], response.read()
        finally:
            connection.close()

    @staticmethod
    def _answer(handler: BaseHTTPRequestHandler, status: int, headers: "list[tuple[str, str]]", body: bytes) -> None:
        handler.send_response(status)
        for name, value in headers:
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(body)
