"""The filter loop: order, early stop, once-per-request, steps, explain."""
from __future__ import annotations

import numpy as np
import pytest

from scheduler.filters import base
from scheduler.filters.base import BaseFilter
from scheduler.filters.base import FilterStep
from scheduler.filters.base import explain
from scheduler.filters.base import filter_hosts
from scheduler.hosts.table import HostTable
from scheduler.hosts.table import HostView
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


class Recording(BaseFilter):
    """Passes the hosts whose name is not in ``reject``; logs each call."""

    def __init__(self, conf, name, log, reject=(), once=False,
                 reason="rejected"):
        super().__init__(conf)
        self._name = name
        self.log = log
        self.reject = set(reject)
        self.run_filter_once_per_request = once
        self.reason = reason

    @property
    def name(self):
        return self._name

    def filter_all(self, hosts, spec):
        self.log.append((self._name, [h.host for h in hosts]))
        return super().filter_all(hosts, spec)

    def host_passes(self, host, spec):
        return host.host not in self.reject


@pytest.fixture
def hosts():
    return [make_host(f"h{i}", node_id=i) for i in range(1, 5)]


def test_filters_run_in_order_on_the_survivors(conf, hosts):
    log = []
    filters = [Recording(conf, "A", log, reject={"h1"}),
               Recording(conf, "B", log, reject={"h3"}),
               Recording(conf, "C", log)]
    passed, steps = filter_hosts(filters, hosts, make_spec())
    assert [h.host for h in passed] == ["h2", "h4"]
    assert log == [("A", ["h1", "h2", "h3", "h4"]),
                   ("B", ["h2", "h3", "h4"]),
                   ("C", ["h2", "h4"])]
    assert [(s.name, s.hosts_in, s.hosts_out) for s in steps] == [
        ("A", 4, 3), ("B", 3, 2), ("C", 2, 2)]


def test_survivors_keep_their_order_and_identity(conf, hosts):
    filters = [Recording(conf, "A", [], reject={"h2"})]
    passed, _ = filter_hosts(filters, hosts, make_spec())
    assert passed == [hosts[0], hosts[2], hosts[3]]
    assert all(p is h for p, h in zip(passed, [hosts[0], hosts[2], hosts[3]]))


def test_loop_stops_when_no_host_is_left(conf, hosts):
    log = []
    filters = [Recording(conf, "A", log, reject={"h1", "h2"}),
               Recording(conf, "B", log, reject={"h3", "h4"}),
               Recording(conf, "C", log)]
    passed, steps = filter_hosts(filters, hosts, make_spec())
    assert passed == []
    assert [name for name, _ in log] == ["A", "B"]
    assert [s.name for s in steps] == ["A", "B"]


def test_empty_host_list_runs_one_filter_at_most(conf):
    log = []
    filters = [Recording(conf, "A", log), Recording(conf, "B", log)]
    passed, steps = filter_hosts(filters, [], make_spec())
    assert passed == []
    assert len(steps) <= 1


@pytest.mark.parametrize("index,expected", [
    (0, ["once", "always"]), (1, ["always"]), (5, ["always"])])
def test_once_per_request_filters_run_only_for_the_first_instance(
        conf, hosts, index, expected):
    log = []
    filters = [Recording(conf, "once", log, reject={"h1"}, once=True),
               Recording(conf, "always", log)]
    passed, steps = filter_hosts(filters, hosts, make_spec(), index=index)
    assert [name for name, _ in log] == expected
    assert [s.name for s in steps] == expected
    assert len(passed) == (3 if index == 0 else 4)


def test_a_rebuild_check_runs_only_the_filters_nova_runs_on_rebuild(
        conf, hosts):
    log = []
    image = Recording(conf, "image", log, reject={"h1"})
    image.run_on_rebuild = True
    usage = Recording(conf, "usage", log, reject={"h2"})
    rebuild = make_spec(scheduler_hints={"_nova_check_type": ["rebuild"]})
    passed, steps = filter_hosts([image, usage], hosts, rebuild)
    assert [s.name for s in steps] == ["image"]
    assert [h.host for h in passed] == ["h2", "h3", "h4"]
    passed, _ = filter_hosts([image, usage], hosts, make_spec())
    assert [h.host for h in passed] == ["h3", "h4"]


def test_the_filters_nova_runs_on_rebuild_are_the_image_filters():
    from stevedore import extension
    installed = extension.ExtensionManager("scheduler.filters")
    names = {ext.name for ext in installed if ext.plugin.run_on_rebuild}
    assert names == {"ImagePropertiesFilter", "IsolatedHostsFilter",
                     "AggregateImagePropertiesIsolation"}


def test_step_sample_lists_removed_hosts_up_to_sample_size(conf):
    hosts = [make_host(f"h{i}", node_id=i) for i in range(10)]
    reject = {f"h{i}" for i in range(1, 9)}
    _, [step] = filter_hosts([Recording(conf, "A", [], reject=reject)],
                            hosts, make_spec())
    assert base.SAMPLE_SIZE == 5
    assert step.sample == ("h1", "h2", "h3", "h4", "h5")
    assert step.removed == 8


