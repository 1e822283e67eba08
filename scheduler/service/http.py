"""The server's small HTTP listener (``[scheduler] http_listen``).

Runs in the main process, in a daemon thread: stdlib
``ThreadingHTTPServer``, GET and HEAD only, one function per path. A
route is a function of no arguments returning a :class:`Response`; adding
one is one line in the table the server passes to :func:`serve`. The main
process serves what it can answer for every worker at once:
``/healthcheck`` from the workers' reported states, ``/metrics`` from the
workers' metrics files (:mod:`scheduler.metrics`).
"""
from __future__ import annotations

import dataclasses
import http.server
import os
import socket
import threading
from typing import Callable, Mapping

from oslo_log import log as logging

from scheduler import exception
from scheduler import metrics

LOG = logging.getLogger(__name__)

OPTION = "[scheduler] http_listen"
#: The methods every route answers.
ALLOWED = "GET, HEAD"


@dataclasses.dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"


Route = Callable[[], Response]


def parse_address(text: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:8796`` for IPv6) as (host, port); port 0
    picks a free one (logged).

    :raises ConfigError: naming the option and the value.
    """
    host, sep, port = text.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not \
            0 <= int(port) < 65536:
        raise exception.ConfigError(
            f"{OPTION}: expected host:port (e.g. 127.0.0.1:8796), got "
            f"{text!r}; fix the value or leave it empty to turn the "
            f"listener off")
    return host, int(port)


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: Mapping[str, Route] = {}

    def do_GET(self) -> None:   # noqa: N802 (the stdlib's name)
        self._answer(send_body=True)

    def do_HEAD(self) -> None:   # noqa: N802 (the stdlib's name)
        # Load balancers probe /healthcheck with HEAD (oslo.middleware
        # answers it): the GET's status and headers, no body.
        self._answer(send_body=False)

    def _refuse_writes(self) -> None:
        # Every route is read-only: a write to one is 405 naming what is
        # allowed (RFC 9110), not the stdlib's 501 HTML page, which says
        # the server does not know the method at all.
        self._answer(send_body=True, allowed=False)

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse_writes  # noqa: N815

    def _answer(self, send_body: bool, allowed: bool = True) -> None:
        route = self.routes.get(self.path.split("?", 1)[0])
        extra = {}
        if route is None:
            response = Response(404, b"not found\n")
        elif not allowed:
            response = Response(405, f"{self.command} not allowed; allowed: "
                                f"{ALLOWED}\n".encode())
            extra["Allow"] = ALLOWED
        else:
            try:
                response = route()
            except Exception as e:
                # A broken route must not take the listener down.
                LOG.exception("HTTP route %s failed", self.path)
                response = Response(500, f"{type(e).__name__}\n".encode())
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        if send_body:
            self.wfile.write(response.body)

    def log_message(self, format: str, *args) -> None:
        # Probes hit this every few seconds: DEBUG, not the access log.
        LOG.debug("HTTP %s %s", self.address_string(), format % args)


def serve(address: str, routes: Mapping[str, Route]
          ) -> http.server.ThreadingHTTPServer:
    """Bind ``address`` (``host:port``) and serve ``routes`` in a daemon
    thread. Bind before forking workers: a taken port then stops the
    start-up; forked children close their copy of the socket.

    :raises ConfigError: a malformed address, or one that cannot be bound
        (in use, not local, no permission), naming the address and option.
    """
    host, port = parse_address(address)
    handler = type("Handler", (_Handler,), {"routes": dict(routes)})
    try:
        server_class = http.server.ThreadingHTTPServer
        if ":" in host:    # an IPv6 address, e.g. [::1]:8796
            server_class = type("Server6", (server_class,),
                                {"address_family": socket.AF_INET6})
        server = server_class((host, port), handler)
    except OSError as e:
        raise exception.ConfigError(
            f"cannot listen on {address} ({OPTION}): {e.strerror or e}; "
            f"choose a free address or leave it empty to turn the "
            f"listener off") from None
    server.daemon_threads = True
    os.register_at_fork(after_in_child=server.socket.close)
    threading.Thread(target=server.serve_forever, name="http-listener",
                     daemon=True).start()
    LOG.info("HTTP listener on http://%s:%d/ (%s)", host,
             server.server_address[1],
             ", ".join(sorted(routes)))
    return server


def healthcheck(verdict: Callable[[], tuple[bool, str]]) -> Route:
    """``/healthcheck`` in oslo.middleware's plain-text shape: 200 ``OK``
    when ``verdict()`` says healthy, else 503 with its one-line reason."""
    def route() -> Response:
        healthy, line = verdict()
        if healthy:
            return Response(200, b"OK\n")
        return Response(503, f"{line}\n".encode())
    return route


def prometheus() -> Response:
    """``/metrics``: every worker's metrics in Prometheus' text format."""
    body, content_type = metrics.render()
    return Response(200, body, content_type)
