"""SameHostFilter, DifferentHostFilter: the same_host / different_host hints
on hosts resolved by the driver (``RequestSpec.hint_hosts``), and the
hints' validation at the edge."""
from __future__ import annotations

import dataclasses

import pytest

from scheduler import exception
from scheduler.filters.affinity_hints import DifferentHostFilter
from scheduler.filters.affinity_hints import SameHostFilter
from scheduler.filters.base import filter_hosts
from scheduler.filters.base import run_filters
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import HostView
from scheduler.request.schema import MAX_LIST
from scheduler.request.spec import RequestSpec
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec
from tests.unit.fakes import spec_dict

A = "aaaaaaaa-0000-4000-8000-000000000001"
B = "aaaaaaaa-0000-4000-8000-000000000002"
C = "aaaaaaaa-0000-4000-8000-000000000003"
GONE = "aaaaaaaa-0000-4000-8000-0000000000ff"


def _hosts():
    """h1 (two nodes) holds A, h2 holds B, h3 holds nothing we know of, h4
    is empty."""
    return [make_host("h1", "h1-n1", node_id=1, num_instances=3),
            make_host("h2", node_id=2, num_instances=1),
            make_host("h1", "h1-n2", node_id=3, num_instances=0),
            make_host("h3", node_id=4, num_instances=5),
            make_host("h4", node_id=5, num_instances=0)]


PLACED = {A: ("h1",), B: ("h2",)}


def _spec(placed=PLACED, **hints):
    spec = make_spec(scheduler_hints=hints)
    return dataclasses.replace(spec, hint_hosts=placed)


def _labels(hosts):
    return [h.nodename for h in hosts]


def _check(f, spec, expected):
    """filter_all, host_passes and filter_columns all give ``expected``
    (node names, in input order)."""
    hosts = _hosts()
    assert _labels(f.filter_all(hosts, spec)) == expected
    assert [h.nodename for h in hosts if f.host_passes(h, spec)] == expected
    view = HostView(HostTable(hosts))
    for idx in (view.all_positions(), view.all_positions()[1:]):
        got = [hosts[i].nodename for i in f.filter_columns(view, idx, spec)]
        assert got == [n for n in expected
                       if n in {hosts[i].nodename for i in idx}]


ALL = ["h1-n1", "h2", "h1-n2", "h3", "h4"]


# --- SameHostFilter --------------------------------------------------------

@pytest.mark.parametrize("hints", [{}, {"same_host": []},
                                   {"same_host": None},
                                   {"different_host": [A]}])
def test_same_host_without_the_hint_passes_everything(conf, hints):
    spec = _spec(**hints)
    f = SameHostFilter(conf)
    assert _labels(f.filter_all(_hosts(), spec)) == ALL
    if "different_host" not in hints:
        _check(f, spec, ALL)


def test_same_host_keeps_every_node_of_the_instances_host(conf):
    _check(SameHostFilter(conf), _spec(same_host=[A]), ["h1-n1", "h1-n2"])


def test_same_host_one_uuid_as_a_string(conf):
    _check(SameHostFilter(conf), _spec(same_host=B), ["h2"])


def test_same_host_any_of_a_list(conf):
    _check(SameHostFilter(conf), _spec(same_host=[A, B, GONE]),
           ["h1-n1", "h2", "h1-n2"])


def test_same_host_rejects_empty_hosts_mitaka_fix(conf):
    # Liberty let hosts without instances pass; since Mitaka they fail:
    # h4 holds no instance, h3 only others.
    spec = _spec(same_host=[A])
    assert not SameHostFilter(conf).host_passes(_hosts()[4], spec)
    assert not SameHostFilter(conf).host_passes(_hosts()[3], spec)


def test_same_host_with_instances_on_no_known_host_leaves_none(conf):
    _check(SameHostFilter(conf), _spec(same_host=[GONE]), [])
    _check(SameHostFilter(conf), _spec(placed={}, same_host=[A]), [])


def test_same_host_matches_uuids_in_any_spelling(conf):
    spelled = A.upper().replace("-", "")
    _check(SameHostFilter(conf), _spec(same_host=[spelled]),
           ["h1-n1", "h1-n2"])


# --- DifferentHostFilter ---------------------------------------------------

@pytest.mark.parametrize("hints", [{}, {"different_host": []},
                                   {"different_host": None}])
def test_different_host_without_the_hint_passes_everything(conf, hints):
    _check(DifferentHostFilter(conf), _spec(**hints), ALL)


def test_different_host_avoids_every_node_of_the_instances_host(conf):
    _check(DifferentHostFilter(conf), _spec(different_host=[A]),
           ["h2", "h3", "h4"])


def test_different_host_avoids_all_of_a_list(conf):
    _check(DifferentHostFilter(conf), _spec(different_host=[A, B]),
           ["h3", "h4"])
    _check(DifferentHostFilter(conf), _spec(different_host=B),
           ["h1-n1", "h1-n2", "h3", "h4"])


def test_different_host_with_unknown_instances_passes_everything(conf):
    _check(DifferentHostFilter(conf), _spec(different_host=[GONE, C]), ALL)


