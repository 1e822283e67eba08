"""RetryFilter: hosts already tried by this request are skipped."""
import pytest

from scheduler.decide import plugins
from scheduler.filters.retry import RetryFilter
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def _passes(conf, host, retry):
    return RetryFilter(conf).host_passes(host, make_spec(retry=retry))


@pytest.mark.parametrize("retry", [
    None, {}, {"num_attempts": 1}, {"num_attempts": 1, "hosts": []}])
def test_no_tried_hosts_passes(conf, retry):
    assert _passes(conf, make_host("h1"), retry)


def test_tried_host_and_node_fails(conf):
    retry = {"num_attempts": 2, "hosts": [["h1", "h1"], ["h2", "n2"]]}
    assert not _passes(conf, make_host("h1"), retry)
    assert not _passes(conf, make_host("h2", "n2"), retry)


def test_same_host_other_node_passes(conf):
    retry = {"num_attempts": 2, "hosts": [["ironic", "node-a"]]}
    assert not _passes(conf, make_host("ironic", "node-a"), retry)
    assert _passes(conf, make_host("ironic", "node-b"), retry)


def test_other_host_passes(conf):
    retry = {"num_attempts": 2, "hosts": [["h1", "h1"]]}
    assert _passes(conf, make_host("h2"), retry)


def test_matching_is_exact(conf):
    retry = {"num_attempts": 2, "hosts": [["H1", "H1"], ["h2", None]]}
    assert _passes(conf, make_host("h1"), retry)
    assert _passes(conf, make_host("h2"), retry)


def test_filter_all_matches_host_passes(conf):
    hosts = [make_host(f"h{i}", node_id=i) for i in range(5)]
    spec = make_spec(retry={"num_attempts": 3,
                            "hosts": [["h1", "h1"], ["h3", "h3"]]})
    f = RetryFilter(conf)
    assert [h.host for h in f.filter_all(hosts, spec)] == ["h0", "h2", "h4"]
    assert f.filter_all(hosts, spec) == [h for h in hosts
                                         if f.host_passes(h, spec)]


def test_shape(conf):
    f = RetryFilter(conf)
    assert f.run_filter_once_per_request is False
    assert f.explain(make_spec()) == \
        "already tried by an earlier attempt of this request"
    assert "RetryFilter" in plugins.names(plugins.FILTER_NS)
