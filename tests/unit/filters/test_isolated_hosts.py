"""IsolatedHostsFilter: isolated images on isolated hosts."""
import pytest

from scheduler.decide import plugins
from scheduler.filters.isolated_hosts import IsolatedHostsFilter
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec


def _set(conf, images=(), hosts=(), restrict=True):
    conf.set_override("isolated_images", list(images),
                      group="filter_scheduler")
    conf.set_override("isolated_hosts", list(hosts),
                      group="filter_scheduler")
    conf.set_override("restrict_isolated_hosts_to_isolated_images",
                      restrict, group="filter_scheduler")


def _passes(conf, host, image):
    spec = make_spec(image={"id": image} if image else None)
    return IsolatedHostsFilter(conf).host_passes(make_host(host), spec)


def test_option_defaults(conf):
    fs = conf.filter_scheduler
    assert fs.isolated_images == [] and fs.isolated_hosts == []
    assert fs.restrict_isolated_hosts_to_isolated_images is True
    assert _passes(conf, "h1", "img")


# (image isolated, host isolated, restrict) -> passes, as in nova
@pytest.mark.parametrize("image,host,restrict,passes", [
    ("iso-img", "iso-host", True, True),
    ("iso-img", "plain", True, False),
    ("plain-img", "iso-host", True, False),
    ("plain-img", "plain", True, True),
    ("iso-img", "iso-host", False, True),
    ("iso-img", "plain", False, False),
    ("plain-img", "iso-host", False, True),
    ("plain-img", "plain", False, True),
    (None, "iso-host", True, False),
    (None, "plain", True, True),
    (None, "iso-host", False, True),
])
def test_truth_table(conf, image, host, restrict, passes):
    _set(conf, images=["iso-img"], hosts=["iso-host"], restrict=restrict)
    assert _passes(conf, host, image) is passes


@pytest.mark.parametrize("host,restrict,passes", [
    ("iso-host", True, False), ("plain", True, True),
    ("iso-host", False, True), ("plain", False, True)])
def test_no_isolated_images(conf, host, restrict, passes):
    _set(conf, images=[], hosts=["iso-host"], restrict=restrict)
    assert _passes(conf, host, "any-img") is passes


def test_host_names_match_exactly(conf):
    _set(conf, images=["iso-img"], hosts=["iso-host"])
    assert not _passes(conf, "ISO-HOST", "iso-img")


def test_filter_all_matches_host_passes(conf):
    _set(conf, images=["iso-img"], hosts=["h2", "h3"])
    hosts = [make_host(f"h{i}", node_id=i) for i in range(1, 5)]
    f = IsolatedHostsFilter(conf)
    for image, expected in (("iso-img", ["h2", "h3"]),
                            ("other", ["h1", "h4"])):
        spec = make_spec(image={"id": image})
        assert [h.host for h in f.filter_all(hosts, spec)] == expected
        assert f.filter_all(hosts, spec) == [h for h in hosts
                                             if f.host_passes(h, spec)]


def test_shape(conf):
    _set(conf, images=["iso-img"], hosts=["h2"])
    f = IsolatedHostsFilter(conf)
    assert f.run_filter_once_per_request is True
    assert f.explain(make_spec(image={"id": "iso-img"})) == (
        "image and host isolation do not match: the image may run only "
        "on isolated hosts")
    assert f.explain(make_spec()) == (
        "image and host isolation do not match: isolated hosts run only "
        "isolated images")
    assert "IsolatedHostsFilter" in plugins.names(plugins.FILTER_NS)
