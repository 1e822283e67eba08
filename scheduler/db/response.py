"""How long one round trip to the database server may wait for its answer.

A server that stops answering without closing its connections (a process
frozen by SIGSTOP, stuck on a dead disk, a network partition that drops
packets) left a statement waiting in the driver's recv() for ever: the
kernel keeps ACKing a frozen server, so TCP keepalives do not end it. A
request held its worker thread until the caller's RPC timeout, a nova cast
for ever. No statement of the scheduler legitimately waits longer than
``[scheduler] db_lock_timeout``: a statement waiting that long for a lock
is answered by the server with its lock timeout. So one round trip may
wait that plus :data:`MARGIN`; past that the connection is dropped (never
returned to the pool: the server may still be working on its statement)
and the error reads as a lost connection, which
:func:`scheduler.db.retry.is_away` counts as "the database cannot be
reached" (``[scheduler] db_outage_timeout``, then one line naming the
database).

A COMMIT whose answer did not come in time may still commit once the server
answers again: the claim functions' retry finds such a claim by its
consumer, as after any COMMIT whose reply was lost.
"""
from __future__ import annotations

import select
from typing import Any

from oslo_config import cfg

#: Seconds past ``[scheduler] db_lock_timeout`` one round trip may take: the
#: lock timeout's own answer, a COMMIT's fsync on a busy disk.
MARGIN = 5

#: The bound :func:`psycopg2_wait` applies, seconds (None: none yet).
_psycopg2_timeout: float | None = None


def timeout(conf: cfg.ConfigOpts) -> int:
    """Seconds one round trip to the database server may wait for its
    answer under ``conf``."""
    return int(conf.scheduler.db_lock_timeout) + MARGIN


def bound_psycopg2(seconds: float) -> None:
    """Make every psycopg2 round trip of this process (connecting too) wait
    at most ``seconds`` for the server, through psycopg2's wait callback.

    The callback is process-global (``psycopg2.extensions
    .set_wait_callback``): it bounds every psycopg2 connection of the
    process, and the last engine made sets the bound (one per service
    process: its ``[scheduler] db_lock_timeout``). It costs a Python
    call and a poll() per round trip: ~5 us on a loopback ``SELECT 1``
    (25 us without it).
    """
    global _psycopg2_timeout
    from psycopg2 import extensions
    _psycopg2_timeout = seconds
    extensions.set_wait_callback(psycopg2_wait)


def psycopg2_wait(conn: Any) -> None:
    """psycopg2's wait callback: poll ``conn`` until its round trip is
    done, waiting at most the bound for each answer.

    :raises psycopg2.OperationalError: the server did not answer in time;
        its text is one SQLAlchemy takes for a disconnect (it invalidates
        the connection, without a ROLLBACK that would wait again) and
        :func:`scheduler.db.retry.is_away` for an unreachable database.
        psycopg2 closes the connection, without a cancel request (that
        would open a new connection to the server that does not answer).
    """
    import psycopg2
    from psycopg2 import extensions
    timeout_ms = None if _psycopg2_timeout is None \
        else int(_psycopg2_timeout * 1000)
    while True:
        state = conn.poll()
        if state == extensions.POLL_OK:
            return
        if state == extensions.POLL_READ:
            events = select.POLLIN
        elif state == extensions.POLL_WRITE:
            events = select.POLLOUT
        else:  # pragma: no cover - psycopg2 returns no other state
            raise psycopg2.OperationalError(f"bad poll state {state!r}")
        poller = select.poll()
        poller.register(conn.fileno(), events)
        if not poller.poll(timeout_ms):
            # psycopg2 closes the connection when its wait callback fails
            # (its state mid-round-trip is unknown): no conn.close() here,
            # which would wait for the lock psycopg2 holds meanwhile.
            # "timed out": retry.UNANSWERED.
            raise psycopg2.OperationalError(
                f"could not receive data from server: timed out after "
                f"{_psycopg2_timeout:g} s ([scheduler] db_lock_timeout + "
                f"{MARGIN} s); lost connection")
