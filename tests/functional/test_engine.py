"""Engines as the service makes them, on every database: every connection,
the first one oslo.db opens to test the URL included, has the service's
session settings."""
from __future__ import annotations

from scheduler import conf as sched_conf
from scheduler.db import api as db

#: What each database's sessions are set to (db.api.create_engine).
_SETTING = {
    "sqlite": ("PRAGMA journal_mode", "wal"),
    "postgresql": ("SHOW plan_cache_mode", "force_generic_plan"),
    "mysql": ("SELECT @@SESSION.tx_isolation", "READ-COMMITTED"),
}


def test_every_connection_has_the_session_settings(database_url, tmp_path):
    conf = sched_conf.new_conf()
    conf([], default_config_files=[])
    conf.set_override("state_path", str(tmp_path))
    conf.set_override("connection", database_url, group="database")
    engine = db.create_engine(conf)
    query, expected = _SETTING[engine.dialect.name]
    try:
        # The pool's first connection, then a second one at once, then
        # the first again after its transaction was rolled back.
        with engine.connect() as first, engine.connect() as second:
            for conn in (first, second):
                assert conn.exec_driver_sql(query).scalar() == expected
        with engine.connect() as again:
            assert again.exec_driver_sql(query).scalar() == expected
    finally:
        engine.dispose()
