"""Engines as the service makes them, on every database: every connection,
the first one oslo.db opens to test the URL included, has the service's
session settings."""
from __future__ import annotations

from scheduler import conf as sched_conf
from scheduler.db.engine import create_engine
from tests.functional.conftest import every_database

pytestmark = every_database

#: What each database's sessions are set to (db.engine.create_engine), with
#: ``[scheduler] db_lock_timeout = 7``.
_SETTINGS = {
    "sqlite": [("PRAGMA journal_mode", "wal"),
               ("PRAGMA busy_timeout", 7000)],
    "postgresql": [("SHOW plan_cache_mode", "force_generic_plan"),
                   ("SHOW lock_timeout", "7s")],
    "mysql": [("SELECT @@SESSION.tx_isolation", "READ-COMMITTED"),
              ("SELECT @@SESSION.innodb_lock_wait_timeout", 7)],
}


def test_every_connection_has_the_session_settings(database_url, tmp_path):
    conf = sched_conf.new_conf()
    conf([], default_config_files=[])
    conf.set_override("state_path", str(tmp_path))
    conf.set_override("connection", database_url, group="database")
    conf.set_override("db_lock_timeout", 7, group="scheduler")
    engine = create_engine(conf)
    settings = _SETTINGS[engine.dialect.name]
    try:
        # The pool's first connection, then a second one at once, then
        # the first again after its transaction was rolled back.
        with engine.connect() as first, engine.connect() as second:
            for conn in (first, second):
                assert _read(conn, settings) == settings
        with engine.connect() as again:
            assert _read(again, settings) == settings
    finally:
        engine.dispose()


def _read(conn, settings):
    return [(query, conn.exec_driver_sql(query).scalar())
            for query, _ in settings]
