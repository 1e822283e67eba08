"""db.retry: which database errors are transient, and the bounded retry.

The non-transient database errors are real ones, raised through oslo.db's
engine (a unique-constraint violation, a missing table), and so is SQLite's
"database is locked", which oslo.db 18 re-raises as the raw
``sqlalchemy.exc.OperationalError``."""
from __future__ import annotations

import logging
import threading
import time
import uuid as uuidlib

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from scheduler import exception
from scheduler.db.engine import create_engine
from scheduler.db import models
from scheduler.db import retry


def _insert_group(conn, group_uuid=None):
    conn.execute(models.claim_groups.insert().values(
        uuid=group_uuid or str(uuidlib.uuid4()), generation=0))


def test_duplicate_entry_is_not_transient(engine):
    with engine.begin() as conn:
        _insert_group(conn, "g1")
    with pytest.raises(db_exc.DBDuplicateEntry) as info:
        with engine.begin() as conn:
            _insert_group(conn, "g1")
    assert retry.is_transient(info.value) is False


def test_other_database_errors_are_not_transient(engine):
    with pytest.raises(db_exc.DBError) as info:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT * FROM no_such_table"))
    assert retry.is_transient(info.value) is False


@pytest.mark.parametrize("error", [
    db_exc.DBDeadlock(),
    db_exc.DBDeadlock(Exception("deadlock found")),
    db_exc.DBConnectionError(),
    db_exc.DBConnectionError(Exception("server has gone away")),
])
def test_deadlocks_and_lost_connections_are_transient(error):
    assert retry.is_transient(error) is True


class _PgError(Exception):
    def __init__(self, pgcode):
        super().__init__(f"pgcode {pgcode}")
        self.pgcode = pgcode


def _operational(orig: Exception) -> sa.exc.OperationalError:
    """What SQLAlchemy raises: the DB-API error in ``orig``."""
    return sa.exc.OperationalError("UPDATE ...", {}, orig)


@pytest.mark.parametrize("error,transient", [
    (_operational(_PgError("40001")), True),
    (db_exc.DBError(_operational(_PgError("40001"))), True),
    (_operational(_PgError("55P03")), True),    # lock_timeout ran out
    (_operational(_PgError("23505")), False),
    (_operational(Exception("database table is locked")), True),
    (db_exc.DBError(_operational(Exception("database is locked"))), True),
    (db_exc.DBError(Exception("syntax error")), False),
    (db_exc.DBError(), False),
    (db_exc.DBDuplicateEntry(["uuid"], Exception("UNIQUE failed")), False),
    (ValueError("database is locked"), False),
    (RuntimeError("boom"), False),
])
def test_is_transient_by_type_and_cause(error, transient):
    assert retry.is_transient(error) is transient


class _Clock:
    """retry's clock and pause: each pause moves the clock on, at once."""

    def __init__(self):
        self.now = 1000.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def pause(self, seconds: float, away: bool = True) -> bool:
        self.slept.append(seconds)
        self.now += seconds
        return not (away and retry._stopping.is_set())