def test_both_hints_together(conf):
    spec = _spec(same_host=[A, B], different_host=[B])
    passed, steps = filter_hosts([SameHostFilter(conf),
                                  DifferentHostFilter(conf)], _hosts(), spec)
    assert _labels(passed) == ["h1-n1", "h1-n2"]
    assert [(s.name, s.hosts_in, s.hosts_out) for s in steps] == [
        ("SameHostFilter", 5, 3), ("DifferentHostFilter", 3, 2)]


# --- once per request, explanations ------------------------------------------

@pytest.mark.parametrize("cls", [SameHostFilter, DifferentHostFilter])
def test_run_once_per_request(conf, cls):
    assert cls.run_filter_once_per_request
    spec = _spec(same_host=[GONE], different_host=[A])
    view = HostView(HostTable(_hosts()))
    idx, steps = run_filters([cls(conf)], view, view.all_positions(), spec,
                             index=1)
    assert len(idx) == 5 and steps == []


def test_explanations_say_how_many_hinted_instances_were_found(conf):
    spec = _spec(same_host=[A, GONE], different_host=[B])
    assert SameHostFilter(conf).explain(spec) == (
        "holds none of the instances in the same_host hint (1 of 2 hinted "
        "instance(s) placed by this scheduler)")
    assert DifferentHostFilter(conf).explain(spec) == (
        "holds an instance in the different_host hint (1 of 1 hinted "
        "instance(s) placed by this scheduler)")
    assert SameHostFilter(conf).explain(make_spec()) == (
        "holds none of the instances in the same_host hint")
    _, steps = filter_hosts([SameHostFilter(conf)], _hosts(),
                            _spec(same_host=[GONE]))
    assert steps[0].removed == 5
    assert steps[0].sample == ("h1:h1-n1", "h2", "h1:h1-n2", "h3", "h4")


# --- the hints at the edge -----------------------------------------------------

@pytest.mark.parametrize("name", ["same_host", "different_host"])
def test_hints_are_normalized_and_deduplicated(name):
    spec = make_spec(scheduler_hints={
        name: [A.upper(), A.replace("-", ""), B], "other": "kept"})
    assert spec.scheduler_hints == {name: [A, B], "other": "kept"}
    assert spec.hinted_uuids(name) == (A, B)
    assert make_spec(scheduler_hints={name: B}).hinted_uuids(name) == (B,)
    assert make_spec().hinted_uuids(name) == ()


@pytest.mark.parametrize("name", ["same_host", "different_host"])
@pytest.mark.parametrize("value,why", [
    ("not-a-uuid", "'not-a-uuid' is not an instance uuid"),
    ([A, "h1"], "'h1' is not an instance uuid"),
    ([A, 5], "'5' is not an instance uuid"),
    ([A + "\n"], "is not an instance uuid"),
    ([[A]], "is not an instance uuid"),
    (7, "expected an instance uuid or a list of them, got int"),
    ({"uuid": A}, "expected an instance uuid or a list of them, got dict"),
    ([A] * (MAX_LIST + 1), f"has {MAX_LIST + 1} items, at most {MAX_LIST} "
                           f"allowed"),
])
def test_bad_hints_are_refused_naming_the_hint(name, value, why):
    with pytest.raises(exception.InvalidRequest) as info:
        make_spec(scheduler_hints={name: value})
    assert info.value.message.startswith(f"spec.scheduler_hints.{name}: ")
    assert why in info.value.message


def test_a_thousand_hinted_uuids_are_allowed():
    uuids = [f"bbbbbbbb-0000-4000-8000-{i:012d}" for i in range(MAX_LIST)]
    spec = make_spec(scheduler_hints={"same_host": uuids,
                                      "different_host": uuids})
    assert len(spec.hinted_uuids("same_host")) == MAX_LIST


def test_legacy_filter_properties_hints_are_checked_too():
    request_spec = {"instance_type": {"memory_mb": 1, "vcpus": 1,
                                      "root_gb": 1},
                    "instance_properties": {}}
    spec = RequestSpec.from_legacy(request_spec,
                                   {"scheduler_hints": {"same_host": [A]}})
    assert spec.hinted_uuids("same_host") == (A,)
    with pytest.raises(exception.InvalidRequest) as info:
        RequestSpec.from_legacy(request_spec, {"scheduler_hints": {
            "different_host": ["nope"]}})
    assert info.value.message == (
        "spec.scheduler_hints.different_host: 'nope' is not an instance "
        "uuid")


def test_hint_hosts_is_never_on_the_wire():
    spec = _spec(same_host=[A])
    out = spec.to_primitive()
    assert "hint_hosts" not in out
    again = RequestSpec.from_primitives(out)
    assert again.scheduler_hints == {"same_host": [A]}
    assert again.hint_hosts == {}
    # nor can a client send it
    with pytest.raises(exception.InvalidRequest) as info:
        RequestSpec.from_primitives(spec_dict(hint_hosts={A: ["h1"]}))
    assert "hint_hosts" in info.value.message


def test_trailing_newline_in_instance_uuids_is_invalid_request():
    with pytest.raises(exception.InvalidRequest) as info:
        make_spec(instance_uuids=[A + "\n"])
    assert info.value.message.startswith("spec.instance_uuids: ")
