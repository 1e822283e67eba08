"""The server's small HTTP listener (``[scheduler] http_listen``).

Runs in the main process, in a daemon thread: stdlib
``ThreadingHTTPServer``, GET and HEAD only, one function per path. A
route is a function of no arguments returning a :class:`Response`; adding
one is one line in the table the server passes to :func:`serve`. The main
process serves what it can answer for every worker at once:
``/healthcheck`` from the workers' reported states, ``/metrics`` from the
workers' metrics files (:mod:`scheduler.metrics`).

Any local user can connect, so what a client can hold is bounded: at most
:data:`MAX_CONNECTIONS` connections (a thread each), each for at most
:data:`TIMEOUT` seconds from accept to close, however slowly it sends.
At the cap a new connection evicts the oldest one that has not sent its
request yet, so idle sockets cannot starve ``/healthcheck``; with every
slot answering a request, it is closed at once. The main process's file
descriptors then never run out because of this listener (sd_notify and
the health monitor need them).
"""
from __future__ import annotations

import dataclasses
import errno
import http.server
import os
import socket
import sys
import threading
import time
from typing import Callable, Mapping

from oslo_log import log as logging

from scheduler import exception
from scheduler import metrics

LOG = logging.getLogger(__name__)

OPTION = "[scheduler] http_listen"
#: The methods every route answers.
ALLOWED = "GET, HEAD"
#: Connections open at once (a thread each); far below any fd limit.
MAX_CONNECTIONS = 64
#: Seconds a connection may stay open, from accept to the last byte of the
#: answer: a silent or trickling client is dropped after it.
TIMEOUT = 5.0
#: The listen backlog: connections the kernel queues before we accept.
BACKLOG = 128
#: Seconds between warnings about refused or dropped connections: an
#: attack must not flood the log too.
WARN_EVERY = 60.0
#: Seconds to stop accepting after accept() failed for want of fds (else
#: the accept loop spins: the listening socket stays readable).
ACCEPT_PAUSE = 0.1


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

    def setup(self) -> None:
        # Per blocking call; the server's deadline bounds the whole
        # exchange (a client trickling bytes resets this one).
        self.timeout = self.server.timeout_seconds
        super().setup()

    def parse_request(self) -> bool:
        # Reads the headers: once they are in, this is no longer an idle
        # connection the next one may evict (a client trickling them is).
        parsed = super().parse_request()
        self.server.answering(self.request)
        return parsed

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


@dataclasses.dataclass
class _Connection:
    deadline: float
    accepted: float
    idle: bool = True      # no complete request head yet: evictable


