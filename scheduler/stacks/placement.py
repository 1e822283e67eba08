"""select_stack, rank_stack and release_stack: a whole stack placed and
claimed at once, idempotently.

- A stack id seen before with the same definition returns what the stack
  holds (a re-sent call, a message delivered twice); if some of its claims
  are gone (released one by one, expired) the stack is planned again and
  the new claims replace the ones left, atomically: the plan and the claim
  count what those hold as room, once.
- A stack id seen before with another definition is refused, naming what
  changed: the caller must release it first.
- A new stack naming a consumer of another stack, or one that holds a
  claim the stack did not make, is refused naming it: a consumer is one
  stack's, or one request's, and what it holds stays as it is.
- A lost claim race (another scheduler changed a node) re-reads the hosts
  and plans the whole stack again, at most ``[scheduler] claim_retries``
  times, as a single request does.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable

from oslo_log import log as logging

from scheduler.claims import lifecycle
from scheduler.claims import usage
from scheduler.claims.groups import GroupRule
from scheduler.claims.refusals import ConsumerExists
from scheduler.claims.refusals import NoRoom
from scheduler.claims.usage import Usage
from scheduler.db import allocations
from scheduler.hosts.planned import Claim
from scheduler.hosts.planned import ClaimConflict
from scheduler.decide.assumed import Assumption
from scheduler.decide.attempts import Attempts
from scheduler import exception
from scheduler import metrics
from scheduler import trace
from scheduler.db import retry as db_retry
from scheduler.decide.selection import destination
from scheduler.decide.selection import held_destination
from scheduler.request.spec import InstanceGroup
from scheduler.request.spec import RequestSpec
from scheduler.stacks import definition
from scheduler.stacks import instances
from scheduler.stacks import planner
from scheduler.stacks import store
from scheduler.stacks.stack import Stack

LOG = logging.getLogger(__name__)


def select(driver, stack: Stack,
           dry_run: bool = False) -> dict[str, Any]:
    """Place and claim every resource of ``stack``, all or nothing; with
    ``dry_run`` only plan (nothing is written).

    ``driver`` must be able to plan on a shared view (``plan_on``: the
    filter and caching schedulers).
    :returns: ``{"stack_id", "order", "resources": {name: [destination]}}``
        (destinations as select_destinations returns them), plus
        ``"dry_run": True`` for a dry run.
    :raises InvalidRequest: the driver cannot place stacks, the stack id
        is held by a different stack (naming what changed), or a consumer
        is another's (see :func:`_unclaimed`).
    :raises NoValidHost: naming the resource that found no host and why,
        or after losing ``claim_retries`` races in a row.
    """
    if not hasattr(driver, "plan_on"):
        raise exception.InvalidRequest(
            f"select_stack: driver {driver.conf.scheduler.driver!r} does "
            f"not place stacks")
    conf = driver.conf
    retry = db_retry.for_conf(conf)
    consumers = stack.consumers
    # Each time a concurrent send claimed first, the stack is read again:
    # what it holds then answers this one, whatever retries are left.
    lost = 0
    while True:
        stored = retry(store.definition)(driver.engine, stack.stack_id)
        if stored is not None and stored != stack.definition:
            raise exception.InvalidRequest(
                f"stack_id: stack {stack.stack_id} is already placed with "
                f"another definition (release it first): "
                + "; ".join(definition.changes(stored, stack.definition)))
        # Each consumer's claim, under whoever holds it now: nova's
        # instance for a server of the stack nova booted (stacks.instances).
        held = retry(allocations.stack_placements)(
            driver.engine, stack.stack_id, consumers)
        if stored is not None and allocations.holds_all(held, len(consumers)):
            if not dry_run:
                # Handed out again: the caller's time to build restarts.
                retry(lifecycle.renew)(
                    driver.engine, [r.consumer_uuid for r in held.values()],
                    conf.scheduler.unconfirmed_claim_ttl)
            return _result(stack, {
                name: [held_destination(held[u])
                       for u in r.spec.instance_uuids]
                for name, r in stack.placed.items()}, dry_run)
        if stored is not None and retry(instances.any_taken)(
                driver.engine, stack.stack_id):
            # Its servers are nova's now: planning the stack again would
            # claim beside them.
            raise exception.InvalidRequest(
                f"stack_id: stack {stack.stack_id} has servers nova booted "
                f"and {len(consumers) - len(held)} of its claims are gone "
                f"(release it first)")
        if lost > conf.scheduler.claim_retries:
            break
        if stored is None and not _unclaimed(driver, stack, held, retry):
            # A concurrent send of this stack placed it since the stack
            # was read: look again at what it holds.
            lost += 1
            continue
        # What is left of an earlier placement of this stack is replaced in
        # the same transaction.
        replace = [r.consumer_uuid for r in held.values()]
        try:
            result = _place(driver, stack, replace, usage.freed_by(
                held.values()), stored is not None, dry_run, retry)
        except exception.NoValidHost:
            # A concurrent send of this new stack may have claimed it since
            # it was read: its claims then fill the hosts (and its server
            # groups) this plan looked for. What it holds answers this one.
            if stored is not None or dry_run or retry(store.definition)(
                    driver.engine, stack.stack_id) is None:
                raise
            result = None
        if result is not None:
            return result
        # A concurrent send of this stack (or of its consumers) won: look
        # again at what it holds.
        lost += 1
    trace.refused(trace.CLAIM_REFUSAL)
    raise exception.NoValidHost(
        f"No valid host for stack {stack.stack_id}: its consumers were "
        f"claimed concurrently {lost} times in a row")


def _unclaimed(driver, stack: Stack, held: dict[str, Any],
               retry) -> bool:
    """Whether the consumers of new stack ``stack`` are no one else's:
    False if what they hold (``held``) is this stack's own, placed by a
    concurrent send since its row was read.

    :raises InvalidRequest: naming a consumer that is an instance of
        another stack (the two would share its claim: a re-send of one
        answers with the other's, releasing one releases the other's), or
        that holds a claim this stack did not make (an instance placed
        alone is not the stack's to move).
    """
    named = stack.named_consumers
    if not held and not named:
        return True
    where = {u: name for name, r in stack.placed.items()
             for u in r.spec.instance_uuids}
    owners = retry(store.owners)(driver.engine, stack.stack_id,
                                 [*held, *named])
    for u in stack.consumers:
        if u in owners:
            raise exception.InvalidRequest(
                f"resources.{where[u]}.spec.instance_uuids: {u} is "
                f"an instance of stack {owners[u]} (release it first)")
    if not held:
        return True
    if retry(store.definition)(driver.engine, stack.stack_id) is not None:
        return False
    u = next(u for u in stack.consumers if u in held)
    raise exception.InvalidRequest(
        f"resources.{where[u]}.spec.instance_uuids: {u} already holds "
        f"a claim this stack did not make (release it first)")


def _place(driver, stack: Stack, replace: list[str],
           freed: list[Usage], known: bool, dry_run: bool,
           retry) -> dict[str, Any] | None:
    """Plan and claim; None if a concurrent duplicate claimed first.
    ``replace`` names the consumers whose claims the new ones replace, and
    ``freed`` is what those hold: room for the stack."""
    conf = driver.conf
    specs = {name: retry(driver.with_hint_hosts)(r.spec, replace)
             for name, r in stack.placed.items()}
    rules = _group_rules(specs.values())
    attempts = Attempts(conf.scheduler.claim_retries, driver.chooser,
                        subject=f" for stack {stack.stack_id}")
    for attempt in attempts:
        with_members = retry(_with_members)(driver, specs, replace)
        try:
            with Assumption(driver) as assumption:
                # Plan and assume in the driver's scheduling cycle (one
                # consistent table; the next decision of this process
                # sees this stack's usage); claim outside it.
                with driver.cycle(fresh=attempt > 0) as table:
                    try:
                        plan = planner.plan(
                            driver, stack,
                            attempts.table(table).releasing(freed),
                            with_members, spread=attempts.spread)
                    except exception.NoValidHost as e:
                        raise attempts.refusal(e) from None
                    if dry_run:
                        return _planned_result(stack, plan, dry_run=True)
                    assumption.assume(
                        ((s.host, plan.specs[name].flavor)
                         for name, chosen in plan.selections.items()
                         for s in chosen),
                        [s.claim(spec) for name, spec in plan.specs.items()
                         for s in plan.selections[name]])
                assumption.claim(lambda: _claim(
                    driver, stack, assumption.to_claim, known=known,
                    groups=rules, replace=replace, retry=retry))
        except NoRoom as e:
            forced = _forced_on(plan, e.node_id)
            if forced:
                trace.refused(trace.CLAIM_REFUSAL)
                raise exception.NoValidHost(
                    f"No valid host for resource {forced!r} of stack "
                    f"{stack.stack_id}: the forced host has no room: {e}")
            attempts.no_room(e, plan.all_selections())
            continue
        except ClaimConflict as e:
            attempts.conflicted(e, plan.specs.values())
            continue
        except ConsumerExists:
            metrics.claim_conflict("duplicate")
            return None
        return _planned_result(stack, plan)
    raise attempts.given_up()


def _claim(driver, stack: Stack, to_claim: list[Claim], *, known: bool,
           groups: list[GroupRule], replace: list[str], retry) -> None:
    """store.claim, timed (run by :meth:`Assumption.claim`, once the
    claims of this process it was planned on are won)."""
    started = time.perf_counter()
    try:
        retry(store.claim)(
            driver.engine, stack, to_claim, known=known, groups=groups,
            replace=replace, ttl=driver.conf.scheduler.unconfirmed_claim_ttl,
            default_ratios=driver.host_manager.default_ratios)
    finally:
        trace.add(trace.CLAIM, time.perf_counter() - started)


def release(engine, stack_id: str, retry: Callable) -> int:
    """Release stack ``stack_id`` (see store.release), its transaction run
    by ``retry`` (e.g. :func:`scheduler.db.retry.for_conf`'s); idempotent."""
    return retry(store.release)(engine, stack_id)


def _group_rules(specs) -> list[GroupRule]:
    """One rule per hard server group named in the stack (the stack's
    validation made its resources agree on each group's policy)."""
    rules: dict[str, GroupRule] = {}
    for spec in specs:
        group = spec.instance_group
        if group is not None and group.uuid and group.is_hard:
            rules[group.uuid] = GroupRule(
                group.uuid, group.policy, group.max_server_per_host)
    return list(rules.values())


def _with_members(driver, specs: dict[str, RequestSpec],
                  replace: list[str]) -> dict[str, RequestSpec]:
    """Every spec with its group's members from the claims: one read per
    group, not per resource."""
    resolved: dict[InstanceGroup, InstanceGroup] = {}
    out = {}
    for name, spec in specs.items():
        group = spec.instance_group
        if group is None or not group.uuid:
            out[name] = spec
            continue
        if group not in resolved:
            resolved[group] = driver.with_group_members(
                spec, replace).instance_group
        out[name] = dataclasses.replace(spec,
                                        instance_group=resolved[group])
    return out


def _forced_on(plan: planner.Plan, node_id: int | None) -> str | None:
    """The forced resource planned on node ``node_id``, if any."""
    for name, spec in plan.specs.items():
        if spec.force_hosts or spec.force_nodes:
            if any(s.host.node_id == node_id
                   for s in plan.selections[name]):
                return name
    return None


def _planned_result(stack: Stack, plan: planner.Plan,
                    dry_run: bool = False) -> dict[str, Any]:
    return _result(stack, {
        name: [destination(plan.specs[name], s)
               for s in plan.selections[name]]
        for name in stack.placed}, dry_run)


def _result(stack: Stack, resources: dict[str, list],
            dry_run: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"stack_id": stack.stack_id, "order": stack.order,
                           "resources": resources}
    if dry_run:
        out["dry_run"] = True
    return out
