"""The phase's RabbitMQ cluster (tests/fixtures/rabbitmq_cluster.py):
listeners where the machines reach them, quorum queues that survive the
node leading them, and a killed node that rejoins. Plain oslo.messaging
RPC: what oslo.messaging itself does under rabbit_quorum_queue, below the
scheduler's faults (test_faults.py)."""
from __future__ import annotations

from collections.abc import Iterator
import time

import pytest

from tests.fixtures.rabbitmq_cluster import RabbitMQCluster
from tests.fixtures.rpc_pair import RpcPair
from tests.fixtures.rpc_pair import listen_addresses


@pytest.fixture
def rpc(rabbit: RabbitMQCluster) -> Iterator[RpcPair]:
    pair = RpcPair(rabbit.transport_url,
                   rabbit_options={"rabbit_quorum_queue": True})
    try:
        yield pair
    finally:
        pair.close()


def _leader_other_than(cluster: RabbitMQCluster, queue: str, old: int,
                       within: float) -> int:
    """The leader of quorum ``queue`` once it is no longer node ``old``."""
    deadline = time.monotonic() + within
    while True:
        try:
            leader = cluster.leader_of(queue)
        except RabbitMQCluster.Error:  # no leader while the survivors vote
            if time.monotonic() > deadline:
                raise
        else:
            if leader != old:
                return leader
            assert time.monotonic() < deadline, f"node {old} still leads {queue}"
        time.sleep(0.2)


def test_listeners_are_on_the_bridge_and_erlang_on_loopback(rabbit, network):
    assert rabbit.running_nodes() == [0, 1, 2]
    for node in rabbit.nodes:
        assert listen_addresses(node.port) == {network.address}
        assert listen_addresses(node.dist_port) == {"127.0.0.1"}


def test_a_quorum_queue_survives_its_leader_killed(rabbit, rpc):
    assert rpc.call("before") == "before"
    queues = rabbit.queues()
    assert queues[rpc.topic] == "quorum"
    assert queues[f"{rpc.topic}.echo-1"] == "quorum"
    # Reply and fanout queues (this pair's and the phase's other clients')
    # are transient: quorum only with rabbit_transient_quorum_queue
    # (doc/source/machines.rst).
    replies = {kind for name, kind in queues.items()
               if name.startswith("reply_")}
    fanouts = {kind for name, kind in queues.items()
               if name.startswith(f"{rpc.topic}_fanout_")}
    assert (replies, fanouts) == ({"classic"}, {"classic"}), queues

    leader = rabbit.leader_of(rpc.topic)
    rabbit.kill(leader)
    try:
        _leader_other_than(rabbit, rpc.topic, leader, within=60)
        assert rpc.call_until_answered("after the kill", within=120) == \
            "after the kill"
    finally:
        rabbit.start_node(leader)
    assert rabbit.running_nodes() == [0, 1, 2]
    assert rpc.call_until_answered("rejoined", within=60) == "rejoined"
