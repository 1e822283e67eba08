"""hosts.rows: database rows as HostStates and their aggregates."""
from __future__ import annotations

from scheduler.db.compute import AggregateRow
from scheduler.db.compute import Aggregates
from scheduler.hosts import rows
from scheduler.hosts.state import Aggregate


def test_hosts_in_the_same_aggregates_share_one_tuple_of_one_object_each():
    # At 100,000 hosts in a few zones a tuple (and Aggregate objects) per
    # host is tens of MB: each aggregate is one object, each membership
    # one tuple.
    by_host = rows.aggregates_by_host(Aggregates(
        rows={1: AggregateRow(1, "az1", "u1", {"availability_zone": "az1"}),
              2: AggregateRow(2, "ssd", None, {"disk": "ssd"})},
        hosts={"h1": [1, 2], "h2": [1, 2], "h3": [1]}))
    assert by_host["h1"] == (
        Aggregate(1, "az1", {"availability_zone": "az1"}, "u1"),
        Aggregate(2, "ssd", {"disk": "ssd"}, None))
    assert by_host["h2"] is by_host["h1"]
    assert by_host["h3"][0] is by_host["h1"][0]
    assert set(by_host) == {"h1", "h2", "h3"}