def test_step_sample_names_nodes_of_multi_node_hosts(conf):
    hosts = [make_host("ironic", "node-a", node_id=1),
             make_host("ironic", "node-b", node_id=2),
             make_host("kvm1", node_id=3)]
    _, [step] = filter_hosts([Recording(conf, "A", [],
                                       reject={"ironic", "kvm1"})],
                            hosts, make_spec())
    assert step.sample == ("ironic:node-a", "ironic:node-b", "kvm1")


def test_step_without_removal_has_empty_sample(conf, hosts):
    _, [step] = filter_hosts([Recording(conf, "A", [])], hosts, make_spec())
    assert step.sample == () and step.removed == 0


def test_step_reason_comes_from_explain(conf, hosts):
    class Explaining(Recording):
        def explain(self, spec):
            return f"need {spec.flavor.memory_mb} MB"

    _, [step] = filter_hosts([Explaining(conf, "A", [], reject={"h1"})],
                            hosts, make_spec(flavor={"memory_mb": 4096}))
    assert step.reason == "need 4096 MB"


def test_filter_step_to_primitive():
    step = FilterStep("RamFilter", 10, 4, "insufficient RAM", ("h1", "h2"))
    assert step.removed == 6
    assert step.to_primitive() == {"name": "RamFilter", "in": 10, "out": 4,
                                   "reason": "insufficient RAM",
                                   "sample": ["h1", "h2"]}


# --- explain -----------------------------------------------------------------

def test_explain_exact_text():
    steps = [FilterStep("RamFilter", 2, 0,
                        "insufficient RAM: need 4096 MB", ())]
    assert explain(steps, 3) == (
        "0/3 hosts passed. RamFilter removed 2 "
        "(insufficient RAM: need 4096 MB)")


def test_explain_lists_only_filters_that_removed_hosts_in_order():
    steps = [FilterStep("AvailabilityZoneFilter", 1000, 1000, "zone", ()),
             FilterStep("ComputeFilter", 1000, 620,
                        "service down or disabled", ()),
             FilterStep("RamFilter", 620, 0, "insufficient RAM", ())]
    assert explain(steps, 1000) == (
        "0/1000 hosts passed. ComputeFilter removed 380 "
        "(service down or disabled), RamFilter removed 620 "
        "(insufficient RAM)")


def test_explain_nothing_removed():
    steps = [FilterStep("ComputeFilter", 3, 3, "down", ())]
    assert explain(steps, 3) == "3/3 hosts passed"
    assert explain([], 7) == "7/7 hosts passed"


def test_explain_of_a_real_run(conf):
    from scheduler.filters.compute import ComputeFilter
    from scheduler.filters.resources import RamFilter
    hosts = [make_host("h1", node_id=1, service_up=False),
             make_host("h2", node_id=2, memory_mb_total=2048),
             make_host("h3", node_id=3, memory_mb_total=2048)]
    _, steps = filter_hosts([ComputeFilter(conf), RamFilter(conf)], hosts,
                           make_spec(flavor={"memory_mb": 4096}))
    assert explain(steps, 3) == (
        "0/3 hosts passed. ComputeFilter removed 1 (service down or "
        "disabled), RamFilter removed 2 (insufficient RAM: need 4096 MB)")


# --- BaseFilter defaults -----------------------------------------------------

def test_base_filter_defaults(conf, hosts):
    class Odd(BaseFilter):
        reason = "even"

        def host_passes(self, host, spec):
            return host.node_id % 2 == 1

    f = Odd(conf)
    assert f.name == "Odd"
    assert f.conf is conf
    assert f.run_filter_once_per_request is False
    assert f.explain(make_spec()) == "even"
    assert f.limits(hosts[0]) == {}
    assert f.filter_all(hosts, make_spec()) == [hosts[0], hosts[2]]


def test_base_filter_requires_host_passes(conf, hosts):
    with pytest.raises(NotImplementedError):
        BaseFilter(conf).host_passes(hosts[0], make_spec())


def test_narrow_records_a_step_only_when_it_removes_hosts():
    view = HostView(HostTable([make_host(f"h{i}") for i in range(4)]))
    idx = np.arange(4)
    steps: list[FilterStep] = []
    assert base.narrow(view, idx, np.ones(4, bool), "x", "why",
                       steps) is idx
    assert steps == []
    kept = base.narrow(view, idx, np.array([True, False, True, False]),
                       "ignore_hosts", "ignored by the request", steps)
    assert list(kept) == [0, 2]
    assert steps == [FilterStep("ignore_hosts", 4, 2,
                                "ignored by the request", ("h1", "h3"))]


class Copying(BaseFilter):
    """A column filter that keeps every host, as a new array."""

    def host_passes(self, host, spec):
        return True

    def filter_columns(self, view, idx, spec):
        return idx.copy()


def test_filters_that_remove_nothing_keep_the_all_positions_array(conf):
    # Later filters and weighers read whole columns, without gathering,
    # only while the positions are the table's own all-positions array.
    view = HostView(HostTable([make_host(f"h{i}") for i in range(4)]))
    everywhere = view.all_positions()
    passed, steps = base.run_filters([Copying(conf), Copying(conf)], view,
                                     everywhere, make_spec())
    assert passed is everywhere
    assert [(s.hosts_in, s.hosts_out) for s in steps] == [(4, 4), (4, 4)]
