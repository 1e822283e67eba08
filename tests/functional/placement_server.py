"""Serve openstack-placement on loopback: run with the python of the nova
virtualenv (tools/nova-venv installs placement there), never the
project's.

    OS_PLACEMENT_CONFIG_DIR=DIR placement_server.py

``DIR/placement.conf`` is placement's own configuration, read the way
placement's WSGI module reads it under any WSGI server
(``placement.wsgi.init_application``). The server binds a port the kernel
chooses on 127.0.0.1 and writes it as the first line on stdout, so the
caller never races another process for a port it guessed; then it serves
until SIGTERM.

Placement ships no server of its own and the venv has no uWSGI or
gunicorn: the standard library's WSGI server does. It answers one request
at a time, on purpose: on SQLite, placement's writers cannot overlap
(oslo.db begins every transaction with a deferred BEGIN, and two that
read and then write at once deadlock: SQLite fails one with "database is
locked" at once). Two computes registering at once did exactly that when
each request had a thread. A handful of services' requests, one at a time,
are still answered in milliseconds.
"""
from __future__ import annotations

import signal
import sys
import threading
from wsgiref import simple_server

from placement import wsgi


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        # Placement's own request log (oslo.log) already has each request;
        # wsgiref's second line per request on stderr adds nothing.
        pass


def main() -> None:
    application = wsgi.init_application()
    server = simple_server.make_server(
        "127.0.0.1", 0, application, handler_class=_QuietHandler)
    # serve_forever's loop must be stopped from another thread than its
    # own: the signal handler only asks, a thread does the shutdown.
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(
        target=server.shutdown).start())
    print(server.server_port, flush=True)
    server.serve_forever()
    server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
