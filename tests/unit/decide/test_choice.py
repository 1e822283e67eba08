"""scheduler.decide.choice: which of the best hosts an instance gets."""
from __future__ import annotations

import pytest

from scheduler.decide import choice


def _nodes(*ids, generation=0):
    return [(n, generation) for n in ids]


@pytest.mark.parametrize("policy", choice.POLICIES)
def test_one_candidate_is_always_taken(policy):
    chooser = choice.Chooser(policy, seed=1)
    chooser.claiming([(5, 1)])          # even while this process claims it
    assert chooser.pick(_nodes(5)) == 0


@pytest.mark.parametrize("policy", choice.POLICIES)
def test_a_node_being_claimed_is_passed_over_until_the_claim_is_over(policy):
    chooser = choice.Chooser(policy, seed=1)
    candidates = _nodes(1, 2)
    first = chooser.pick(candidates)
    node = candidates[first][0]
    chooser.claiming([(node, 1)])
    for _ in range(20):
        assert chooser.pick(_nodes(1, 2)) == 1 - first
    chooser.claimed([node])
    # Read again after the claim committed: the new generation is ours.
    fresh = [(n, 1 if n == node else 0) for n in (1, 2)]
    picks = {chooser.pick(fresh) for _ in range(50)}
    assert first in picks


@pytest.mark.parametrize("policy", choice.POLICIES)
def test_a_read_from_before_our_own_claim_committed_is_passed_over(policy):
    chooser = choice.Chooser(policy, seed=1)
    chooser.claiming([(1, 4)])
    chooser.claimed([1])
    # The table still has generation 3 for node 1: claiming it would lose.
    for _ in range(20):
        assert chooser.pick([(1, 3), (2, 0)]) == 1


def test_per_process_keeps_its_favourite():
    chooser = choice.Chooser("per_process", seed=3)
    candidates = _nodes(*range(100, 164))
    favourite = chooser.pick(candidates)
    assert {chooser.pick(candidates) for _ in range(20)} == {favourite}
    # The order does not matter, the node does.
    assert chooser.pick(candidates[::-1]) == len(candidates) - 1 - favourite


def test_per_process_choosers_prefer_different_nodes():
    candidates = _nodes(*range(64))
    favourites = {candidates[choice.Chooser("per_process", seed=s)
                             .pick(candidates)][0] for s in range(20)}
    assert len(favourites) >= 10


def test_random_spreads_over_the_candidates():
    chooser = choice.Chooser("random", seed=3)
    candidates = _nodes(*range(8))
    assert len({chooser.pick(candidates) for _ in range(200)}) == 8


def test_per_process_passes_over_a_node_another_writer_changed():
    chooser = choice.Chooser("per_process", seed=3)
    candidates = _nodes(*range(8))
    favourite = chooser.pick(candidates)
    node = candidates[favourite][0]
    # Another scheduler claimed there (generation 0 -> 1, not ours).
    changed = [(n, 1 if n == node else 0) for n in range(8)]
    for _ in range(10):
        assert chooser.pick(changed) != favourite


def test_per_process_keeps_a_node_after_its_own_claim():
    chooser = choice.Chooser("per_process", seed=3)
    candidates = _nodes(*range(8))
    favourite = chooser.pick(candidates)
    node = candidates[favourite][0]
    chooser.claiming([(node, 1)])
    chooser.claimed([node])
    after = [(n, 1 if n == node else 0) for n in range(8)]
    assert chooser.pick(after) == favourite


def test_per_process_leaves_a_node_it_lost_a_race_on():
    chooser = choice.Chooser("per_process", seed=3)
    candidates = _nodes(*range(8))
    favourite = chooser.pick(candidates)
    chooser.lost(candidates[favourite][0])
    assert chooser.pick(candidates) != favourite


def test_when_every_candidate_is_avoided_one_is_still_chosen():
    chooser = choice.Chooser("per_process", seed=3)
    for n in range(3):
        chooser.lost(n)
    assert chooser.pick(_nodes(0, 1, 2)) in (0, 1, 2)


def test_an_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="host_subset_choice"):
        choice.Chooser("sticky")


def test_workers_of_one_server_prefer_their_own_share_of_the_best():
    candidates = _nodes(*range(100, 164))
    for seed in range(20):
        workers = [choice.Chooser("per_process", seed=seed * 2 + i,
                                  share=choice.Share(i, 2))
                   for i in range(2)]
        favourites = [candidates[w.pick(candidates)][0] for w in workers]
        assert [w.share.owns(n) for w, n in zip(workers, favourites)] == \
            [True, True]


