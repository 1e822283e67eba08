"""A malformed message on our topic costs one rate-limited WARNING.

oslo.messaging logs a message it cannot decode (random bytes, bad JSON,
nesting too deep, a pickle kombu refuses: "Failed to process message ...
skipping it.") or cannot dispatch (an unknown method or version, arguments
the method does not take: "Exception during message handling", which our
server's dispatcher, :class:`scheduler.rpc.transport.Dispatcher`, logs in
its place) at ERROR with a full traceback. Anyone who may publish on the
topic could fill the log that way. :func:`install` puts a filter on those
loggers that turns
such a record into one WARNING naming what was wrong, at most one per
interval, counting the ones it held back. A failure inside our own code is
left alone: it is a bug and keeps its traceback.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable

from oslo_messaging.rpc import dispatcher as rpc_dispatcher

from scheduler.rpc import instrument
from scheduler.rpc import transport

#: oslo.messaging's loggers and the record text that means "this message".
_DECODE = ("oslo.messaging._drivers.impl_rabbit",
           "Failed to process message ... skipping it.")
_DISPATCH = ("oslo_messaging.rpc.server", "Exception during message handling")
#: Where our server's dispatcher logs what oslo.messaging's server used to
#: (:class:`scheduler.rpc.transport.Dispatcher`).
_OUR_DISPATCH = (transport.__name__, transport.UNEXPECTED)

#: Where an argument mismatch surfaces: the call itself, in oslo.messaging's
#: dispatcher or in our endpoint decorator (scheduler.rpc.instrument).
_CALL_SITES = (os.path.join("oslo_messaging", "rpc", "dispatcher.py"),
               instrument.__file__)


def _is_bad_call(exc: BaseException) -> bool:
    """An unknown method/version, or a TypeError raised by the call itself
    (not from deeper in our code)."""
    if isinstance(exc, (rpc_dispatcher.NoSuchMethod,
                        rpc_dispatcher.UnsupportedVersion)):
        return True
    if not isinstance(exc, TypeError) or exc.__traceback__ is None:
        return False
    tb = exc.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename.endswith(_CALL_SITES)


class MalformedMessageFilter(logging.Filter):
    """Rewrites oslo.messaging's traceback for a malformed message into one
    WARNING; lets at most one through per ``interval`` seconds."""

    def __init__(self, interval: float = 10.0,
                 clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.interval = interval
        self.clock = clock
        self._lock = threading.Lock()
        self._next = float("-inf")
        self._held_back = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.exc_info or record.exc_info[1] is None:
            return True
        exc = record.exc_info[1]
        if (record.name, record.msg) == _DECODE:
            what = "cannot decode it"
        elif ((record.name, record.msg) in (_DISPATCH, _OUR_DISPATCH)
              and _is_bad_call(exc)):
            what = "cannot dispatch it"
        else:
            return True
        now = self.clock()
        with self._lock:
            if now < self._next:
                self._held_back += 1
                return False
            held_back, self._held_back = self._held_back, 0
            self._next = now + self.interval
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        # oslo.log's formatter appends the exception's one-line summary
        # (": module.Type: text") to a WARNING logged while it is active,
        # as it is here, so the line names the error without repeating it.
        record.msg = "Dropped a malformed message on the topic (%s; %s)%s"
        record.args = (what, type(exc).__name__,
                       f", {held_back} more since the last warning"
                       if held_back else "")
        record.exc_info = record.exc_text = None
        return True


def install(interval: float = 10.0) -> MalformedMessageFilter:
    """Put one :class:`MalformedMessageFilter` on oslo.messaging's decode
    and dispatch loggers (call once per process)."""
    flt = MalformedMessageFilter(interval)
    for name, _ in (_DECODE, _DISPATCH, _OUR_DISPATCH):
        logging.getLogger(name).addFilter(flt)
    return flt
