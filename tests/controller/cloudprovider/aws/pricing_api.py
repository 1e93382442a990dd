"""A stand-in for the AWS Pricing API (which moto lacks and this machine cannot reach),
serving recorded GetProducts responses over real HTTP on 127.0.0.1.

The recorded pages are ``fixtures/pricing/get-products-<region>-<n>.json``: GetProducts
answers as the service gives them (``FormatVersion``, ``PriceList`` of JSON strings,
``NextToken`` on every page but the last). The server speaks the service's protocol (JSON
1.1, ``X-Amz-Target: AWSPriceListService.GetProducts``), picks the region from the
request's ``regionCode`` filter, follows ``NextToken`` and keeps every request body so a
test can check what was asked.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).with_name("fixtures") / "pricing"
TARGET = "AWSPriceListService.GetProducts"
_PAGE = re.compile(r"^get-products-(?P<region>[a-z0-9-]+?)-(?P<number>[0-9]+)\.json$")


def recorded_pages(directory: Path = FIXTURES) -> dict[str, list[dict[str, Any]]]:
    """region -> its pages in order."""
    found: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for path in directory.glob("get-products-*.json"):
        match = _PAGE.match(path.name)
        assert match, path
        page = json.loads(path.read_text())
        found.setdefault(match["region"], []).append((int(match["number"]), page))
    return {region: [page for _, page in sorted(pages)] for region, pages in found.items()}


class RecordedPricingAPI:
    """``with RecordedPricingAPI() as api:`` then point a pricing client at ``api.url``."""

    def __init__(self, pages: dict[str, list[dict[str, Any]]] | None = None) -> None:
        self.pages = recorded_pages() if pages is None else pages
        self.requests: list[dict[str, Any]] = []
        self.fail_with: int | None = None  # an HTTP status to answer every request with
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> RecordedPricingAPI:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, target: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.requests.append(body)
        if self.fail_with is not None:
            return self.fail_with, {"__type": "InternalErrorException", "Message": "recorded"}
        if target != TARGET:
            return 400, {"__type": "UnknownOperationException", "Message": target}
        region = next(
            (f["Value"] for f in body.get("Filters", []) if f["Field"] == "regionCode"), None
        )
        pages = self.pages.get(region or "", [])
        token = body.get("NextToken")
        if token is None:
            return 200, pages[0] if pages else {"FormatVersion": "aws_v1", "PriceList": []}
        for page, following in pairwise(pages):
            if page.get("NextToken") == token:
                return 200, following
        return 400, {"__type": "InvalidNextTokenException", "Message": "bad token"}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                status, answer = api.answer(self.headers.get("X-Amz-Target", ""), body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: Any) -> None:
                pass

        return Handler
