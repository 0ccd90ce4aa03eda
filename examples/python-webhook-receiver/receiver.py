"""A Merx webhook receiver on the standard library's http.server.

Every delivery is verified with the subscription's secret before anything else; a delivery that
fails verification gets 400 and is not processed. Merx retries a delivery until it gets a 2xx and
keeps the event id (``webhook-id``) on every retry, so the receiver remembers the ids it handled
and acknowledges a repeat without handling it twice.

    MERX_WEBHOOK_SECRET=whsec_... PORT=3000 python3 receiver.py

Each handled event is printed as one JSON line on stdout.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Set

from merx import WebhookVerificationError, webhooks
from merx.webhooks import WebhookEvent

SECRET = os.environ["MERX_WEBHOOK_SECRET"]  # whsec_..., shown once when the subscription is created
MAX_BODY_BYTES = 1024 * 1024

handled_ids: Set[str] = set()  # in production: a unique key in your database
handled_lock = threading.Lock()


def handle(event: WebhookEvent) -> None:
    """Your business logic. Here: print what arrived."""
    summary = {"verified": True, "id": event.id, "topic": event.topic, "object_id": event.to_dict()["data"]["object"].get("id")}
    print(json.dumps(summary), flush=True)


class WebhookHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if self.path != "/webhooks" or length > MAX_BODY_BYTES:
            self.answer(404 if self.path != "/webhooks" else 413)
            return
        body = self.rfile.read(length)  # the raw bytes: verification needs them exactly as sent
        try:
            event = webhooks.verify(body, self.headers, SECRET)
        except WebhookVerificationError as error:
            print(json.dumps({"verified": False, "reason": str(error)}), flush=True)
            self.answer(400)
            return
        with handled_lock:
            repeat = event.id in handled_ids
            handled_ids.add(event.id)
        if not repeat:
            handle(event)
        self.answer(204)

    def answer(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        print(format % args, file=sys.stderr)


def main() -> None:
    port = int(os.environ.get("PORT", "3000"))
    server = ThreadingHTTPServer(("127.0.0.1", port), WebhookHandler)
    print(json.dumps({"listening": f"http://127.0.0.1:{port}/webhooks"}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
