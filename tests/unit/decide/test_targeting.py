"""Request targeting: ignore/force hosts and nodes, requested_destination."""
from scheduler.decide import targeting
from scheduler.hosts.state import Aggregate
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import HostView
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec
from tests.unit.fakes import zone_aggregate


def _apply(spec, hosts):
    """targeting.apply over a list: the kept host states, forced, steps."""
    view = HostView(HostTable(hosts))
    idx, forced, steps = targeting.apply(spec, view, view.all_positions())
    return [view.state(i) for i in idx], forced, steps


def _hosts():
    return [make_host("host1", node_id=1),
            make_host("Host2", node_id=2),
            make_host("ironic", "node-a", node_id=3),
            make_host("ironic", "Node-B", node_id=4)]


def _names(hosts):
    return [f"{h.host}:{h.nodename}" for h in hosts]


def test_no_targeting_keeps_everything():
    hosts = _hosts()
    kept, forced, steps = _apply(make_spec(), hosts)
    assert kept == hosts
    assert forced is False and steps == []


def test_ignore_hosts_is_case_insensitive():
    kept, forced, steps = _apply(
        make_spec(ignore_hosts=["HOST1", "host2"]), _hosts())
    assert _names(kept) == ["ironic:node-a", "ironic:Node-B"]
    assert forced is False
    [step] = steps
    assert (step.name, step.hosts_in, step.hosts_out) == ("ignore_hosts", 4,
                                                          2)
    assert step.reason == "ignored by the request"
    assert step.sample == ("host1", "Host2")


def test_ignore_hosts_drops_every_node_of_the_host():
    kept, _, _ = _apply(make_spec(ignore_hosts=["ironic"]),
                                 _hosts())
    assert _names(kept) == ["host1:host1", "Host2:Host2"]


def test_ignoring_an_unknown_host_records_no_step():
    hosts = _hosts()
    kept, forced, steps = _apply(make_spec(ignore_hosts=["nope"]),
                                          hosts)
    assert kept == hosts and steps == [] and forced is False


def test_force_hosts_is_case_insensitive_and_skips_filters():
    kept, forced, steps = _apply(
        make_spec(force_hosts=["IRONIC"]), _hosts())
    assert _names(kept) == ["ironic:node-a", "ironic:Node-B"]
    assert forced is True
    assert [(s.name, s.reason) for s in steps] == [
        ("force_hosts", "not a forced host")]


def test_forced_host_is_kept_even_if_down():
    hosts = [make_host("h1", node_id=1, service_up=False),
             make_host("h2", node_id=2)]
    kept, forced, _ = _apply(make_spec(force_hosts=["h1"]), hosts)
    assert kept == [hosts[0]] and forced is True


def test_forced_host_that_is_disabled_is_refused_as_nova_34():
    """nova 34 asks placement even for a forced host, with the mandatory
    compute_status_filter (request_filter.py:248): a disabled service's
    nodes carry COMPUTE_STATUS_DISABLED and are no candidates."""
    hosts = [make_host("h1", node_id=1, service_disabled=True),
             make_host("h2", node_id=2)]
    for spec in (make_spec(force_hosts=["h1"]),
                 make_spec(force_nodes=["h1"])):
        kept, forced, steps = _apply(spec, hosts)
        assert kept == [] and forced is True
        assert (steps[-1].name, steps[-1].reason, steps[-1].hosts_in,
                steps[-1].hosts_out, steps[-1].sample) == (
            "compute_status_filter", "service disabled", 1, 0, ("h1",))


def test_forced_host_outside_the_requested_zone_is_refused_as_nova_34():
    """nova 34's map_az_to_placement_aggregate (request_filter.py:144)
    narrows placement's candidates to the zone's aggregates before the
    filters are skipped for a forced host ("az1:h2" in nova's API)."""
    hosts = [make_host("h1", node_id=1, aggregates=(zone_aggregate("az1"),)),
             make_host("h2", node_id=2,
                       aggregates=(zone_aggregate("az2", 2),))]
    kept, forced, steps = _apply(
        make_spec(force_hosts=["h2"], availability_zone="az1"), hosts)
    assert kept == [] and forced is True
    assert (steps[-1].name, steps[-1].reason) == (
        "map_az_to_placement_aggregate",
        "not in the requested availability zone (az1)")
    kept, _, _ = _apply(
        make_spec(force_hosts=["h1"], availability_zone="az1"), hosts)
    assert kept == [hosts[0]]
    # A zone no aggregate has (nova's default zone): nova restricts nothing.
    kept, _, _ = _apply(
        make_spec(force_hosts=["h2"], availability_zone="nova"), hosts)
    assert kept == [hosts[1]]