@pytest.fixture
def clock(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(retry, "_pause", clock.pause)
    monkeypatch.setattr(retry.time, "monotonic", clock.monotonic)
    return clock


@pytest.fixture
def no_sleep(clock):
    return clock.slept


def _flaky(failures, error_factory):
    calls = []

    def work(*args, **kwargs):
        calls.append((args, kwargs))
        if len(calls) <= failures:
            raise error_factory()
        return "done"
    return work, calls


@pytest.mark.parametrize("failures", [0, 1, 2, 3])
def test_retrying_retries_transient_failures(no_sleep, failures):
    work, calls = _flaky(failures, db_exc.DBDeadlock)
    assert retry.retrying(3)(work)(1, k="v") == "done"
    assert len(calls) == failures + 1
    assert all(c == ((1,), {"k": "v"}) for c in calls)
    assert len(no_sleep) == failures


def test_retrying_gives_up_after_the_allowed_retries(no_sleep):
    work, calls = _flaky(10, db_exc.DBConnectionError)
    with pytest.raises(db_exc.DBConnectionError):
        retry.retrying(3)(work)()
    assert len(calls) == 4             # the first try and 3 retries


def test_retrying_gives_up_without_a_traceback_in_the_log(no_sleep,
                                                          caplog):
    """The caller turns the last error into its one line; nothing on the
    way logs it (oslo.db's decorator logged "DB exceeded retry limit" with
    the traceback, for every call during an outage)."""
    work, calls = _flaky(10, db_exc.DBConnectionError)
    with caplog.at_level(logging.DEBUG):
        with pytest.raises(db_exc.DBConnectionError):
            retry.retrying(2)(work)()
    assert len(calls) == 3
    assert [r for r in caplog.records if r.levelno >= logging.WARNING
            or r.exc_info] == []


def test_retrying_zero_means_one_try(no_sleep):
    work, calls = _flaky(1, db_exc.DBDeadlock)
    with pytest.raises(db_exc.DBDeadlock):
        retry.retrying(0)(work)()
    assert len(calls) == 1


def test_retrying_backs_off_up_to_a_second(no_sleep):
    work, calls = _flaky(8, lambda: _operational(
        Exception("database is locked")))
    assert retry.retrying(8)(work)() == "done"
    assert no_sleep[0] == pytest.approx(0.05)
    assert no_sleep == sorted(no_sleep)
    assert max(no_sleep) == pytest.approx(1.0)
    assert no_sleep[1] > no_sleep[0]


def test_retrying_does_not_retry_other_errors(no_sleep):
    for factory in (lambda: ValueError("bad"),
                    lambda: db_exc.DBDuplicateEntry(["uuid"])):
        work, calls = _flaky(1, factory)
        with pytest.raises(type(factory())):
            retry.retrying(5)(work)()
        assert len(calls) == 1
    assert no_sleep == []


def test_sqlite_database_is_locked_is_transient(conf, engine):
    other = create_engine(conf)
    with engine.connect() as holder:
        holder.begin()
        holder.execute(models.claim_groups.insert().values(uuid="a",
                                                           generation=0))
        with other.connect() as conn:
            conn.exec_driver_sql("PRAGMA busy_timeout=10")
            conn.commit()
            with pytest.raises(Exception) as info:
                with conn.begin():
                    conn.execute(models.claim_groups.insert().values(
                        uuid="b", generation=0))
        holder.rollback()
    other.dispose()
    assert retry.is_transient(info.value)


def _transient_errors() -> float:
    from prometheus_client.parser import text_string_to_metric_families

    from scheduler import metrics

    body, _ = metrics.render()
    [value] = [s.value for f in text_string_to_metric_families(body.decode())
               for s in f.samples
               if s.name == "scheduler_db_transient_errors_total"]
    return value


def test_every_transient_error_is_counted_even_the_last(no_sleep):
    before = _transient_errors()
    work, _ = _flaky(2, db_exc.DBDeadlock)
    retry.retrying(3)(work)()
    work, _ = _flaky(10, lambda: _operational(
        Exception("database is locked")))
    with pytest.raises(sa.exc.OperationalError):
        retry.retrying(1)(work)()
    work, _ = _flaky(1, lambda: ValueError("not a database error"))
    with pytest.raises(ValueError):
        retry.retrying(3)(work)()
    assert _transient_errors() - before == 2 + 2


def _refused() -> sa.exc.OperationalError:
    """PostgreSQL's refused connection: oslo.db leaves it a raw
    OperationalError, not a DBConnectionError."""
    return _operational(Exception(
        'connection to server at "127.0.0.1", port 5432 failed: Connection '
        'refused\n\tIs the server running on that host and accepting TCP/IP '
        'connections?'))


@pytest.mark.parametrize("error,away", [
    (db_exc.DBConnectionError(), True),
    (_refused(), True),
    (db_exc.DBError(_refused()), True),
    (_operational(Exception("FATAL:  the database system is starting up")),
     True),
    (_operational(Exception("(1053, 'Server shutdown in progress')")), True),
    (db_exc.DBDeadlock(), False),
    (_operational(Exception("database is locked")), False),
    (_operational(_PgError("40001")), False),
    (ValueError("connection refused"), False),
])
def test_a_database_that_cannot_be_reached_is_away(error, away):
    assert retry.is_away(error) is away
    if away:
        assert retry.is_transient(error)


@pytest.mark.parametrize("factory", [db_exc.DBConnectionError, _refused])
def test_an_unreachable_database_is_retried_for_the_outage_window(
        clock, factory):
    """A restart takes seconds: a lost or refused connection is retried
    for ``outage`` seconds, far beyond ``attempts`` (~1.5 s of backoff)."""
    work, calls = _flaky(25, factory)
    assert retry.retrying(0, outage=30)(work)() == "done"
    assert len(calls) == 26
    assert 20 < sum(clock.slept) < 30
    assert max(clock.slept) == pytest.approx(1.0)


def test_the_outage_window_ends_then_the_attempts_remain(clock):
    work, calls = _flaky(1000, db_exc.DBConnectionError)
    with pytest.raises(db_exc.DBConnectionError):
        retry.retrying(2, outage=10)(work)()
    # Retried while under 10 s had passed since the first error, then 2.
    assert 10 <= sum(clock.slept[:-2]) < 11
    assert len(calls) == len(clock.slept) + 1


def _unanswered() -> db_exc.DBConnectionError:
    """A round trip the server did not answer within its bound
    (scheduler.db.response; PyMySQL's read_timeout reads the same)."""
    return db_exc.DBConnectionError(_operational(Exception(
        "could not receive data from server: timed out after 35 s "
        "([scheduler] db_lock_timeout + 5 s); lost connection")))


@pytest.mark.parametrize("error", [
    _unanswered,
    lambda: db_exc.DBConnectionError(_operational(Exception(
        "(2013, 'Lost connection to MySQL server during query (timed "
        "out)')")))])
def test_a_round_trip_unanswered_past_the_outage_window_is_not_tried_again(
        clock, error):
    """A database server that stopped answering: each attempt waits the
    whole response timeout (35 s by default). db_retries more of them
    after db_outage_timeout kept a request four minutes, far past its
    caller's RPC timeout; the window counts from the attempt's start."""
    calls = []

    def work():
        calls.append(clock.now)
        clock.now += 35
        raise error()
    with pytest.raises(db_exc.DBConnectionError):
        retry.retrying(5, outage=30)(work)()
    assert len(calls) == 1
    calls.clear()
    with pytest.raises(db_exc.DBConnectionError):
        retry.retrying(5, outage=100)(work)()
    # Within the window it is retried: away since 0, 35 + 35 + 35 > 100.
    assert len(calls) == 3
    assert retry.is_unanswered(_unanswered())
    assert not retry.is_unanswered(db_exc.DBConnectionError(_refused()))


def test_deadlocks_stay_bounded_by_attempts_within_an_outage(clock):
    work, calls = _flaky(1000, db_exc.DBDeadlock)
    with pytest.raises(db_exc.DBDeadlock):
        retry.retrying(3, outage=30)(work)()
    assert len(calls) == 4


def test_stopping_ends_the_wait_with_the_last_error(monkeypatch):
    """SIGTERM: a request waiting for the database fails now (its one
    line), so the worker drains and exits."""
    monkeypatch.setattr(retry, "_stopping", threading.Event())
    work, calls = _flaky(1000, db_exc.DBConnectionError)
    threading.Timer(0.3, retry.stop).start()
    started = time.monotonic()
    with pytest.raises(db_exc.DBConnectionError):
        retry.retrying(5, outage=60)(work)()
    assert time.monotonic() - started < 5
    assert len(calls) > 1


def test_the_service_options_set_both_bounds(conf, clock):
    conf.set_override("db_retries", 0, group="scheduler")
    conf.set_override("db_outage_timeout", 5, group="scheduler")
    work, calls = _flaky(3, db_exc.DBConnectionError)
    assert retry.for_conf(conf)(work)() == "done"
    work, calls = _flaky(1, db_exc.DBDeadlock)
    with pytest.raises(db_exc.DBDeadlock):
        retry.for_conf(conf)(work)()


@pytest.mark.parametrize("factory", [
    db_exc.DBDeadlock,
    lambda: sa.exc.OperationalError("UPDATE", {},
                                    Exception("database is locked"))])
def test_stopping_still_retries_a_conflict_of_a_request_in_flight(
        monkeypatch, factory):
    """SIGTERM drains: the requests in flight are to reply. Stopping ends
    the wait for a database that is away (db_outage_timeout), not the
    bounded retries of a deadlock or lock, over in milliseconds: a claim
    that met one while the worker drained failed, and nova's conductor
    put the instance in ERROR."""
    monkeypatch.setattr(retry, "_stopping", threading.Event())
    retry.stop()
    work, calls = _flaky(1, factory)
    assert retry.retrying(5, outage=60)(work)() == "done"
    assert len(calls) == 2


def _psycopg2(message: str) -> Exception:
    """psycopg2's OperationalError as libpq words a lost connection."""
    import psycopg2
    return psycopg2.OperationalError(message)


def _pymysql(code: int, message: str) -> Exception:
    """PyMySQL's OperationalError (errno, text)."""
    import pymysql
    return pymysql.err.OperationalError(code, message)


_LIBPQ_CLOSED = ("server closed the connection unexpectedly\n\tThis "
                 "probably means the server terminated abnormally\n\tbefore "
                 "or while processing the request.\n")

#: A connection lost under a statement or a login, as each driver raises
#: it: psycopg2 connecting through the wait callback (the release that
#: failed 25 ms into a PostgreSQL crash), libpq over TLS and with its host
#: named, PyMySQL reading and writing.
LOST_CONNECTIONS = [
    _psycopg2("Connection reset by peer\n"),
    _psycopg2("SSL SYSCALL error: Connection reset by peer\n"),
    _psycopg2("SSL SYSCALL error: EOF detected\n"),
    _psycopg2("could not send data to server: Broken pipe\n"),
    _psycopg2('connection to server at "db.example", port 5432 failed: '
              + _LIBPQ_CLOSED),
    _psycopg2(_LIBPQ_CLOSED),
    _psycopg2("FATAL:  terminating connection due to administrator command"
              "\nserver closed the connection unexpectedly\n"),
    _pymysql(2013, "Lost connection to MySQL server during query "
             "([Errno 104] Connection reset by peer)"),
    _pymysql(2006, "MySQL server has gone away (BrokenPipeError(32, "
             "'Broken pipe'))"),
]


@pytest.mark.parametrize("orig", LOST_CONNECTIONS,
                         ids=lambda e: str(e).splitlines()[0][:40])
@pytest.mark.parametrize("wrap", [
    _operational,                                       # SQLAlchemy's
    lambda orig: db_exc.DBError(_operational(orig)),    # oslo.db's, older
], ids=["sqlalchemy", "dberror"])
def test_a_lost_connection_is_waited_out_like_an_unreachable_database(
        clock, orig, wrap):
    """A connection reset, broken or closed under a statement or a login
    is the database away (a crash, a restart, a failover), retried for
    ``outage`` seconds like a refused one, not failed at once."""
    work, calls = _flaky(25, lambda: wrap(orig))
    assert retry.retrying(0, outage=30)(work)() == "done"
    assert len(calls) == 26
    assert retry.is_away(wrap(orig))


@pytest.mark.parametrize("orig", LOST_CONNECTIONS,
                         ids=lambda e: str(e).splitlines()[0][:40])
def test_a_lost_connection_is_lost(orig):
    """What the engine marks a disconnect (db.engine)."""
    assert retry.is_lost(_operational(orig))
    assert retry.is_lost(db_exc.DBConnectionError(_operational(orig)))


@pytest.mark.parametrize("error", [
    _refused(),
    _operational(_psycopg2('column "broken" does not exist\n')),
    _operational(Exception("database is locked")),
    db_exc.DBConnectionError(),
])
def test_other_errors_are_not_a_lost_connection(error):
    assert not retry.is_lost(error)


def test_no_transaction_of_a_request_begins_once_its_caller_stopped_waiting(
        clock):
    """A scheduler cut off mid-request would otherwise claim once the
    network is back: after the caller re-sent the request, was answered,
    and perhaps released it."""
    work, calls = _flaky(1, db_exc.DBConnectionError)
    with retry.serving(patience=10):
        clock.now += 4
        retried = retry.retrying(5, outage=30)(work)
        # The first attempt fails; the retry would begin 10.05 s in.
        clock.now += 6
        with pytest.raises(exception.CallerGone) as gone:
            retried()
    assert len(calls) == 1
    assert "stopped waiting for this request 0 s ago" in str(gone.value)
    # Outside a request (a periodic task), or for a cast: no patience.
    work, calls = _flaky(1, db_exc.DBConnectionError)
    clock.now += 60
    assert retry.retrying(5, outage=30)(work)() == "done"
    with retry.serving(patience=None):
        clock.now += 60
        assert retry.retrying(5, outage=30)(_flaky(0, None)[0])() == "done"


def test_no_transaction_of_a_request_commits_once_its_caller_stopped_waiting(
        engine, clock):
    """One begun in time and held up past the caller's patience (a lock,
    a network cut) is rolled back, not committed."""
    with retry.serving(patience=10):
        with pytest.raises(exception.CallerGone):
            with engine.begin() as conn:
                _insert_group(conn, "late")
                clock.now += 11
    with retry.serving(patience=10):
        with engine.begin() as conn:
            _insert_group(conn, "in time")
    with engine.connect() as conn:
        assert set(conn.execute(sa.select(models.claim_groups.c.uuid))
                   .scalars()) == {"in time"}
