"""ComputeFilter: the node's service must be up and enabled."""
import pytest

from scheduler.filters.compute import ComputeFilter
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


@pytest.mark.parametrize("up,disabled,passes", [
    (True, False, True),
    (False, False, False),
    (True, True, False),
    (False, True, False),
])
def test_up_and_enabled(conf, up, disabled, passes):
    host = make_host(service_up=up, service_disabled=disabled)
    assert ComputeFilter(conf).host_passes(host, make_spec()) is passes


def test_filter_all_matches_host_passes(conf):
    hosts = [make_host("a", node_id=1),
             make_host("b", node_id=2, service_up=False),
             make_host("c", node_id=3, service_disabled=True,
                       disabled_reason="maintenance"),
             make_host("d", node_id=4)]
    f = ComputeFilter(conf)
    assert [h.host for h in f.filter_all(hosts, make_spec())] == ["a", "d"]


def test_shape(conf):
    f = ComputeFilter(conf)
    assert f.run_filter_once_per_request is True
    assert f.explain(make_spec()) == "service down or disabled"
    assert f.limits(make_host()) == {}
