"""systemd's notification protocol (sd_notify(3)), from the main process.

The unit says ``Type=notify`` and ``NotifyAccess=main``: systemd accepts
datagrams only from the main PID, so :func:`from_environment` takes
``NOTIFY_SOCKET`` (and the watchdog variables) *out* of the environment
before anything forks. The workers never see it, and neither does
cotyledon, which would otherwise send ``READY=1`` itself as soon as its
supervisor runs, before any worker consumes.
"""
from __future__ import annotations

import dataclasses
import os
import socket
import weakref

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

_ENV = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")


@dataclasses.dataclass
class Notifier:
    """Sends ``KEY=value`` lines to systemd; a no-op without a socket.

    ``watchdog_usec`` is systemd's ``WATCHDOG_USEC`` (0 when the unit sets
    no ``WatchdogSec``): ping at least every half of it.
    """
    address: str | None = None
    watchdog_usec: int = 0
    # Opened once, with the notifier, and kept: a process out of file
    # descriptors must still be able to ping the watchdog (else systemd
    # kills a server that is only under attack).
    _socket: socket.socket | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.address:
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            # Forked workers may not notify (NotifyAccess=main): they get
            # no copy to try with.
            ref = weakref.ref(self)
            os.register_at_fork(
                after_in_child=lambda: _close_in_child(ref))

    @property
    def watchdog_interval(self) -> float | None:
        """Seconds between ``WATCHDOG=1`` pings, or None without a
        watchdog (half the timeout, as sd_watchdog_enabled(3) advises)."""
        return self.watchdog_usec / 2e6 if self.watchdog_usec else None

    def send(self, **fields: str) -> bool:
        """Send one datagram of ``KEY=value`` lines (``send(READY="1",
        STATUS="...")``). Never raises: systemd being away must not stop
        the service.

        :returns: False when there is no socket or the send failed.
        """
        if not self.address:
            return False
        # An abstract socket is written "@name" in the environment.
        address = "\0" + self.address[1:] if self.address.startswith("@") \
            else self.address
        payload = "\n".join(f"{key}={' '.join(str(value).split())}"
                            for key, value in fields.items())
        try:
            if self._socket is None:
                raise OSError("no socket in this process (forked)")
            # One datagram: atomic, so threads may share the socket.
            self._socket.sendto(payload.encode(), address)
            return True
        except OSError as e:
            LOG.warning("Cannot notify systemd at %s: %s", self.address, e)
            return False


def _close_in_child(ref: weakref.ref) -> None:
    notifier = ref()
    if notifier is not None and notifier._socket is not None:
        notifier._socket.close()
        notifier._socket = None


def from_environment(environ: dict | None = None) -> Notifier:
    """A Notifier for the socket systemd gave this process, removing the
    variables from ``environ`` (``os.environ`` by default) so no child
    process and no library notifies in our place.

    ``WATCHDOG_USEC`` counts only when ``WATCHDOG_PID`` is unset or names
    this process (sd_watchdog_enabled(3)); a bad number means no watchdog.
    """
    environ = os.environ if environ is None else environ
    values = {name: environ.pop(name, None) for name in _ENV}
    usec = 0
    if values["WATCHDOG_USEC"] and values["WATCHDOG_PID"] in (
            None, str(os.getpid())):
        try:
            usec = max(0, int(values["WATCHDOG_USEC"]))
        except ValueError:
            LOG.warning("Ignoring WATCHDOG_USEC=%r: not a number",
                        values["WATCHDOG_USEC"])
    return Notifier(values["NOTIFY_SOCKET"] or None, usec)