def test_a_worker_takes_another_share_when_its_own_is_taken():
    share = choice.Share(1, 2)
    mine = [n for n in range(8) if share.owns(n)]
    chooser = choice.Chooser("per_process", seed=3, share=share)
    chooser.claiming([(n, 1) for n in mine])
    assert not share.owns(chooser.pick(_nodes(*range(8))))


def test_a_share_outside_its_server_is_refused():
    with pytest.raises(ValueError, match="worker 2 of 2"):
        choice.Share(2, 2)


def test_a_worker_keeps_to_its_share_where_another_writer_was_seen():
    # After a release every one of its best hosts has a generation this
    # worker did not make; its sibling's share is the sibling's next pick.
    share = choice.Share(0, 2)
    mine = [n for n in range(20) if share.owns(n)][:3]
    theirs = [n for n in range(20) if not share.owns(n)][:3]
    candidates = _nodes(*sorted(mine + theirs))
    chooser = choice.Chooser("per_process", seed=3, share=share)
    for n in mine:
        chooser.lost(n)
    assert candidates[chooser.pick(candidates)][0] in mine
    # Within the share, a node nobody else touched comes first.
    chooser = choice.Chooser("per_process", seed=3, share=share)
    chooser.lost(mine[0])
    chooser.lost(mine[1])
    assert candidates[chooser.pick(candidates)][0] == mine[2]


def test_every_node_has_one_owner_among_all_servers_workers():
    # Servers with different numbers of workers still cover every node
    # exactly once.
    shares = [choice.Share(i, workers, server, 3)
              for server, workers in enumerate((2, 1, 3))
              for i in range(workers)]
    for node_id in range(600):
        assert sum(s.owns(node_id) for s in shares) == 1
    # A server's part is about a third of the nodes, split among its
    # workers.
    assert 80 <= sum(shares[0].owns(n) for n in range(600)) <= 120
    assert 170 <= sum(shares[2].owns(n) for n in range(600)) <= 230


def test_a_server_outside_its_peers_is_refused():
    with pytest.raises(ValueError, match="server 3 of 3"):
        choice.Share(0, 1, 3, 3)


def test_best_hosts_in_a_pattern_still_fall_to_every_share():
    # The 64 best are every third node (one zone of three, registered
    # round robin): each of 3 servers x 2 workers still owns some.
    best = [3 * i for i in range(64)]
    shares = [choice.Share(i, 2, server, 3)
              for server in range(3) for i in range(2)]
    owned = [sum(s.owns(n) for n in best) for s in shares]
    assert sum(owned) == 64
    assert min(owned) >= 5, owned


def test_a_node_whose_claim_wrote_nothing_is_chosen_again():
    # A claim that failed (a duplicate consumer, a group conflict) left no
    # generation of ours on node 1: it is not "read before our claim".
    chooser = choice.Chooser("random", seed=0)
    chooser.claiming([(1, 5)])
    chooser.claimed([1], won=False)
    assert {chooser.pick([(1, 4), (2, 0)]) for _ in range(200)} == {0, 1}


def test_a_node_whose_claim_was_won_waits_for_the_table_to_show_it():
    chooser = choice.Chooser("random", seed=0)
    chooser.claiming([(1, 5)])
    chooser.claimed([1])
    assert {chooser.pick([(1, 4), (2, 0)]) for _ in range(200)} == {1}


@pytest.mark.parametrize("weights, slots, expected", [
    ([3.0, 2.0], 2, None),                      # no more hosts than slots
    ([3.0, 2.0, 2.0, 2.0], 2, [1.0, 1 / 3, 1 / 3, 1 / 3]),
    ([2.0, 2.0, 2.0], 1, [1 / 3, 1 / 3, 1 / 3]),
    ([5.0, 4.0, 1.0, 1.0], 3, [1.0, 1.0, 0.5, 0.5]),
])
def test_slot_shares_keep_novas_chance_for_the_better_hosts(weights, slots,
                                                            expected):
    """nova picks uniformly among the first host_subset_size; equals of
    the last share the slots it leaves, the better keep one each."""
    shares = choice.slot_shares(weights, slots)
    if expected is None:
        assert shares is None
    else:
        assert shares == pytest.approx(expected)
