"""oslo.db's "exception wrapped" WARNING in one line.

For a database error it cannot classify (on PostgreSQL, for instance, a
table that is missing: the schema dropped or never synced) oslo.db logs
``DBAPIError exception wrapped.`` at WARNING with the full traceback, then
raises ``DBError``. The caller in this service handles that exception
anyway: a request answers ``ServiceUnavailable`` in one line, a worker's
background task logs one line naming the problem, and a bug in our own SQL
keeps its traceback where it is caught (:mod:`scheduler.errors` decides).
:func:`install` drops the traceback from oslo.db's record; oslo.log's
formatter still appends the first line of the error (it does so for a
WARNING logged while an exception is being handled, as this one is).
"""
from __future__ import annotations

import logging

#: oslo.db's logger and the texts of the records it logs with a traceback.
_LOGGER = "oslo_db.sqlalchemy.exc_filters"
_WRAPPED = ("DBAPIError exception wrapped.", "DB exception wrapped.")


class OneLine(logging.Filter):
    """Drops the traceback of oslo.db's wrapped-exception records."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg in _WRAPPED:
            record.exc_info = record.exc_text = None
        return True


class Dropped(logging.Filter):
    """Drops oslo.db's wrapped-exception records altogether: for a
    command, whose one ``ERROR:`` line (:mod:`scheduler.errors`) names the
    same error, they are a second line (with the traceback, 45)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg not in _WRAPPED


def install(drop: bool = False) -> logging.Filter:
    """Put one :class:`OneLine` (``drop``: :class:`Dropped`) on oslo.db's
    logger (once per process)."""
    flt = Dropped() if drop else OneLine()
    logging.getLogger(_LOGGER).addFilter(flt)
    return flt
