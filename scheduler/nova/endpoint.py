"""The RPC endpoint nova's conductor and computes talk to (nova's scheduler
API 4.5), served beside our 1.x endpoint on the same topic and server.

oslo.messaging's dispatcher picks the endpoint by the message's major
version: nova sends 4.x, our own client 1.x, so the two never meet. Both
share one driver, one host table and one database engine (the 1.x
:class:`~scheduler.rpc.endpoint.SchedulerManager`'s), so a claim made for nova
is seen by our own API at once and the other way round.
"""
from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any, Callable

from oslo_log import log as logging
import oslo_messaging as messaging
import sqlalchemy as sa

from scheduler import errors
from scheduler import exception
from scheduler.rpc import instrument
from scheduler import trace
from scheduler.db import retry as db_retry
from scheduler.rpc.endpoint import SchedulerManager
from scheduler.nova import casts
from scheduler.nova import primitives
from scheduler.nova import selections
from scheduler.nova.exception import NoValidHost
from scheduler.request.schema import check_depth
from scheduler.request.spec import RequestSpec

LOG = logging.getLogger(__name__)

#: Nova 34 sends select_destinations at 4.5 and refuses to send the
#: Selection-object call to anything older.
API_VERSION = "4.5"


class NovaSchedulerEndpoint:
    """Nova's ``SchedulerManager`` RPC API, on top of ours."""

    target = messaging.Target(version=API_VERSION)
    #: The API label of this endpoint's metrics and notifications.
    rpc_api = "nova"
    #: What :mod:`~scheduler.rpc.instrument` counts as a refusal: nova's
    #: class, which this API refuses with, and ours beside it.
    refusals = (NoValidHost, exception.NoValidHost)
    #: Nova's conductor waits for select_destinations as long as this
    #: server tells it, every ``rpc_response_timeout`` / 2 seconds, that it
    #: is still working (oslo.messaging's call monitor), up to nova's own
    #: long_rpc_timeout (30 minutes); its casts wait for nothing. Its
    #: requests run to their end (instrument.rpc_method).
    patient_callers = True

    def __init__(self, manager: SchedulerManager,
                 cell_of: Callable[[str], str | None] | None = None):
        """``cell_of(host)``: the uuid of a host's cell, with nova's
        databases as the host source (None: every host is in ``[nova]
        cell_uuid``)."""
        self.manager = manager
        self.conf = manager.conf
        self._retry = db_retry.for_conf(manager.conf)
        self._cell_of = cell_of
        # A request's own cell (a move's requested_destination.cell): this
        # service's one cell, or with many, the aggregate of its hosts.
        self._one_cell = primitives.MANY_CELLS if cell_of else \
            self.conf.nova.cell_uuid

    @property
    def notifier(self):
        """The 1.x endpoint's: one per worker."""
        return self.manager.notifier

    @messaging.expose
    @messaging.expected_exceptions(NoValidHost)
    @instrument.rpc_method
    def select_destinations(self, ctxt: Any, request_spec: Any = None,
                            filter_properties: Any = None,
                            spec_obj: Any = None, instance_uuids: Any = None,
                            return_objects: Any = False,
                            return_alternates: Any = False) -> list:
        """Place and claim, as nova's ``select_destinations`` (4.0-4.5).

        Every refusal (no host, a field we cannot honour, a malformed
        request) is a :class:`~scheduler.nova.exception.NoValidHost`, the
        only failure nova's conductor handles as a scheduling failure.
        :returns: with ``return_objects``, one list of Selection 1.1
            primitives per instance (chosen host first, then alternates);
            else one ``{"host", "nodename", "limits"}`` dict per instance.
        """
        try:
            if return_objects and not self._cell_of and \
                    not self.conf.nova.cell_uuid:
                raise exception.ConfigError(
                    "[nova] cell_uuid is not set; nova's Selection objects "
                    "need the cell of the hosts this service places on")
            spec = self._parse(request_spec, filter_properties, spec_obj,
                               instance_uuids, bool(return_alternates))
            result = self.manager.place(spec)
            trace.placed(result)
        except primitives.Unsupported as e:
            LOG.info("Nova request refused: %s", e)
            raise NoValidHost(f"No valid host: {e}") from None
        except exception.SchedulerException as e:
            LOG.info("Nova request refused: %s", e)
            raise NoValidHost(str(e)) from None
        # DEBUG: see SchedulerManager.select_destinations.
        LOG.debug("Placed for nova: %s", ", ".join(
            f"{d['uuid']} on {d['host']}" for d in result))
        return selections.reply(result, bool(return_objects),
                                self._cell_of or self._fixed_cell)

    def _fixed_cell(self, host: str) -> str | None:
        return self.conf.nova.cell_uuid

    def _parse(self, request_spec: Any, filter_properties: Any,
               spec_obj: Any, instance_uuids: Any,
               return_alternates: bool) -> RequestSpec:
        started = time.perf_counter()
        limit = self.conf.scheduler.max_instances_per_request
        # Before the primitives are read: an error there words a value,
        # as deep as it is.
        check_depth(spec_obj, "spec_obj")
        check_depth(request_spec, "request_spec")
        check_depth(filter_properties, "filter_properties")
        if spec_obj is not None:
            spec = RequestSpec.from_primitives(
                primitives.spec_from_request_spec(
                    spec_obj, instance_uuids, return_alternates,
                    self._one_cell), limit)
        elif request_spec is not None:
            spec = RequestSpec.from_primitives(primitives.spec_from_legacy(
                request_spec, filter_properties, self._one_cell),
                limit)
        else:
            raise exception.InvalidRequest(
                "spec_obj: missing (or the 4.0 request_spec)")
        # Nova never says whether a request moves an instance; the move
        # rule infers it from what the instance holds.
        spec = dataclasses.replace(spec, move=None)
        trace.parsed(spec, started)
        return spec

    @messaging.expose
    @instrument.rpc_method
    def update_aggregates(self, ctxt: Any, aggregates: Any = None) -> None:
        """Accepted and dropped: aggregates are read from our SQL."""
        LOG.debug("update_aggregates cast ignored: aggregates come from SQL")

    @messaging.expose
    @instrument.rpc_method
    def delete_aggregate(self, ctxt: Any, aggregate: Any = None) -> None:
        """Accepted and dropped: aggregates are read from our SQL."""
        LOG.debug("delete_aggregate cast ignored: aggregates come from SQL")

    @messaging.expose
    @instrument.rpc_method
    def update_instance_info(self, ctxt: Any, host_name: Any = None,
                             instance_info: Any = None) -> None:
        """A compute reports instances on a host: see
        :func:`scheduler.nova.casts.seen`, told which are resized."""
        def seen(engine: sa.Engine,
                 reported: tuple[dict[str, str], frozenset[str]],
                 retry: casts.Retry) -> int:
            return casts.seen(engine, *reported, retry=retry)
        self._cast("update_instance_info", seen, host_name,
                   casts.instances_reported, instance_info)

    @messaging.expose
    @instrument.rpc_method
    def sync_instance_info(self, ctxt: Any, host_name: Any = None,
                           instance_uuids: Any = None) -> None:
        """A compute lists every instance on its host (every ~120 s): see
        :func:`scheduler.nova.casts.listed`."""
        self._cast("sync_instance_info", casts.listed, host_name,
                   casts.uuids_listed, instance_uuids)

    @messaging.expose
    @instrument.rpc_method
    def delete_instance_info(self, ctxt: Any, host_name: Any = None,
                             instance_uuid: Any = None) -> None:
        """An instance left a host: see :func:`scheduler.nova.casts.gone`."""
        gone = functools.partial(
            casts.gone, ttl=self.conf.scheduler.unconfirmed_claim_ttl)
        self._cast("delete_instance_info", gone, host_name,
                   casts.uuids_listed, [instance_uuid])

    def _cast(self, name: str, action, host_name: Any, read, value: Any
              ) -> None:
        # A cast has no caller to answer: bad input and a database away are
        # logged in one line each (a bug with its traceback) and the next
        # cast carries on.
        reported = dropped = failed = None
        try:
            if not isinstance(host_name, str) or not host_name:
                raise exception.InvalidRequest(
                    "host_name: expected a host name")
            reported = read(value, host_name)
            # Each of its transactions retried alone (casts.Retry).
            changed = action(self.manager.engine, reported,
                             retry=self._retry)
        except exception.InvalidRequest as e:
            dropped = str(e)
        except Exception as e:  # noqa: BLE001 - see above
            failed = errors.describe(e, self.conf)
            if failed is None:
                # Not an operator's problem but a bug: its traceback.
                LOG.exception("%s cast from %r%s not applied", name,
                              host_name, _about(reported))
                return
        # Logged outside the except clauses: oslo.log would append the
        # exception's own text, the driver's message again, to the line.
        if dropped is not None:
            LOG.warning("%s cast from %r dropped: %s", name, host_name,
                        dropped)
        elif failed is not None:
            # Nova does not send a cast again: the line of one not applied
            # names its instances, for the operator to set right.
            LOG.warning("%s cast from %r%s not applied: %s", name,
                        host_name, _about(reported), failed)
        else:
            # Computes send these every ~120 s: only a change is news.
            LOG.log(logging.INFO if changed else logging.DEBUG,
                    "%s from %s: %d claim(s) changed", name, host_name,
                    changed)


def _about(reported: Any) -> str:
    """`` about`` the instances of a cast read (``read``'s result), for
    its line; empty if it was not read."""
    if reported is None:
        return ""
    return " about " + _named(
        reported[0] if isinstance(reported, tuple) else reported)


#: At most this many instances are named in a cast's log line.
NAMED_INSTANCES = 10


def _named(where: dict[str, str]) -> str:
    """The instances of a cast (uuid -> host), for its one log line: each
    uuid, or the first :data:`NAMED_INSTANCES` and how many more."""
    uuids = list(where)
    more = len(uuids) - NAMED_INSTANCES
    return "instance(s) " + ", ".join(uuids[:NAMED_INSTANCES]) + (
        f" and {more} more" if more > 0 else "")
