"""scheduler-server's own setup."""
from __future__ import annotations

import logging

import pytest

from scheduler.cmd import server
from scheduler import exception


def test_a_lone_surrogate_in_a_log_file_line_is_escaped(tmp_path):
    """A ``[DEFAULT] log_file`` handler (and the one it reopens after a
    rotation) writes a lone surrogate as ``\\ud800``, not a Logging
    error."""
    path = tmp_path / "server.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    root = logging.getLogger()
    # The file alone, as a server's log_file: pytest's own handlers would
    # keep the surrogate in a report that pytest-xdist cannot send.
    others, root.handlers = root.handlers, [handler]
    try:
        server._escape_unencodable_in_logs()
        logging.getLogger("t").warning("refused: %s", "az\ud800")
        handler.close()                 # as WatchedFileHandler on rotation
        handler.stream = handler._open()
        logging.getLogger("t").warning("again: %s", "h\udfff")
    finally:
        root.handlers = others
        handler.close()
    assert path.read_text() == "refused: az\\ud800\nagain: h\\udfff\n"


@pytest.fixture
def root_logging():
    """The root logger's handlers and level restored after the test:
    oslo.log's setup replaces them."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in root.handlers:
        if handler not in handlers:
            handler.close()
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.parametrize("failure, logged", [
    (exception.ConfigError("[scheduler] workers: too many; fix it"),
     "ERROR scheduler.cmd.server [-] scheduler-server exits: [scheduler] "
     "workers: too many; fix it\n"),
    (RuntimeError("a bug"), "Traceback (most recent call last):"),
], ids=["operator's mistake", "bug"])
def test_a_server_that_cannot_start_says_why_in_its_log_file_too(
        tmp_path, monkeypatch, capsys, root_logging, failure, logged):
    """Under systemd with log_file set, the reason was in the journal
    (stderr) only; the log file had nothing. The line once in each: a
    stream handler (use_stderr) does not repeat it on stderr."""
    log_file = tmp_path / "server.log"
    config = tmp_path / "scheduler.conf"
    config.write_text(f"[DEFAULT]\nlog_file = {log_file}\n"
                      f"use_stderr = true\nstate_path = {tmp_path}\n")

    def serve(*args):
        raise failure
    monkeypatch.setattr(server.supervisor, "serve", serve)
    assert server.main(["--config-file", str(config)]) == 1
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and line.startswith("ERROR: "), line
    text = log_file.read_text()
    assert logged in text, text
    assert text.count("scheduler-server exits: ") == 1
    if isinstance(failure, exception.ConfigError):
        assert "Traceback" not in text and "ConfigError" not in text
