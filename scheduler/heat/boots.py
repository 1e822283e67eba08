"""A boot of a Heat server: its destination from its stack's plan.

:meth:`HeatBoots.select` runs before the driver for every request. A
request that is not a new boot of a Heat server gets None (the driver
places it). For one that is:

1. its root stack placed (by an earlier boot, or beforehand with
   ``select_stack`` under the root stack's id) is used; else, with
   ``[heat] database_connection``, the root stack is read from Heat's
   database and placed whole now (``stacks.placement.select``: concurrent
   first boots of one stack place it once). A stack that does not fit
   refuses the boot, naming the resource: every boot of it is refused so,
   and nothing of it is claimed;
2. the boot takes over its server's claim in the plan
   (``stacks.instances.take_over``) and gets that host.

A stack whose template cannot be resolved, whose plan names no such server
or whose claim is gone is placed boot by boot, as any request, and the log
says why once per stack (per worker).
"""
from __future__ import annotations

import collections
import json
from typing import Any

from oslo_config import cfg
from oslo_log import log as logging
import sqlalchemy as sa

from scheduler.claims import lifecycle
from scheduler.claims.groups import GroupRule
from scheduler.db import allocations
from scheduler.db import foreign
from scheduler.db import response
from scheduler.db import retry as db_retry
from scheduler.decide.selection import held_destination
from scheduler import exception
from scheduler.heat import database
from scheduler.heat import flavors
from scheduler.heat import hints
from scheduler import metrics
from scheduler.request.spec import RequestSpec
from scheduler.stacks import files
from scheduler.stacks import instances
from scheduler.stacks import placement
from scheduler.stacks import store
from scheduler.stacks import template
from scheduler.stacks.stack import Stack

LOG = logging.getLogger(__name__)

#: Stacks this worker places boot by boot, remembered (with why) so that
#: each is read and logged once; the oldest are forgotten beyond this.
MAX_REMEMBERED = 1024


