"""scheduler.decide.attempts: what a refused claim means to the retry loop, and
how running out of attempts is said."""
from __future__ import annotations

import logging

import pytest

from scheduler.decide import choice
from scheduler.claims.refusals import NoRoom
from scheduler.claims.refusals import GroupConflict
from scheduler.hosts.planned import ClaimConflict
from scheduler import exception
from scheduler.decide import races
from scheduler.decide.attempts import Attempts
from scheduler.decide.attempts import forced_group_breach
from scheduler.decide.selection import Selection
from scheduler.hosts.table import HostTable
from scheduler.request.spec import RequestSpec
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec

G = "5a0b0c0d-0000-4000-8000-0000000000a1"


def _attempts(retries: int = 2, subject: str = "") -> Attempts:
    return Attempts(retries, choice.Chooser("per_process"), subject=subject)


def _chosen(node_id: int = 3, memory_mb_used: int = 1024) -> Selection:
    return Selection("c1", make_host(f"h{node_id}", node_id=node_id,
                                     memory_mb_used=memory_mb_used),
                     limits={"memory_mb": 8192.0})


def _no_room(node_id: int = 3, used: int = 1024) -> NoRoom:
    return NoRoom("no room", node_id,
                  {"memory_mb": (used, 8192, 8192.0)})


def test_there_is_one_attempt_more_than_retries():
    assert list(_attempts(retries=2)) == [0, 1, 2]


def test_each_lost_race_doubles_the_spread_and_is_recorded():
    attempts = _attempts()
    before = races.totals()
    for attempt in attempts:
        assert attempts.spread == 2 ** attempt
        attempts.lost(ClaimConflict("generation moved", 5))
    after = races.totals()
    assert after.lost - before.lost == 3
    assert after.replans - before.replans == 2       # the last gives up
    assert after.given_up - before.given_up == 1


def test_a_lost_race_makes_this_process_avoid_the_node():
    attempts = _attempts()
    next(iter(attempts))
    attempts.lost(ClaimConflict("generation moved", 5))
    assert 5 in attempts.chooser._avoid


def test_no_room_on_a_node_that_changed_under_the_planner_is_a_race():
    attempts = _attempts()
    next(iter(attempts))
    attempts.no_room(_no_room(used=4096), [_chosen(memory_mb_used=1024)])
    assert attempts.races == 1
    assert attempts.excluded == set()
    assert attempts.disagreed == []


def test_a_disagreement_leaves_the_node_out_of_the_next_table(caplog):
    attempts = _attempts(subject=" for stack s1")
    next(iter(attempts))
    with caplog.at_level(logging.ERROR, logger="scheduler.decide.attempts"):
        attempts.no_room(_no_room(), [_chosen()])
    assert attempts.races == 0
    assert attempts.excluded == {3}
    table = HostTable([make_host("h1", node_id=1), make_host("h3", node_id=3)])
    assert [s.node_id for s in attempts.table(table).states] == [1]
    assert ("Planner and claim disagree (not a race) for stack s1: compute "
            "node 3 (h3, generation 0): memory_mb: claim saw 1024 used + "
            "8192 > limit 8192, planner saw 1024 used and limit 8192; "
            "re-planning without that node") in caplog.text


def test_the_table_is_the_same_object_while_nothing_is_left_out():
    table = HostTable([make_host("h1")])
    assert _attempts().table(table) is table


def test_a_second_disagreement_is_no_valid_host_naming_both():
    attempts = _attempts(subject=" for stack s1")
    next(iter(attempts))
    attempts.no_room(_no_room(3), [_chosen(3)])
    with pytest.raises(exception.NoValidHost) as info:
        attempts.no_room(_no_room(4), [_chosen(4)])
    message = info.value.message
    assert message.startswith(
        "No valid host for stack s1: the planner and the claim disagreed "
        "on capacity (a bug, not a race): compute node 3 (h3,")
    assert " | compute node 4 (h4," in message


def test_giving_up_after_races_names_how_many_and_the_last():
    attempts = _attempts(retries=1)
    for _ in attempts:
        attempts.lost(ClaimConflict("node 9 changed", 9))
    assert str(attempts.given_up()) == (
        "No valid host: lost the claim race 2 times to concurrent requests "
        "(last: node 9 changed)")


