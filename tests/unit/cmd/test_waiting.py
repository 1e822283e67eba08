"""The line a command shows a person while it waits."""
from __future__ import annotations

import io
import threading
import time

from scheduler.cmd import waiting


class Terminal(io.StringIO):
    """A stderr that is a terminal; ``written`` is set on each write."""

    def __init__(self) -> None:
        super().__init__()
        self.written = threading.Event()

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        count = super().write(text)
        self.written.set()
        return count


def test_a_wait_on_a_terminal_names_what_and_is_erased_at_the_end():
    stream = Terminal()
    with waiting.Waiting(stream, time.monotonic() + 9, after=0) as notice:
        notice.on("the message broker at 127.0.0.1:5672")
        assert stream.written.wait(30)
        text = stream.getvalue()
        assert text.startswith("\r\x1b[Kwaiting for the message broker at "
                               "127.0.0.1:5672... ")
        assert text.endswith("s left")
        stream.written.clear()
        notice.on("a scheduler on topic 'scheduler'")
        assert stream.written.wait(30)
    # Erased: what the command prints next starts a clean line.
    text = stream.getvalue()
    assert "waiting for a scheduler on topic 'scheduler'... " in text
    assert text.endswith("\r\x1b[K")


def test_a_quick_answer_shows_nothing():
    stream = Terminal()
    with waiting.Waiting(stream, time.monotonic() + 9) as notice:
        notice.on("the message broker at 127.0.0.1:5672")
    assert waiting.AFTER == 2
    assert stream.getvalue() == ""


def test_nothing_when_stderr_is_not_a_terminal():
    stream = io.StringIO()
    with waiting.Waiting(stream, time.monotonic() + 9, after=0) as notice:
        notice.on("the message broker at 127.0.0.1:5672")
        assert notice._thread is None
    assert stream.getvalue() == ""


def test_nothing_once_what_follows_reports_its_own_wait():
    stream = Terminal()
    with waiting.Waiting(stream, time.monotonic() + 9, after=0) as notice:
        notice.on("the message broker at 127.0.0.1:5672")
        assert stream.written.wait(30)
        notice.on("")
        assert stream.getvalue().endswith("\r\x1b[K")
        shown = stream.getvalue()
    assert stream.getvalue() == shown
