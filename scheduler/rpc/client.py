"""Client side of the scheduler RPC API, for conductor-like programs.

``SchedulerAPI`` sends at most ``[upgrade_levels] scheduler`` (so a newer
client can talk to older servers during an upgrade) and re-sends
``select_destinations`` when a call times out, up to ``[scheduler]
max_attempts`` calls in all. A re-sent call is safe because the client fills
in ``instance_uuids`` before the first send: the server sees the same
consumers again and hands back what they already hold instead of claiming
twice.
"""
from __future__ import annotations

import time
from typing import Any
import uuid as uuidlib

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from scheduler import exception
from scheduler.rpc import transport as rpc
from scheduler.request.schema import MAX_LIST

LOG = logging.getLogger(__name__)


class SchedulerAPI:
    """Version history: 1.0 select_destinations, release, ping;
    1.1 rank_destinations; 1.2 confirm; 1.3 confirm_move, revert_move and
    ``spec.move``; 1.4 select_stack, rank_stack, release_stack; 1.5
    plan_drain, cancel_drain, capacity."""

    def __init__(self, conf: cfg.ConfigOpts,
                 transport: messaging.Transport | None = None,
                 timeout: float | None = None,
                 deadline: float | None = None):
        """:param timeout: seconds each call waits for its reply
            (default: ``[DEFAULT] rpc_response_timeout``).
        :param deadline: ``time.monotonic()`` by which every call, its
            re-sends included, has ended (a command's budget): a call
            waits for what is left of it, each re-sent one for its share
            of what is left (the last third, half, all of it), instead of
            ``timeout``.
        """
        self.conf = conf
        self.deadline = deadline
        self.transport = transport or rpc.get_transport(conf)
        self.client = messaging.get_rpc_client(
            self.transport, rpc.get_target(conf),
            version_cap=conf.upgrade_levels.scheduler,
            serializer=messaging.serializer.NoOpSerializer(),
            timeout=timeout)

    def select_destinations(self, ctxt: dict, spec: dict[str, Any]
                            ) -> list[dict[str, Any]]:
        """Place ``spec``'s instances; see ``doc/source/architecture.rst``
        "RPC API" for the shapes.

        :raises NoValidHost, InvalidRequest: re-raised from the server.
        :raises MessagingTimeout: after ``max_attempts`` timed-out calls.
        """
        spec = _with_consumers(spec)
        if isinstance(spec, dict) and "move" in spec:
            # An older server would refuse the unknown field by name; say
            # why instead.
            cctxt = self._prepare("1.3", "spec.move")
        else:
            cctxt = self.client.prepare(version="1.0")
        return self._resent(cctxt, ctxt, "select_destinations", "request",
                            spec=spec)

    def rank_destinations(self, ctxt: dict, spec: dict[str, Any],
                          limit: int = 20) -> dict[str, Any]:
        """Dry-run ranking; needs servers at 1.1 or newer."""
        return self._once(self._prepare("1.1", "rank_destinations"), ctxt,
                          "rank_destinations", spec=spec, limit=limit)

    def release(self, ctxt: dict, consumer_uuids: list[str]) -> int:
        return self._once(self.client.prepare(version="1.0"), ctxt,
                          "release", consumer_uuids=list(consumer_uuids))

    def confirm(self, ctxt: dict, consumer_uuids: list[str]) -> int:
        """Confirm provisional claims (the instances were built); needs
        servers at 1.2 or newer."""
        return self._once(self._prepare("1.2", "confirm"), ctxt, "confirm",
                          consumer_uuids=list(consumer_uuids))

    def confirm_move(self, ctxt: dict, consumer_uuids: list[str]) -> int:
        """Finish the consumers' moves (their sources are released); needs
        servers at 1.3 or newer."""
        return self._once(self._prepare("1.3", "confirm_move"), ctxt,
                          "confirm_move",
                          consumer_uuids=list(consumer_uuids))

    def revert_move(self, ctxt: dict, consumer_uuids: list[str]) -> int:
        """Undo the consumers' moves (their destinations are released);
        needs servers at 1.3 or newer."""
        return self._once(self._prepare("1.3", "revert_move"), ctxt,
                          "revert_move", consumer_uuids=list(consumer_uuids))

    def select_stack(self, ctxt: dict, stack: dict[str, Any]
                     ) -> dict[str, Any]:
        """Place and claim a whole stack, all or nothing
        (architecture.rst "Stacks"); needs servers at 1.4 or newer.
        Re-sent on a timeout like select_destinations: the stack id makes
        the call idempotent.

        :raises NoValidHost, InvalidRequest: re-raised from the server.
        :raises MessagingTimeout: after ``max_attempts`` timed-out calls.
        """
        return self._resent(self._prepare("1.4", "select_stack"), ctxt,
                            "select_stack", "stack", stack=stack)

    def rank_stack(self, ctxt: dict, stack: dict[str, Any]
                   ) -> dict[str, Any]:
        """Dry run of select_stack; needs servers at 1.4 or newer."""
        return self._once(self._prepare("1.4", "rank_stack"), ctxt,
                          "rank_stack", stack=stack)

    def release_stack(self, ctxt: dict, stack_id: str) -> int:
        """Release a stack's claims; idempotent; needs servers at 1.4."""
        return self._once(self._prepare("1.4", "release_stack"), ctxt,
                          "release_stack", stack_id=stack_id)

    def plan_drain(self, ctxt: dict, host: str, apply: bool = False,
                   same_aggregate: bool = False) -> dict[str, Any]:
        """Plan (with ``apply``: claim) a move for every instance on
        ``host``, all or nothing; needs servers at 1.5. An applied drain
        re-sent returns the plan it applied, so it is re-sent on a
        timeout like select_destinations.
        :raises NoValidHost, InvalidRequest: re-raised from the server."""
        return self._resent(self._prepare("1.5", "plan_drain"), ctxt,
                            "plan_drain", "drain", host=host, apply=apply,
                            same_aggregate=same_aggregate)

    def cancel_drain(self, ctxt: dict, host: str) -> int:
        """End a drain, releasing its moves not begun; idempotent; needs
        servers at 1.5."""
        return self._once(self._prepare("1.5", "cancel_drain"), ctxt,
                          "cancel_drain", host=host)

    def capacity(self, ctxt: dict, spec: dict[str, Any],
                 without_hosts: list[str] = ()) -> dict[str, Any]:
        """How many more instances like ``spec`` fit; needs servers at
        1.5."""
        return self._once(self._prepare("1.5", "capacity"), ctxt,
                          "capacity", spec=spec,
                          without_hosts=list(without_hosts))

    def _resent(self, cctxt, ctxt: dict, method: str, what: str,
                **kwargs: Any) -> Any:
        """Call ``method`` on ``cctxt`` (a prepared client), re-sending
        the same arguments when the call times out, up to ``[scheduler]
        max_attempts`` calls in all. Only for calls the server answers
        idempotently (the consumers, or the stack id, are in the
        arguments): a re-send gets what the first send claimed.
        ``what`` names the argument in the warning ("re-sending the same
        request").

        :raises MessagingTimeout: the last call timed out too.
        """
        attempts = self.conf.scheduler.max_attempts
        for attempt in range(1, attempts + 1):
            try:
                return self._within_deadline(
                    cctxt, attempts - attempt + 1).call(ctxt, method,
                                                        **kwargs)
            except messaging.MessagingTimeout:
                if attempt == attempts:
                    raise
            # Outside the except clause: oslo.log would append the
            # exception's repr (and its message id) to a line logged
            # inside it.
            LOG.warning("%s timed out (attempt %d of %d); re-sending the "
                        "same %s", method, attempt, attempts, what)
        raise AssertionError("unreachable")

    def _once(self, cctxt, ctxt: dict, method: str, **kwargs: Any) -> Any:
        """Call ``method`` on ``cctxt`` (a prepared client) once, within
        what is left of the deadline if there is one."""
        return self._within_deadline(cctxt, 1).call(ctxt, method, **kwargs)

    def _prepare(self, version: str, method: str):
        if not self.client.can_send_version(version):
            raise exception.InvalidRequest(
                f"{method} needs RPC API {version} but [upgrade_levels] "
                f"scheduler caps this client at "
                f"{self.conf.upgrade_levels.scheduler}")
        return self.client.prepare(version=version)

    def _within_deadline(self, cctxt, calls: int):
        """``cctxt`` waiting for its share of what is left of the
        deadline when ``calls`` calls are still to come; itself without
        a deadline.

        :raises MessagingTimeout: nothing is left.
        """
        if self.deadline is None:
            return cctxt
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise messaging.MessagingTimeout(
                "no time left for a call before the deadline")
        return cctxt.prepare(timeout=left / calls)

    def ping(self, ctxt: dict, server: str | None = None) -> dict[str, str]:
        """Ping any server on the topic, or the one named ``server``."""
        return self._once(self.client.prepare(version="1.0", server=server),
                          ctxt, "ping")


def _with_consumers(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec with ``instance_uuids`` filled in from ``num_instances``."""
    if not isinstance(spec, dict) or spec.get("instance_uuids"):
        return spec
    num = spec.get("num_instances", 1)
    if (not isinstance(num, int) or isinstance(num, bool)
            or not 1 <= num <= MAX_LIST):
        return spec   # let the server name the bad field
    spec = dict(spec)
    spec.pop("num_instances", None)
    spec["instance_uuids"] = [str(uuidlib.uuid4()) for _ in range(num)]
    return spec
