"""scheduler.db.wrapped: oslo.db's wrapped-exception WARNING loses its
traceback (oslo.log's formatter appends the error's first line); other
records pass untouched."""
from __future__ import annotations

import logging

from scheduler.db import wrapped


class UndefinedTable(Exception):
    pass


def record(msg: str, exc: BaseException | None) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc else None
    return logging.LogRecord("oslo_db.sqlalchemy.exc_filters",
                             logging.WARNING, __file__, 1, msg, (), exc_info)


def test_a_wrapped_exception_is_one_line_without_traceback():
    try:
        raise UndefinedTable('relation "services" does not exist\n'
                             'LINE 1: UPDATE services SET ...')
    except UndefinedTable as e:
        rec = record("DBAPIError exception wrapped.", e)
    assert wrapped.OneLine().filter(rec) is True
    assert rec.exc_info is None and rec.exc_text is None
    assert rec.getMessage() == "DBAPIError exception wrapped."


def test_other_records_keep_their_traceback():
    try:
        raise UndefinedTable("x")
    except UndefinedTable as e:
        rec = record("something else", e)
    assert wrapped.OneLine().filter(rec) is True
    assert rec.exc_info is not None and rec.getMessage() == "something else"