def test_force_nodes_match_exactly():
    kept, forced, _ = _apply(make_spec(force_nodes=["Node-B"]),
                                      _hosts())
    assert _names(kept) == ["ironic:Node-B"]
    assert forced is True
    kept, forced, steps = _apply(make_spec(force_nodes=["node-b"]),
                                          _hosts())
    assert kept == [] and forced is True
    assert steps[-1].name == "force_nodes"
    assert steps[-1].hosts_out == 0


def test_force_hosts_and_nodes_intersect():
    kept, forced, steps = _apply(
        make_spec(force_hosts=["ironic"], force_nodes=["node-a", "host1"]),
        _hosts())
    assert _names(kept) == ["ironic:node-a"]
    assert forced is True
    assert [s.name for s in steps] == ["force_hosts", "force_nodes"]


def test_forced_but_nothing_matches_leaves_no_host():
    kept, forced, steps = _apply(make_spec(force_hosts=["ghost", "HOST1"]),
                                 _hosts())
    assert forced is True
    # A forced host that does not exist is named: a typo is not "no room".
    assert steps[-1].reason == ("not a forced host; no compute host is "
                                "named ghost")


def test_ignore_wins_over_force():
    kept, forced, steps = _apply(
        make_spec(ignore_hosts=["host1"], force_hosts=["host1"]), _hosts())
    assert kept == [] and forced is True
    assert [s.name for s in steps] == ["ignore_hosts", "force_hosts"]


def test_requested_destination_narrows_without_forcing():
    kept, forced, steps = _apply(
        make_spec(requested_destination={"host": "HOST2"}), _hosts())
    assert _names(kept) == ["Host2:Host2"]
    assert forced is False
    [step] = steps
    assert (step.name, step.reason, step.hosts_in, step.hosts_out) == (
        "requested_destination", "not the requested host", 4, 1)


def test_requested_destination_node_is_exact():
    spec = make_spec(requested_destination={"host": "ironic",
                                            "node": "Node-B"})
    kept, forced, steps = _apply(spec, _hosts())
    assert _names(kept) == ["ironic:Node-B"] and forced is False
    assert [s.reason for s in steps] == ["not the requested host",
                                         "not the requested node"]
    kept, _, _ = _apply(
        make_spec(requested_destination={"node": "node-b"}), _hosts())
    assert kept == []


def test_requested_destination_without_host_or_node_keeps_all():
    hosts = _hosts()
    for dest in ({"aggregates": []}, {"host": None, "node": None}, None):
        kept, forced, steps = _apply(
            make_spec(requested_destination=dest), hosts)
        assert kept == hosts and not forced and steps == []


def test_steps_are_recorded_in_order():
    spec = make_spec(ignore_hosts=["host1"], force_hosts=["ironic", "host2"],
                     force_nodes=["node-a", "Node-B", "Host2"],
                     requested_destination={"host": "ironic",
                                            "node": "node-a"})
    kept, forced, steps = _apply(spec, _hosts())
    assert _names(kept) == ["ironic:node-a"]
    assert forced is True
    assert [(s.name, s.hosts_in, s.hosts_out) for s in steps] == [
        ("ignore_hosts", 4, 3),
        ("requested_destination", 3, 2),
        ("requested_destination", 2, 1)]


# --- requested_destination.aggregates (nova: placement's member_of) ----------

def _agg_hosts():
    a = Aggregate(1, "agg-a", {}, "aaaaaaaa-0000-0000-0000-000000000001")
    b = Aggregate(2, "agg-b", {}, "bbbbbbbb-0000-0000-0000-000000000002")
    c = Aggregate(3, "agg-c", {}, "cccccccc-0000-0000-0000-000000000003")
    return [make_host("in-a", node_id=1, aggregates=(a,)),
            make_host("in-b", node_id=2, aggregates=(b,)),
            make_host("in-a-c", node_id=3, aggregates=(a, c)),
            make_host("in-b-c", node_id=4, aggregates=(b, c)),
            make_host("in-none", node_id=5)]


