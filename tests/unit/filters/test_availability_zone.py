"""AvailabilityZoneFilter: zones come from aggregate metadata."""
import scheduler.conf
from scheduler.filters.availability_zone import AvailabilityZoneFilter
from scheduler.hosts.state import Aggregate
from tests.unit.fakes import make_host
from tests.unit.fakes import make_spec
from tests.unit.fakes import zone_aggregate


def _passes(conf, host, zone):
    return AvailabilityZoneFilter(conf).host_passes(
        host, make_spec(availability_zone=zone))


def test_no_zone_requested_passes_any_host(conf):
    assert _passes(conf, make_host(aggregates=(zone_aggregate("az1"),)),
                   None)
    assert _passes(conf, make_host(), None)
    assert _passes(conf, make_host(aggregates=(zone_aggregate("az1"),)), "")


def test_host_in_the_zone_aggregate_passes(conf):
    host = make_host(aggregates=(zone_aggregate("az1"),))
    assert _passes(conf, host, "az1")


def test_host_in_another_zone_fails(conf):
    host = make_host(aggregates=(zone_aggregate("az1"),))
    assert not _passes(conf, host, "az2")


def test_host_in_another_zone_fails_even_for_the_default_zone(conf):
    host = make_host(aggregates=(zone_aggregate("az1"),))
    assert not _passes(conf, host, "nova")


def test_host_in_several_zone_aggregates(conf):
    host = make_host(aggregates=(zone_aggregate("az1", 1),
                                 zone_aggregate("az2", 2)))
    assert _passes(conf, host, "az1")
    assert _passes(conf, host, "az2")
    assert not _passes(conf, host, "az3")


def test_host_in_no_zone_aggregate_is_in_the_default_zone(conf):
    plain = Aggregate(7, "ssd", {"disk": "ssd"})
    for host in (make_host(), make_host(aggregates=(plain,))):
        assert _passes(conf, host, "nova")
        assert not _passes(conf, host, "az1")


def test_default_zone_comes_from_the_option(conf):
    conf.set_override("default_availability_zone", "az-default",
                      group="filter_scheduler")
    host = make_host()
    assert _passes(conf, host, "az-default")
    assert not _passes(conf, host, "nova")


def test_default_zone_set_where_nova_has_it(tmp_path):
    """nova's option is ``[DEFAULT] default_availability_zone``: an
    operator's nova setting carries over (architecture.rst: option
    names follow nova's)."""
    path = tmp_path / "scheduler.conf"
    path.write_text("[DEFAULT]\ndefault_availability_zone = az-default\n")
    conf = scheduler.conf.new_conf()
    conf(["--config-file", str(path)], default_config_files=[])
    assert conf.filter_scheduler.default_availability_zone == "az-default"
    host = make_host()
    assert _passes(conf, host, "az-default")
    assert not _passes(conf, host, "nova")


def test_zone_names_match_exactly(conf):
    host = make_host(aggregates=(zone_aggregate("az1"),))
    assert not _passes(conf, host, "AZ1")


def test_shape(conf):
    f = AvailabilityZoneFilter(conf)
    assert f.run_filter_once_per_request is True
    assert f.explain(make_spec(availability_zone="az9")) == \
        "not in the requested availability zone (az9)"


def test_no_zone_requested_is_no_zone_in_the_reason(conf):
    # The rank table showed "not in the requested availability zone
    # (None)" for a request that named none.
    f = AvailabilityZoneFilter(conf)
    for zone in (None, ""):
        assert f.explain(make_spec(availability_zone=zone)) == \
            "not in the requested availability zone"
