"""What every worker process is doing, as the main process sees it.

The one owner of "is every worker consuming": the readiness loop (systemd's
``READY=1``/``WATCHDOG=1``) and ``/healthcheck`` both ask
:meth:`WorkerStates.verdict`.

Workers report over a datagram socket pair made before they fork
(:class:`Channel`): ``loading`` before they read the host table,
``consuming`` once their RPC server runs (repeated every
:data:`HEARTBEAT_INTERVAL` seconds), ``failed`` with the one-line cause
before they exit. A worker silent for :data:`STALE_AFTER` seconds is
wedged, not consuming. A datagram is one small JSON object; a datagram
socket keeps message boundaries, so no framing is needed.
"""
from __future__ import annotations

import dataclasses
import json
import os
import socket
import threading
import time

#: Seconds between a consuming worker's reports.
HEARTBEAT_INTERVAL = 2.0
#: A worker that has not reported for this long is not counted consuming.
STALE_AFTER = 3 * HEARTBEAT_INTERVAL

LOADING = "loading"
CONSUMING = "consuming"
FAILED = "failed"
EXITED = "exited"


@dataclasses.dataclass(frozen=True)
class WorkerState:
    """The last report of one worker (by cotyledon's stable worker id)."""
    worker_id: int
    pid: int
    state: str
    reason: str = ""
    #: A restart cannot fix the failure (bad credentials, no schema, ...).
    fatal: bool = False
    #: time.monotonic() in the main process when the report arrived.
    seen: float = 0.0


class Channel:
    """The workers -> main process datagram pipe. Create it in the main
    process before the workers fork; both ends are inherited."""

    def __init__(self) -> None:
        self._receive, self._send = socket.socketpair(socket.AF_UNIX,
                                                      socket.SOCK_DGRAM)
        self._receive.setblocking(False)

    def fileno(self) -> int:
        """The receiving end, for select()."""
        return self._receive.fileno()

    def report(self, worker_id: int, state: str, reason: str = "",
               fatal: bool = False) -> None:
        """Worker side: send this process's state; never blocks or raises
        (a main process that stopped reading must not wedge a worker; the
        next heartbeat repeats the state anyway)."""
        message = json.dumps({"worker_id": worker_id, "pid": os.getpid(),
                              "state": state, "reason": reason[:2000],
                              "fatal": fatal}).encode()
        try:
            self._send.send(message, socket.MSG_DONTWAIT)
        except OSError:
            pass

    def receive(self) -> list[dict]:
        """Main side: every report waiting now (non-blocking)."""
        messages = []
        while True:
            try:
                data = self._receive.recv(65536)
            except (BlockingIOError, InterruptedError):
                return messages
            try:
                messages.append(json.loads(data))
            except ValueError:
                continue   # only our workers write here; be safe anyway


class WorkerStates:
    """The main process's view of its ``expected`` workers.

    Thread-safe: the readiness loop, the HTTP listener and cotyledon's
    supervisor thread (worker deaths) all call in. The mapping is replaced,
    never changed in place, so a reader's copy stays consistent.
    """

    def __init__(self, channel: Channel, expected: int,
                 stale_after: float = STALE_AFTER) -> None:
        self.channel = channel
        self.expected = expected
        self.stale_after = stale_after
        self._lock = threading.Lock()
        self._states: dict[int, WorkerState] = {}

    def poll(self) -> dict[int, WorkerState]:
        """Take in every waiting report; the states by worker id."""
        with self._lock:
            messages = self.channel.receive()
            if messages:
                states = dict(self._states)
                now = time.monotonic()
                for m in messages:
                    states[int(m["worker_id"])] = WorkerState(
                        int(m["worker_id"]), int(m["pid"]), str(m["state"]),
                        str(m.get("reason", "")), bool(m.get("fatal")), now)
                self._states = states
            return self._states

    def exited(self, worker_id: int, exit_code: int) -> WorkerState | None:
        """cotyledon saw this worker exit: its last state (a ``failed``
        report sent before the exit is read first), after which it counts
        as exited until its replacement reports."""
        last = self.poll().get(worker_id)
        with self._lock:
            pid = last.pid if last else 0
            states = dict(self._states)
            states[worker_id] = WorkerState(
                worker_id, pid, EXITED,
                last.reason if last and last.state == FAILED
                else f"exited with status {exit_code}",
                bool(last and last.fatal), time.monotonic())
            self._states = states
        return last

    def verdict(self) -> tuple[bool, str]:
        """(every expected worker consuming, one line saying how things
        stand), e.g. ``(True, "2/2 workers consuming")`` or ``(False,
        "worker 0 (pid 123) failed: ...")``."""
        states = self.poll()
        now = time.monotonic()
        consuming = 0
        problems = []
        for worker_id in range(self.expected):
            s = states.get(worker_id)
            if s is None:
                problems.append(f"worker {worker_id} starting")
            elif s.state == CONSUMING and now - s.seen > self.stale_after:
                problems.append(f"worker {worker_id} (pid {s.pid}) not "
                                f"responding for {now - s.seen:.0f}s")
            elif s.state == CONSUMING:
                consuming += 1
            elif s.state == LOADING:
                problems.append(f"worker {worker_id} (pid {s.pid}) loading "
                                f"host table")
            else:
                problems.append(f"worker {worker_id} (pid {s.pid}) "
                                f"{s.state}: {s.reason}")
        line = f"{consuming}/{self.expected} workers consuming"
        if problems:
            line += "; " + "; ".join(problems)
        return consuming == self.expected, line
