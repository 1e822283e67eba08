"""SchedulerManager: the RPC endpoint.

Every method validates its arguments at the edge and raises only expected
exceptions for bad input or refusals, so the server logs one line (no
traceback) and keeps serving, and the caller gets the same class back.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging
import sqlalchemy as sa

from scheduler.decide import choice
from scheduler.claims import lifecycle
from scheduler.claims import moves
from scheduler import exception
from scheduler import metrics
from scheduler.rpc import instrument
from scheduler.rpc import notifications
from scheduler.decide import plugins
from scheduler.rpc import transport as rpc
from scheduler import trace
from scheduler.db import retry as db_retry
from scheduler.hosts.manager import HostManager
from scheduler.request.names import canonical_uuid
from scheduler.request.names import check_bool
from scheduler.request.names import check_host
from scheduler.request.names import is_uuid
from scheduler.request.schema import check_depth
from scheduler.request.spec import RequestSpec
from scheduler.drain import capacity as drain_capacity
from scheduler.drain import drain
from scheduler.stacks import placement as stack_placement
from scheduler.stacks.ids import canonical_id
from scheduler.stacks.stack import Stack

LOG = logging.getLogger(__name__)

MAX_RANK_LIMIT = 1000


class SchedulerManager:
    target = messaging.Target(version=rpc.API_VERSION)
    #: The API label of this endpoint's metrics and notifications.
    rpc_api = "scheduler"

    def __init__(self, conf: cfg.ConfigOpts, engine: sa.Engine,
                 share: choice.Share = choice.ALONE):
        """``share``: this worker's place among its server's workers."""
        self.conf = conf
        self.engine = engine
        self.host_manager = HostManager(conf, engine)
        self.driver = plugins.load_driver(conf, self.host_manager, engine)
        # Given here, before any request, not to the driver's constructor:
        # drivers, third parties' included, keep the (conf, host_manager,
        # engine) signature.
        chooser = getattr(self.driver, "chooser", None)
        if chooser is not None:
            chooser.share = share
        self._retry = db_retry.for_conf(conf)
        #: None unless a notification driver is configured.
        self.notifier = notifications.notifier(conf)
        #: Set by the worker: the destinations a request has in a plan
        #: made before it (a Heat stack's, ``heat.boots``), or None.
        self.planned: Callable[[RequestSpec], list | None] | None = None

    def take_place(self, server: int, servers: int) -> None:
        """This server is ``server`` of the ``servers`` up on its topic (the
        worker reads it with each heartbeat,
        :func:`scheduler.service.peers.heartbeat`): this worker's share
        among them.

        The chooser gets a new :class:`~scheduler.decide.choice.Share` (a
        request reads it once), and only when the place changed.
        """
        topic = self.conf.scheduler.topic
        chooser = getattr(self.driver, "chooser", None)
        if chooser is None or (chooser.share.server,
                               chooser.share.servers) == (server, servers):
            return
        chooser.share = dataclasses.replace(chooser.share, server=server,
                                            servers=servers)
        LOG.info("Scheduler server %d of %d up on topic %r: its workers "
                 "prefer 1 in %d of the best hosts", server + 1, servers,
                 topic, servers * chooser.share.count)

    def close(self) -> None:
        """Release the notification transport and the driver's connections
        (the worker stops, no request in flight)."""
        if self.notifier is not None:
            self.notifier.transport.cleanup()
            self.notifier = None
        self.driver.close()

    @messaging.expose
    @messaging.expected_exceptions(exception.NoValidHost,
                                   exception.InvalidRequest)
    @instrument.rpc_method
    def select_destinations(self, ctxt: Any, spec: Any = None,
                            request_spec: Any = None,
                            filter_properties: Any = None
                            ) -> list[dict[str, Any]]:
        """Place and claim every instance of the request, all or nothing.

        Takes ``spec`` (current shape) or the legacy ``request_spec`` +
        ``filter_properties`` pair.
        :raises InvalidRequest: the request is malformed (names the field).
        :raises NoValidHost: it cannot be placed (says why, per filter).
        """
        parsed = self._parse(spec, request_spec, filter_properties)
        try:
            result = self.place(parsed)
        except exception.NoValidHost as e:
            LOG.info("Request for %d instance(s) refused: %s",
                     parsed.num_instances, e)
            raise
        # DEBUG, not INFO: one line per placement floods a busy service's
        # log; the .end notification and the metrics carry placements.
        LOG.debug("Placed %s", ", ".join(
            f"{d['uuid']} on {d['host']}" for d in result))
        return result

    def place(self, spec: RequestSpec) -> list[dict[str, Any]]:
        """The destinations of ``spec``, claimed: those a plan made before
        holds for it (:attr:`planned`), else the driver's.
        :raises NoValidHost: as the driver, or the plan refuses it."""
        if self.planned is not None:
            result = self.planned(spec)
            if result is not None:
                return result
        return self.driver.select_destinations(spec)

    @messaging.expose
    @messaging.expected_exceptions(exception.InvalidRequest)
    @instrument.rpc_method
    def rank_destinations(self, ctxt: Any, spec: Any = None,
                          limit: Any = 20) -> dict[str, Any]:
        """Dry run: the hosts that would be chosen, best first, with their
        weights, and what each filter removed. Nothing is claimed."""
        if not isinstance(limit, int) or isinstance(limit, bool) or not (
                1 <= limit <= MAX_RANK_LIMIT):
            raise exception.InvalidRequest(
                f"limit: expected an integer from 1 to {MAX_RANK_LIMIT}, "
                f"got {limit!r}"[:200])
        parsed = self._parse(spec, None, None)
        if not hasattr(self.driver, "rank"):
            raise exception.InvalidRequest(
                f"rank_destinations: driver {self.conf.scheduler.driver!r} "
                f"does not rank hosts")
        return self.driver.rank(parsed, limit)

    @messaging.expose
    @messaging.expected_exceptions(exception.InvalidRequest)
    @instrument.rpc_method
    def release(self, ctxt: Any, consumer_uuids: Any = None) -> int:
        """Give back the claims of these consumers; idempotent.
        :returns: how many claims were released now."""
        return self._on_consumers(lifecycle.release, consumer_uuids,
                                  "Released %d of %d consumer(s)")

    @messaging.expose
    @messaging.expected_exceptions(exception.InvalidRequest)
    @instrument.rpc_method
    def confirm(self, ctxt: Any, consumer_uuids: Any = None) -> int:
        """Make provisional claims permanent (the instances were built), so
        ``[scheduler] unconfirmed_claim_ttl`` no longer releases them.
        :returns: how many of the consumers hold a claim."""
        return self._on_consumers(lifecycle.confirm, consumer_uuids)

    @messaging.expose
    @messaging.expected_exceptions(exception.NoValidHost,
                                   exception.InvalidRequest)
    @instrument.rpc_method
    def select_stack(self, ctxt: Any, stack: Any = None) -> dict[str, Any]:
        """Place and claim every resource of a stack, all or nothing
        (architecture.rst "Stacks"); a re-sent stack returns what it holds.
        :raises InvalidRequest: malformed stack (names the field), a
            dependency cycle or unknown reference, or a different stack
            under this stack_id (names what changed).
        :raises NoValidHost: names the resource and why, per filter.
        """
        return self._stack(stack, dry_run=False)

    @messaging.expose
    @messaging.expected_exceptions(exception.NoValidHost,
                                   exception.InvalidRequest)
    @instrument.rpc_method
    def rank_stack(self, ctxt: Any, stack: Any = None) -> dict[str, Any]:
        """Dry run of select_stack: the order and the plan, nothing
        claimed. Raises as select_stack."""
        return self._stack(stack, dry_run=True)

    @messaging.expose
    @messaging.expected_exceptions(exception.InvalidRequest)
    @instrument.rpc_method
    def release_stack(self, ctxt: Any, stack_id: Any = None) -> int:
        """Release every claim of the stack and forget it; idempotent.
        :returns: how many claims were released now.
        :raises InvalidRequest: ``stack_id`` is not a uuid as select_stack
            reads one (:func:`scheduler.stacks.ids.canonical_id`)."""
        check_depth(stack_id, "stack_id")     # its error words the value
        stack_id = canonical_id(stack_id)
        trace.parsed(stack_id)
        released = stack_placement.release(self.engine, stack_id,
                                           self._retry)
        LOG.debug("Released stack %s: %d claim(s)", stack_id, released)
        return released

    def _stack(self, stack: Any, dry_run: bool) -> dict[str, Any]:
        started = time.perf_counter()
        parsed = Stack.from_primitives(
            stack, self.conf.scheduler.max_instances_per_request)
        trace.parsed(parsed, started)
        try:
            result = stack_placement.select(self.driver, parsed, dry_run)
        except exception.NoValidHost as e:
            LOG.info("Stack %s refused: %s", parsed.stack_id, e)
            raise
        if not dry_run:
            LOG.debug("Placed stack %s: %s", parsed.stack_id, ", ".join(
                f"{name} on {'+'.join(d['host'] for d in dests)}"
                for name, dests in result["resources"].items()))
        return result

    @messaging.expose
    @messaging.expected_exceptions(exception.InvalidRequest)
    @instrument.rpc_method
    def confirm_move(self, ctxt: Any, consumer_uuids: Any = None) -> int:
        """The consumers' moves are done: give back their sources, keep
        their destinations (confirmed). Consumers not moving are left alone.
        :returns: how many moves were confirmed now."""
        return self._on_consumers(moves.confirm_move, consumer_uuids,
                                  "Confirmed %d move(s) of %d consumer(s)")

    @messaging.expose
    @messaging.expected_exceptions(exception.InvalidRequest)
    @instrument.rpc_method
    def revert_move(self, ctxt: Any, consumer_uuids: Any = None) -> int:
        """The consumers' moves are undone: give back their destinations;
        their sources are their claims again. Consumers not moving are left
        alone.
        :returns: how many moves were reverted now."""
        return self._on_consumers(moves.revert_move, consumer_uuids,
                                  "Reverted %d move(s) of %d consumer(s)")

    @messaging.expose
    @messaging.expected_exceptions(exception.NoValidHost,
                                   exception.InvalidRequest)
    @instrument.rpc_method
    def plan_drain(self, ctxt: Any, host: Any = None, apply: Any = False,
                   same_aggregate: Any = False) -> dict[str, Any]:
        """A destination for every instance on ``host``, all planned
        against each other; with ``apply`` all claimed in one transaction
        and the host disabled (architecture.rst "Draining a host").
        :raises InvalidRequest: a bad or unknown host, a flag not a bool,
            a host draining with the other ``same_aggregate``.
        :raises NoValidHost: names the instance that cannot move and why;
            nothing was claimed.
        """
        host = check_host("host", host)
        check_bool("apply", apply)
        check_bool("same_aggregate", same_aggregate)
        trace.parsed({"host": host, "apply": apply,
                      "same_aggregate": same_aggregate})
        try:
            result = drain.plan_drain(self.driver, host, apply,
                                      same_aggregate)
        except exception.NoValidHost as e:
            LOG.info("Drain of host %s refused: %s", host, e)
            raise
        metrics.drain("applied" if apply else "planned",
                      len(result["moves"]))
        return result

    @messaging.expose
    @messaging.expected_exceptions(exception.InvalidRequest)
    @instrument.rpc_method
    def cancel_drain(self, ctxt: Any, host: Any = None) -> int:
        """End the drain of ``host``: release its moves not yet begun and
        enable the host again; idempotent.
        :returns: how many planned moves were released."""
        host = check_host("host", host)
        trace.parsed({"host": host})
        released = drain.cancel_drain(self.driver, host)
        metrics.drain("cancelled", released)
        LOG.info("Drain of host %s cancelled: %d move(s) released", host,
                 released)
        return released

    @messaging.expose
    @messaging.expected_exceptions(exception.NoValidHost,
                                   exception.InvalidRequest)
    @instrument.rpc_method
    def capacity(self, ctxt: Any, spec: Any = None,
                 without_hosts: Any = None) -> dict[str, Any]:
        """How many more instances like ``spec`` fit now, in total, per
        zone and per aggregate; with ``without_hosts``, as if those were
        drained. Nothing is claimed.
        :raises InvalidRequest: a malformed spec or host list (named).
        :raises NoValidHost: an instance of ``without_hosts`` could not
            move off them."""
        without_hosts = [] if without_hosts is None else without_hosts
        if not isinstance(without_hosts, list):
            raise exception.InvalidRequest(
                "without_hosts: expected a list of host names")
        if len(without_hosts) > drain_capacity.MAX_WITHOUT:
            raise exception.InvalidRequest(
                f"without_hosts: at most {drain_capacity.MAX_WITHOUT} hosts")
        hosts = [check_host("without_hosts", h) for h in without_hosts]
        parsed = self._parse(spec, None, None)
        return drain_capacity.capacity(self.driver, parsed, hosts)

    @messaging.expose
    @instrument.rpc_method
    def ping(self, ctxt: Any) -> dict[str, str]:
        """Who answered: this server's host, API version and driver."""
        return {"host": self.conf.host, "version": rpc.API_VERSION,
                "driver": self.conf.scheduler.driver}

    def run_periodic_tasks(self) -> None:
        """Give back expired provisional claims; the driver's own tasks."""
        expired = self._retry(lifecycle.expire)(self.engine)
        if expired:
            LOG.info("Released %d claim(s) never confirmed within %d s",
                     expired, self.conf.scheduler.unconfirmed_claim_ttl)
        self.driver.run_periodic_tasks()

    def _on_consumers(self, change: Callable[[sa.Engine, list[str]], int],
                      consumer_uuids: Any, said: str | None = None) -> int:
        """What release, confirm, confirm_move and revert_move share: check
        ``consumer_uuids``, run ``change(engine, uuids)`` in a transaction
        retried as every service caller's, and say at DEBUG (``said``:
        the count changed, then the count asked) what it changed.
        :returns: what ``change`` returns (how many it changed)."""
        consumer_uuids = self._check_uuids(consumer_uuids)
        changed = self._retry(change)(self.engine, consumer_uuids)
        if said is not None:
            LOG.debug(said, changed, len(consumer_uuids))
        return changed

    def _check_uuids(self, consumer_uuids: Any) -> list[str]:
        """Validate ``consumer_uuids``; they are what the request asks
        about (:func:`scheduler.trace.parsed`)."""
        limit = self.conf.scheduler.max_instances_per_request
        if (not isinstance(consumer_uuids, list)
                or not all(isinstance(u, str) and len(u) <= 36
                           for u in consumer_uuids)
                or len(consumer_uuids) > limit):
            raise exception.InvalidRequest(
                f"consumer_uuids: expected a list of at most {limit} uuids")
        bad = [u for u in consumer_uuids if not is_uuid(u)]
        if bad:
            raise exception.InvalidRequest(
                f"consumer_uuids: {bad[0]!r} is not a UUID")
        # as claims store them (select_destinations takes either case,
        # dashes optional)
        consumer_uuids = [canonical_uuid(u, "consumer_uuids")
                          for u in consumer_uuids]
        trace.parsed(consumer_uuids)
        return consumer_uuids

    def _parse(self, spec, request_spec, filter_properties) -> RequestSpec:
        started = time.perf_counter()
        limit = self.conf.scheduler.max_instances_per_request
        if spec is not None:
            if request_spec is not None or filter_properties is not None:
                raise exception.InvalidRequest(
                    "spec: give either spec or the legacy request_spec and "
                    "filter_properties, not both")
            parsed = RequestSpec.from_primitives(spec, limit)
        elif request_spec is None:
            raise exception.InvalidRequest(
                "spec: missing (or the legacy request_spec)")
        else:
            parsed = RequestSpec.from_legacy(request_spec, filter_properties,
                                             limit)
        trace.parsed(parsed, started)
        return parsed