def test_giving_up_after_races_and_a_disagreement_names_both():
    # The last attempt was refused for want of room on a node as the
    # planner read it (no RamFilter): not contention, and the refusal must
    # not put it all on the races.
    attempts = _attempts(retries=1)
    it = iter(attempts)
    next(it)
    attempts.lost(ClaimConflict("node 9 changed", 9))
    next(it)
    attempts.no_room(_no_room(), [_chosen()])
    assert str(attempts.given_up()) == (
        "No valid host: lost the claim race 1 times to concurrent requests "
        "(last: node 9 changed); the planner and the claim disagreed on "
        "capacity (a bug, not a race): compute node 3 (h3, generation 0): "
        "memory_mb: claim saw 1024 used + 8192 > limit 8192, planner saw "
        "1024 used and limit 8192")


def test_giving_up_after_refusals_alone_names_the_last_refusal():
    attempts = _attempts(retries=0)
    for _ in attempts:
        attempts.no_room(_no_room(), [_chosen()])
    assert str(attempts.given_up()) == (
        "No valid host: no claim succeeded in 1 attempts (last refusal: "
        "compute node 3 (h3, generation 0): memory_mb: claim saw 1024 used "
        "+ 8192 > limit 8192, planner saw 1024 used and limit 8192)")


def test_a_refused_node_the_planner_did_not_choose_is_said_as_refused():
    attempts = _attempts(retries=0)
    for _ in attempts:
        attempts.no_room(_no_room(7), [_chosen(3)])
    assert "last refusal: no room" in str(attempts.given_up())


def _member(policy: str = "anti-affinity", **forced) -> RequestSpec:
    return make_spec(instance_group={"uuid": G, "policies": [policy]},
                     **forced)


def _group_conflict() -> GroupConflict:
    return GroupConflict(f"server group {G}: host h1 would hold 2 "
                                f"members, at most 1 allowed", None)


@pytest.mark.parametrize("forced", [{"force_hosts": ["h1"]},
                                    {"force_nodes": ["n1"]}])
@pytest.mark.parametrize("policy", ["affinity", "anti-affinity"])
def test_a_forced_host_breaking_a_hard_group_is_final(forced, policy):
    assert forced_group_breach(_group_conflict(), [_member(policy, **forced)])


def test_a_forced_host_in_a_stack_is_final_whichever_resource_forces():
    specs = [make_spec(), _member(), _member(force_hosts=["h1"])]
    assert forced_group_breach(_group_conflict(), specs)


@pytest.mark.parametrize("conflict, specs", [
    # Nothing forced: re-planning may choose another host.
    (_group_conflict(), [_member()]),
    # A soft group's rule is no claim's to keep.
    (_group_conflict(), [_member("soft-anti-affinity",
                                 force_hosts=["h1"])]),
    # Forced, but not in a group.
    (_group_conflict(), [make_spec(force_hosts=["h1"])]),
    # Forced in a hard group, but the node moved: a race like any.
    (ClaimConflict("node 5 changed", 5),
     [_member(force_hosts=["h1"])]),
])
def test_other_conflicts_are_not_final(conflict, specs):
    assert not forced_group_breach(conflict, specs)


def test_a_final_conflict_is_no_valid_host_and_no_lost_race():
    attempts = _attempts(subject=" for stack s1")
    next(iter(attempts))
    with pytest.raises(exception.NoValidHost) as info:
        attempts.conflicted(_group_conflict(),
                            [_member(force_hosts=["h1"])])
    assert info.value.message == (
        f"No valid host for stack s1: a forced host would break its server "
        f"group: server group {G}: host h1 would hold 2 members, at most 1 "
        f"allowed")
    assert attempts.races == 0


def test_a_conflict_that_is_not_final_is_a_lost_race():
    attempts = _attempts()
    next(iter(attempts))
    attempts.conflicted(ClaimConflict("node 5 changed", 5),
                        [_member(force_hosts=["h1"])])
    assert attempts.races == 1
    assert 5 in attempts.chooser._avoid
