"""The line a command shows a person while it waits on someone else.

``waiting for <what>... Ns left`` on stderr once the wait has lasted
:data:`AFTER` seconds, rewritten in place once a second (and when what
is waited for changes), erased when the wait ends: a command that then
fails still ends in its one ``ERROR:`` line, one that succeeds in its
output alone. Nothing at all when stderr is not a terminal
(:func:`scheduler.progress.wanted`): a script or a log reads only the
outcome.
"""
from __future__ import annotations

import math
import threading
import time
from types import TracebackType
from typing import TextIO

from scheduler import progress

#: Seconds of silence before the line: a quick answer shows none.
AFTER = 2.0
#: Moves to the start of the line and clears it (VT100, every terminal).
_ERASE = "\r\x1b[K"


class Waiting:
    """A context manager for one wait that ends by ``deadline``
    (``time.monotonic()``); :meth:`on` names what is waited for."""

    def __init__(self, stream: TextIO, deadline: float,
                 after: float = AFTER) -> None:
        self.stream = stream
        self.deadline = deadline
        self.after = after
        self._what = ""
        self._shown = False
        self._changed = threading.Condition()
        self._done = False
        self._thread: threading.Thread | None = None

    def on(self, what: str) -> None:
        """Wait for ``what`` now (``the message broker at host:5672``);
        empty: show nothing from now on (what follows reports its own
        wait), erasing the line if one is shown."""
        with self._changed:
            self._what = what
            if not what and self._shown:
                self._write(_ERASE)
                self._shown = False
            self._changed.notify()

    def __enter__(self) -> Waiting:
        if progress.wanted(None, self.stream):
            self._thread = threading.Thread(target=self._show, daemon=True,
                                            name="waiting")
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None,
                 error: BaseException | None,
                 tb: TracebackType | None) -> None:
        with self._changed:
            self._done = True
            self._changed.notify()
        if self._thread is not None:
            self._thread.join()
        if self._shown:
            self._write(_ERASE)

    def _show(self) -> None:
        start = time.monotonic() + self.after
        with self._changed:
            while not self._done:
                now = time.monotonic()
                if now < start:
                    self._changed.wait(start - now)
                elif not self._what or now >= self.deadline:
                    self._changed.wait()
                else:
                    left = self.deadline - now
                    self._write(f"{_ERASE}waiting for {self._what}... "
                                f"{math.ceil(left)}s left")
                    self._shown = True
                    # Again when the whole seconds left drop by one.
                    self._changed.wait(left % 1 or 1)

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):   # a closed or gone terminal
            pass