def _agg_names(aggregates):
    kept, forced, steps = _apply(make_spec(requested_destination={
        "aggregates": aggregates}), _agg_hosts())
    assert forced is False
    return [h.host for h in kept], steps


def test_aggregates_one_entry_is_any_of_its_aggregates():
    kept, steps = _agg_names(["agg-a,agg-b"])
    assert kept == ["in-a", "in-b", "in-a-c", "in-b-c"]
    [step] = steps
    assert (step.name, step.hosts_in, step.hosts_out, step.sample) == (
        "requested_destination", 5, 4, ("in-none",))
    assert step.reason == (
        "in none of the requested aggregates agg-a, agg-b")


def test_aggregates_entries_are_all_required():
    kept, steps = _agg_names(["agg-a,agg-b", "agg-c"])
    assert kept == ["in-a-c", "in-b-c"]
    assert [(s.hosts_in, s.hosts_out) for s in steps] == [(5, 4), (4, 2)]


def test_aggregates_by_uuid_as_nova_sends_them():
    kept, _ = _agg_names(["aaaaaaaa-0000-0000-0000-000000000001",
                          "cccccccc-0000-0000-0000-000000000003"])
    assert kept == ["in-a-c"]


def test_unknown_aggregate_leaves_no_host():
    kept, [step] = _agg_names(["nope"])
    assert kept == [] and step.hosts_out == 0


def test_unknown_forced_hosts_are_named_in_a_bounded_reason():
    """A request forcing 1,000 unknown 255-character names must not make a
    refusal of a quarter of a megabyte; the first few are named, and how
    many more."""
    names = [f"{i:03d}" + "x" * 252 for i in range(1000)]
    kept, _, steps = _apply(make_spec(force_hosts=names), _hosts())
    assert kept == []
    reason = steps[-1].reason
    assert len(reason) < 2000
    assert reason.startswith("not a forced host; no compute host is named "
                             + names[0])
    assert reason.endswith(" (and 995 more)")


def test_unknown_forced_nodes_are_named():
    """As a forced host: a node that does not exist is named, as nova 34
    names it ("No such host - host: None node: node-b"); a node of
    another host than the forced one is not unknown."""
    _, _, steps = _apply(make_spec(force_nodes=["node-b", "Node-B"]),
                         _hosts())
    assert steps[-1].reason == ("not a forced node; no compute node is "
                                "named node-b")
    _, _, steps = _apply(make_spec(force_hosts=["host1"],
                                   force_nodes=["node-a"]), _hosts())
    assert steps[-1].reason == "not a forced node"


def test_an_unknown_requested_host_or_node_is_named():
    kept, _, [step] = _apply(
        make_spec(requested_destination={"host": "hots1"}), _hosts())
    assert kept == []
    assert step.reason == ("not the requested host; no compute host is "
                           "named hots1")
    kept, _, steps = _apply(make_spec(requested_destination={
        "host": "ironic", "node": "node-b"}), _hosts())
    assert kept == []
    assert steps[-1].reason == ("not the requested node; no compute node "
                                "is named node-b")


def test_a_requested_host_that_exists_is_not_called_unknown():
    # Ignored (a move's source named as its destination): the host
    # exists, it is the ignore that removed it.
    kept, _, steps = _apply(make_spec(
        ignore_hosts=["host1"], requested_destination={"host": "HOST1"}),
        _hosts())
    assert kept == []
    assert [(s.name, s.reason) for s in steps] == [
        ("ignore_hosts", "ignored by the request"),
        ("requested_destination", "not the requested host")]


def test_a_narrowing_samples_nodes_as_the_filters_do():
    """A node of a host with several is shown ``host:node``, as a filter's
    sample shows it: not ``ironic`` for the one removed of ironic's two."""
    _, _, [step] = _apply(make_spec(force_nodes=["node-a"]), _hosts())
    assert step.sample == ("host1", "Host2", "ironic:Node-B")
