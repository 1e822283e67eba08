"""Active-active schedulers never double-book.

Three scheduler-server processes with two workers each share one broker and
one database. Thirty-two client threads ask for more than the fleet holds:
single and multi-instance requests, some in anti-affinity groups, some sent
twice with the same consumers. Afterwards the fleet is exactly full, every
refused request got NoValidHost, the books balance, no group is broken and
no consumer holds two claims. The same holds with whole stacks in the
mix: their relations and groups stay intact, and a refused stack holds
nothing.
"""
from __future__ import annotations

import collections
import concurrent.futures
import random
import uuid


from scheduler import exception
from scheduler.stacks.stack import Stack
from tests.functional.conftest import every_database
from tests.functional.conftest import node

pytestmark = every_database

HOSTS = 12
SLOTS_PER_HOST = 4            # 4096 MB / 1024 MB, 8 vCPUs / 2
CAPACITY = HOSTS * SLOTS_PER_HOST
FLAVOR = {"memory_mb": 1024, "vcpus": 2, "root_gb": 10}
GROUPS = [str(uuid.uuid4()) for _ in range(3)]


def _requests(rng: random.Random) -> list[dict]:
    """More demand than capacity, in the mix the issue asks for."""
    specs = []
    for _ in range(40):
        specs.append({"instance_uuids": [str(uuid.uuid4())],
                      "flavor": FLAVOR})
    for _ in range(12):
        n = rng.choice((2, 3))
        specs.append({"instance_uuids": [str(uuid.uuid4())
                                         for _ in range(n)],
                      "flavor": FLAVOR})
    for group in GROUPS:
        for _ in range(8):       # 8 members, anti-affinity over 12 hosts
            specs.append({"instance_uuids": [str(uuid.uuid4())],
                          "flavor": FLAVOR,
                          "instance_group": {"uuid": group,
                                             "policies": ["anti-affinity"]}})
    # Re-send a third of them: a client retry, or a duplicated message.
    specs += [dict(s) for s in rng.sample(specs, len(specs) // 3)]
    rng.shuffle(specs)
    return specs


def test_concurrent_schedulers_fill_the_fleet_exactly_and_never_overbook(
        make_deployment):
    deployment = make_deployment(scheduler__workers=2)
    deployment.add_nodes([node(f"host-{i:02d}", vcpus=8, memory_mb=4096,
                               local_gb=1000) for i in range(HOSTS)])
    for name in ("sched-a", "sched-b", "sched-c"):
        deployment.start_server(name=name)

    specs = _requests(random.Random(7))
    assert sum(len(s["instance_uuids"]) for s in specs) > CAPACITY

    def send(spec):
        try:
            return spec, deployment.api.select_destinations({}, spec)
        except exception.NoValidHost as e:
            return spec, e

    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        outcomes = list(pool.map(send, specs))

    placed: dict[str, str] = {}
    for spec, result in outcomes:
        if isinstance(result, exception.NoValidHost):
            continue
        assert [d["uuid"] for d in result] == spec["instance_uuids"]
        for d in result:
            # A re-sent request got the same answer as the first one.
            assert placed.setdefault(d["uuid"], d["host"]) == d["host"]
    refused = [s for s, r in outcomes if isinstance(r, Exception)]
    assert refused, "demand exceeded capacity, something must be refused"

    # Top up with single instances until refused: the fleet must then be
    # exactly full (nothing leaked by lost races or failed requests).
    while True:
        try:
            extra = deployment.api.select_destinations({}, {"flavor": FLAVOR})
        except exception.NoValidHost:
            break
        placed[extra[0]["uuid"]] = extra[0]["host"]

    allocations = deployment.allocations()
    assert len(allocations) == CAPACITY
    assert {a.consumer_uuid for a in allocations} == set(placed)
    per_host = collections.Counter(placed.values())
    assert set(per_host.values()) == {SLOTS_PER_HOST}

    nodes = {r.id: r for r in deployment.nodes().values()}
    for group in GROUPS:
        members = [nodes[a.compute_node_id].host for a in allocations
                   if a.group_uuid == group]
        assert len(members) == len(set(members)), f"group {group} broken"

    audit = deployment.manage("allocations", "audit", check=False)
    assert audit.returncode == 0, audit.stdout
    assert "usage equals allocations on every node" in audit.stdout


def _stack(rng: random.Random, group: str) -> dict:
    """Six instances: three web servers apart, an app server beside web0,
    two databases in a hard anti-affinity group shared between stacks."""
    spec = {"flavor": FLAVOR}
    return {"stack_id": str(uuid.uuid4()), "resources": {
        "web0": {"spec": spec},
        "web1": {"spec": spec, "different_host": ["web0"]},
        "web2": {"spec": spec, "different_host": ["web0", "web1"]},
        "app": {"spec": spec, "same_host": ["web0"]},
        "db": {"spec": {**spec, "num_instances": 2, "instance_group": {
            "uuid": group, "policies": ["anti-affinity"]}},
            "depends_on": ["app"]},
        "net": {"spec": None},
    }}


def test_concurrent_stacks_and_requests_never_overbook_or_break_relations(
        make_deployment):
    deployment = make_deployment(scheduler__workers=2)
    deployment.add_nodes([node(f"host-{i:02d}", vcpus=8, memory_mb=4096,
                               local_gb=1000) for i in range(HOSTS)])
    for name in ("sched-a", "sched-b", "sched-c"):
        deployment.start_server(name=name)

    rng = random.Random(11)
    stacks = [_stack(rng, GROUPS[i % 2]) for i in range(8)]
    calls = [("stack", s) for s in stacks]
    calls += [("stack", s) for s in rng.sample(stacks, 3)]     # re-sent
    calls += [("single", {"instance_uuids": [str(uuid.uuid4())],
                          "flavor": FLAVOR}) for _ in range(16)]
    calls += [("single", {"instance_uuids": [str(uuid.uuid4())],
                          "flavor": FLAVOR, "instance_group": {
                              "uuid": GROUPS[0],
                              "policies": ["anti-affinity"]}})
              for _ in range(4)]
    rng.shuffle(calls)
    assert 8 * 6 + 20 > CAPACITY

    def send(call):
        kind, body = call
        try:
            if kind == "stack":
                return call, deployment.api.select_stack({}, body)
            return call, deployment.api.select_destinations({}, body)
        except exception.NoValidHost as e:
            return call, e

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        outcomes = list(pool.map(send, calls))

    answers: dict[str, list[dict]] = collections.defaultdict(list)
    for (kind, body), result in outcomes:
        if kind == "stack" and not isinstance(result, Exception):
            answers[body["stack_id"]].append(result)
    assert answers, "some stack must have found room"
    allocations = deployment.allocations()
    nodes = {r.id: r.host for r in deployment.nodes().values()}
    held = {a.consumer_uuid: nodes[a.compute_node_id] for a in allocations}

    for stack in stacks:
        results = answers.get(stack["stack_id"])
        if not results:
            continue
        # Every successful send of one stack got the same hosts.
        placements = [{name: [(d["uuid"], d["host"]) for d in dests]
                       for name, dests in r["resources"].items()}
                      for r in results]
        assert all(p == placements[0] for p in placements)
        hosts = {name: [d["host"] for d in dests]
                 for name, dests in results[0]["resources"].items()}
        webs = hosts["web0"] + hosts["web1"] + hosts["web2"]
        assert len(set(webs)) == 3
        assert hosts["app"] == hosts["web0"]
        for dests in results[0]["resources"].values():
            for d in dests:
                assert held[d["uuid"]] == d["host"]
    # A stack refused on every send holds nothing.
    refused = [s for s in stacks if s["stack_id"] not in answers]
    for stack in refused:
        assert not set(Stack.from_primitives(stack).consumers) & set(held)

    per_host = collections.Counter(held.values())
    assert max(per_host.values()) <= SLOTS_PER_HOST
    for group in GROUPS:
        members = [nodes[a.compute_node_id] for a in allocations
                   if a.group_uuid == group]
        assert len(members) == len(set(members)), f"group {group} broken"
    audit = deployment.manage("allocations", "audit", check=False)
    assert audit.returncode == 0, audit.stdout