class Server(http.server.ThreadingHTTPServer):
    """``ThreadingHTTPServer`` with bounded connections, threads and time
    per connection (see the module's docstring). ``max_connections`` and
    ``timeout_seconds`` may be changed on the instance before clients
    connect (tests do)."""

    request_queue_size = BACKLOG
    daemon_threads = True
    # server_close() must not wait for clients' threads.
    block_on_close = False
    max_connections = MAX_CONNECTIONS
    timeout_seconds = TIMEOUT

    def __init__(self, *args, **kwargs) -> None:
        self._lock = threading.Lock()
        self._open: dict[socket.socket, _Connection] = {}
        self._running = 0
        self._dropped = {"refused": 0, "evicted": 0, "timed out": 0}
        self._warned = self._accept_warned = float("-inf")
        super().__init__(*args, **kwargs)

    def get_request(self) -> tuple[socket.socket, tuple]:
        try:
            return super().get_request()
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS,
                           errno.ENOMEM):
                # The connection stays in the backlog; the listening socket
                # stays readable: pause, or this thread spins on accept.
                # Ten times a second: warn once a WARN_EVERY.
                now = time.monotonic()
                if now - self._accept_warned >= WARN_EVERY:
                    self._accept_warned = now
                    LOG.warning("HTTP listener cannot accept: %s",
                                e.strerror)
                time.sleep(ACCEPT_PAUSE)
            raise

    def process_request(self, request: socket.socket,
                        client_address: tuple) -> None:
        now = time.monotonic()
        with self._lock:
            # Threads of evicted connections end at once (their socket is
            # shut down); the second bound only holds if they do not.
            admitted = len(self._open) < self.max_connections or (
                self._running < 2 * self.max_connections
                and self._evict_oldest_idle())
            if admitted:
                self._open[request] = _Connection(
                    now + self.timeout_seconds, now)
                self._running += 1
            else:
                self._count("refused")
        if not admitted:
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            # No thread (e.g. "can't start new thread"): not ours to hold.
            with self._lock:
                self._open.pop(request, None)
                self._running -= 1
            self.shutdown_request(request)
            raise

    def process_request_thread(self, request: socket.socket,
                               client_address: tuple) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._running -= 1

    def shutdown_request(self, request: socket.socket) -> None:
        # Out of the table under the lock before the socket closes: the
        # listener thread shuts down only sockets in the table, so never
        # a closed one whose fd number a new connection already reuses.
        with self._lock:
            self._open.pop(request, None)
        super().shutdown_request(request)

    def handle_error(self, request: socket.socket,
                     client_address: tuple) -> None:
        # A client gone, or dropped by us (timed out, evicted), is not
        # news; anything else is a bug: its traceback (the stdlib prints
        # it to stderr, bypassing the log).
        if isinstance(sys.exc_info()[1], OSError):
            LOG.debug("HTTP connection from %s ended: %s",
                      client_address[0], sys.exc_info()[1])
        else:
            LOG.exception("HTTP request from %s failed", client_address[0])

    def answering(self, request: socket.socket) -> None:
        """The request head of ``request`` is in: it may not be evicted
        (it still ends at its deadline)."""
        with self._lock:
            connection = self._open.get(request)
            if connection is not None:
                connection.idle = False

    def service_actions(self) -> None:
        # serve_forever calls this at least every poll_interval (0.5 s).
        now = time.monotonic()
        with self._lock:
            late = [request for request, connection in self._open.items()
                    if connection.deadline <= now]
            for request in late:
                self._drop(request, "timed out")

    def _evict_oldest_idle(self) -> bool:
        # Called with the lock held.
        idle = [(connection.accepted, id(request), request)
                for request, connection in self._open.items()
                if connection.idle]
        if not idle:
            return False
        self._drop(min(idle)[2], "evicted")
        return True

    def _drop(self, request: socket.socket, why: str) -> None:
        # Called with the lock held. shutdown() wakes the handler's
        # blocked recv or send, which then ends and closes the socket.
        del self._open[request]
        try:
            request.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass    # the client has gone already
        self._count(why)

    def _count(self, why: str) -> None:
        # Called with the lock held.
        self._dropped[why] += 1
        now = time.monotonic()
        if now - self._warned >= WARN_EVERY:
            self._warned = now
            LOG.warning(
                "HTTP listener at its limits (%d connections, %.0f s "
                "each) since the last warning: %s",
                self.max_connections, self.timeout_seconds,
                ", ".join(f"{count} {name}"
                          for name, count in self._dropped.items()))
            self._dropped = dict.fromkeys(self._dropped, 0)

    def close_in_child(self) -> None:
        """After fork, in the child: close its copies of the listening
        socket and of every open connection (else a connection the parent
        closes stays open for the client while the child lives). No lock:
        the child has no other thread, and the lock may be held by one
        that did not follow it."""
        self.socket.close()
        for request in list(self._open):
            request.close()
        self._open.clear()


def serve(address: str, routes: Mapping[str, Route]) -> Server:
    """Bind ``address`` (``host:port``) and serve ``routes`` in a daemon
    thread, bounded as the module's docstring says. Bind before forking
    workers: a taken port then stops the start-up; forked children close
    their copies of the sockets.

    :raises ConfigError: a malformed address, or one that cannot be bound
        (in use, not local, no permission), naming the address and option.
    """
    host, port = parse_address(address)
    handler = type("Handler", (_Handler,), {"routes": dict(routes)})
    try:
        server_class = Server
        if ":" in host:    # an IPv6 address, e.g. [::1]:8796
            server_class = type("Server6", (server_class,),
                                {"address_family": socket.AF_INET6})
        server = server_class((host, port), handler)
    except OSError as e:
        raise exception.ConfigError(
            f"cannot listen on {address} ({OPTION}): {e.strerror or e}; "
            f"choose a free address or leave it empty to turn the "
            f"listener off") from None
    os.register_at_fork(after_in_child=server.close_in_child)
    threading.Thread(target=server.serve_forever, name="http-listener",
                     daemon=True).start()
    LOG.info("HTTP listener on http://%s:%d/ (%s)", host,
             server.server_address[1],
             ", ".join(sorted(routes)))
    return server


def healthcheck(verdict: Callable[[], tuple[bool, str]],
                degraded: Callable[[], str | None] = lambda: None) -> Route:
    """``/healthcheck`` in oslo.middleware's plain-text shape: 200 ``OK``
    when ``verdict()`` says healthy (``OK; degraded: ...`` when
    ``degraded()`` names what it cannot see), else 503 with its one-line
    reason."""
    def route() -> Response:
        healthy, line = verdict()
        if healthy:
            why = degraded()
            return Response(200, (f"OK; degraded: {why}\n" if why
                                  else "OK\n").encode())
        return Response(503, f"{line}\n".encode())
    return route


def prometheus() -> Response:
    """``/metrics``: every worker's metrics in Prometheus' text format."""
    body, content_type = metrics.render()
    return Response(200, body, content_type)
