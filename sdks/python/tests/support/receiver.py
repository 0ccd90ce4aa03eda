"""A webhook receiver for the tests: records every delivery exactly as it arrived."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List, Tuple

from .polling import eventually


@dataclass
class Delivery:
    body: bytes
    headers: List[Tuple[str, str]]

    def header(self, name: str) -> str:
        return next(value for key, value in self.headers if key.lower() == name)


class WebhookReceiver:
    def __init__(self, status: int = 200) -> None:
        self.status = status
        self._lock = threading.Lock()
        self._deliveries: List[Delivery] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with receiver._lock:
                    receiver._deliveries.append(Delivery(body, list(self.headers.items())))
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="webhook-receiver", daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/hooks"

    def deliveries(self) -> List[Delivery]:
        with self._lock:
            return list(self._deliveries)

    def wait_for(self, topic: str, count: int = 1, timeout: float = 30.0) -> List[Delivery]:
        def matching() -> List[Delivery]:
            found = [d for d in self.deliveries() if f'"topic":"{topic}"'.encode() in d.body]
            return found if len(found) >= count else []

        return eventually(matching, timeout=timeout, what=f"{count} delivery of {topic}")

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
