"""scheduler-server's own setup."""
from __future__ import annotations

import logging


from scheduler.cmd import server


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