class HeatBoots:
    """Boots of Heat's servers for one worker's ``driver``."""

    def __init__(self, conf: cfg.ConfigOpts, driver, engine: sa.Engine):
        """:raises ConfigError: as :func:`scheduler.heat.database.engine`,
        or nova's API database (read for flavors) is not a usable URL."""
        self.conf = conf
        self.driver = driver
        self.engine = engine
        self._retry = db_retry.for_conf(conf)
        self.heat = database.engine(conf)
        self.nova_api = (foreign.reader_engine(
            conf.nova.api_database_connection,
            "[nova] api_database_connection", response.timeout(conf))
            if self.heat is not None and conf.nova.api_database_connection
            else None)
        self._one_by_one: collections.OrderedDict[str, str] = \
            collections.OrderedDict()
        self._said: collections.OrderedDict[tuple[str, str], None] = \
            collections.OrderedDict()

    def close(self) -> None:
        for engine in (self.heat, self.nova_api):
            if engine is not None:
                engine.dispose()

    def select(self, spec: RequestSpec) -> list[dict[str, Any]] | None:
        """The destination of a new boot of a Heat server, from its stack's
        plan; None for any other request, or to place it as one.

        :raises NoValidHost: the boot's stack does not fit (naming the
            resource and why).
        """
        server = hints.heat_server(spec.scheduler_hints)
        if server is None or spec.num_instances != 1 or spec.is_rebuild \
                or spec.move:
            return None
        instance = spec.instance_uuids[0]
        retry = self._retry
        if retry(allocations.placements)(self.engine, [instance]):
            # A re-send, a retry or a move: the driver answers what the
            # instance holds, or moves it.
            return None
        stack_id = server.root_stack_id
        if stack_id in self._one_by_one:
            return _by_itself()
        stored = retry(store.definition)(self.engine, stack_id)
        if stored is None:
            if self.heat is None:
                return _by_itself()
            stored = self._place(stack_id)
            if stored is None:
                return _by_itself()
        consumers = _consumers(stored)
        consumer = _consumer(consumers, server)
        if consumer is None:
            # A server the stack gained since it was placed (an update).
            self._say_once(stack_id, f"its plan has no server "
                                     f"{server.key!r}")
            return _by_itself()
        destination = self._take_over(spec, stack_id, consumer, instance)
        if destination is not None:
            # Heat creates a stack's servers batch after batch, each once
            # the one before is built: the plan's other claims get the
            # whole TTL again from every boot that lands on it.
            retry(lifecycle.renew)(
                self.engine, [u for uuids in consumers.values()
                              for u in uuids if u != consumer],
                self.conf.scheduler.unconfirmed_claim_ttl)
        return destination

    def _take_over(self, spec: RequestSpec, stack_id: str, consumer: str,
                   instance: str) -> list[dict[str, Any]] | None:
        """The boot's destination: the claim of the plan's ``consumer``,
        taken over by ``instance``; None if it cannot be."""
        retry = self._retry
        held = retry(allocations.placements)(self.engine, [consumer])
        if consumer not in held or held[consumer].node_deleted:
            # Expired, released, or another instance of this server took
            # it (Heat replaced a server that failed to build); or its node
            # is gone.
            LOG.info("Heat stack %s: the plan's claim for %s is gone; "
                     "placing it by itself", stack_id, instance)
            return _by_itself()
        row, flavor = held[consumer], spec.flavor
        if (row.vcpus, row.memory_mb, row.disk_gb) != (
                flavor.vcpus, flavor.memory_mb, flavor.disk_gb):
            self._say_once(stack_id, (
                f"a boot asks for {flavor.vcpus} vCPUs, "
                f"{flavor.memory_mb} MB, {flavor.disk_gb} GB where the plan "
                f"claimed {row.vcpus}, {row.memory_mb}, {row.disk_gb} (the "
                f"template's flavor read differently?)"))
            return _by_itself()
        group = spec.instance_group
        rule = (GroupRule(group.uuid, group.policy, group.max_server_per_host)
                if group is not None and group.uuid and group.is_hard
                else None)
        if not retry(instances.take_over)(
                self.engine, stack_id, consumer, instance, group=rule,
                project_id=spec.project_id, user_id=spec.user_id,
                ttl=self.conf.scheduler.unconfirmed_claim_ttl):
            return _by_itself()
        metrics.heat_boot("planned")
        # The claim moved as it was, on its node, to the instance.
        destination = {**held_destination(row), "uuid": instance}
        LOG.debug("Heat stack %s: %s lands on its planned host %s",
                  stack_id, instance, destination["host"])
        return [destination]

    def _place(self, stack_id: str) -> str | None:
        """Read root stack ``stack_id`` from Heat's database and place it
        whole; its stored definition, or None (remembered, and logged
        once) if it cannot be read or resolved.
        :raises NoValidHost: it does not fit."""
        try:
            with self.heat.connect() as conn:
                heat_stack = database.read_root(conn, stack_id)
            stack = Stack.from_primitives(
                self._request(heat_stack),
                self.conf.scheduler.max_instances_per_request)
        except database.NotRoot as e:
            self._remember(stack_id, str(e))
            return None
        except exception.InvalidRequest as e:
            self._remember(stack_id, f"its template: {e}")
            return None
        except foreign.READ_ERRORS as e:
            # Not remembered: the next boot of the stack tries again.
            LOG.warning("Heat stack %s: Heat's database cannot be read "
                        "(%s); placing its server by itself", stack_id,
                        foreign.why(e))
            return None
        except ValueError as e:
            self._remember(stack_id, f"Heat's rows: {e}")
            return None
        try:
            placement.select(self.driver, stack)
        except exception.NoValidHost as e:
            metrics.heat_boot("refused")
            raise exception.NoValidHost(
                f"Heat stack {heat_stack.name} ({stack_id}) does not fit, "
                f"none of it is placed: {e}") from None
        except exception.InvalidRequest as e:
            self._remember(stack_id, str(e))
            return None
        # Concurrent first boots each say so; the stack holds one plan.
        LOG.info("Heat stack %s (%s) placed whole: %d servers",
                 heat_stack.name, stack_id, len(stack.consumers))
        return stack.definition

    def _request(self, heat_stack: database.HeatStack) -> dict[str, Any]:
        """The ``select_stack`` request of ``heat_stack``.
        :raises InvalidRequest: the template cannot be resolved."""
        if self.nova_api is not None:
            with self.nova_api.connect() as conn:
                known = flavors.nova_flavors(conn)
        else:
            known = files.load_flavors(self.conf.heat.flavors_file)
        return template.to_stack(
            heat_stack.template, heat_stack.stack_id, known,
            project_id=heat_stack.project_id, stack_name=heat_stack.name,
            files=heat_stack.files, environment=heat_stack.environment)

    def _remember(self, stack_id: str, why: str) -> None:
        """Place stack ``stack_id``'s boots by themselves from now on (it
        has no plan and cannot have one), saying ``why`` once."""
        self._one_by_one[stack_id] = why
        self._say_once(stack_id, why)

    def _say_once(self, stack_id: str, why: str) -> None:
        """Log that a boot of stack ``stack_id`` is placed by itself, and
        ``why``, once per stack and reason in this worker."""
        if (stack_id, why) in self._said:
            return
        LOG.warning("Heat stack %s is placed boot by boot: %s", stack_id,
                    why)
        self._said[(stack_id, why)] = None
        for remembered in (self._said, self._one_by_one):
            while len(remembered) > MAX_REMEMBERED:
                remembered.popitem(last=False)


def _by_itself() -> None:
    """The boot is placed as any request: None, counted."""
    metrics.heat_boot("one_by_one")
    return None


def _consumers(definition: str) -> dict[str, list[str]]:
    """Each placed resource's consumer uuids, in a stored stack
    ``definition``."""
    return {name: r["spec"]["instance_uuids"] for name, r in
            json.loads(definition)["resources"].items() if r["spec"]}


def _consumer(consumers: dict[str, list[str]],
              server: hints.HeatServer) -> str | None:
    """The consumer uuid of ``server`` among a stack's ``consumers``."""
    found = hints.instance_of(server, {n: len(u)
                                       for n, u in consumers.items()})
    return None if found is None else consumers[found[0]][found[1]]
