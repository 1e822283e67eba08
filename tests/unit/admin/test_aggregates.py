"""scheduler.admin.aggregates (and the checks of scheduler.admin.validation
they make): create, fill, describe and delete aggregates."""
from __future__ import annotations

import uuid as uuidlib

import pytest
import sqlalchemy as sa

from scheduler.admin import aggregates
from scheduler.db import compute
from scheduler.db import models
from scheduler import exception
from tests.unit.conftest import fresh_host_manager
from tests.unit.fakes import node
from tests.unit.fakes import set_service


def _rows(engine, table, **where):
    with engine.connect() as conn:
        return conn.execute(sa.select(table).where(
            *(table.c[k] == v for k, v in where.items()))
            .order_by(table.c.id)).all()


def _counter(engine):
    with engine.connect() as conn:
        return compute.changes(conn)[0].aggregates


def test_create_aggregate(engine):
    created = aggregates.create_aggregate(engine, "fast", zone="az9")
    assert created["name"] == "fast"
    assert created["hosts"] == []
    assert created["metadata"] == {"availability_zone": "az9"}
    assert uuidlib.UUID(created["uuid"])
    plain = aggregates.create_aggregate(engine, "plain")
    assert plain["metadata"] == {}
    assert [a["name"] for a in aggregates.list_aggregates(engine)] == [
        "fast", "plain"]
    row = _rows(engine, models.aggregates, name="fast")[0]
    assert (row.deleted, row.deleted_at) == (0, None)
    assert row.created_at is not None


def test_create_aggregate_duplicate_name(engine):
    aggregates.create_aggregate(engine, "fast")
    with pytest.raises(exception.InvalidRequest) as info:
        aggregates.create_aggregate(engine, "fast", zone="az9")
    assert info.value.message == "aggregate 'fast' already exists"
    assert len(_rows(engine, models.aggregates, name="fast")) == 1
    # the name is free again once the aggregate is deleted
    aggregates.delete_aggregate(engine, "fast")
    assert aggregates.create_aggregate(engine, "fast")["name"] == "fast"


@pytest.mark.parametrize("name, zone, message", [
    ("", None, "aggregate name must not be empty"),
    ("x" * 256, None, "aggregate name is longer than 255 characters"),
    ("ok", "", "availability zone must not be empty")])
def test_create_aggregate_invalid(engine, name, zone, message):
    with pytest.raises(exception.InvalidRequest) as info:
        aggregates.create_aggregate(engine, name, zone=zone)
    assert info.value.message == message
    assert aggregates.list_aggregates(engine) == []


def test_list_aggregates(register, engine):
    register(node("h2"), node("h1"), node("h3", zone="az2"))
    listed = aggregates.list_aggregates(engine)
    assert [(a["name"], a["hosts"], a["metadata"]) for a in listed] == [
        ("az1", ["h1", "h2"], {"availability_zone": "az1"}),
        ("az2", ["h3"], {"availability_zone": "az2"}),
        ("az3", [], {"availability_zone": "az3"})]
    assert aggregates.get_aggregate(engine, "az2")["hosts"] == ["h3"]
    with pytest.raises(exception.NotFound) as info:
        aggregates.get_aggregate(engine, "nope")
    assert info.value.message == "no aggregate 'nope'"


def test_add_and_remove_host(register, engine, conf):
    register(node("h1"), node("h2"))
    aggregates.create_aggregate(engine, "fast", zone="az9")
    manager = fresh_host_manager(conf, engine)
    assert {s.host: s.availability_zones()
            for s in manager.host_states()}["h1"] == {"az1"}
    before = _counter(engine)
    aggregates.add_aggregate_host(engine, "fast", "h1")
    assert _counter(engine) > before        # the triggers saw it
    assert aggregates.get_aggregate(engine, "fast")["hosts"] == ["h1"]
    # a running scheduler picks the change up
    assert {s.host: s.availability_zones()
            for s in manager.host_states()}["h1"] == {"az1", "az9"}

    aggregates.remove_aggregate_host(engine, "fast", "h1")
    assert aggregates.get_aggregate(engine, "fast")["hosts"] == []
    row = _rows(engine, models.aggregate_hosts, host="h1")[-1]
    assert row.deleted == row.id and row.deleted_at is not None
    assert {s.host: s.availability_zones()
            for s in manager.host_states()}["h1"] == {"az1"}
    # and it can be added again (the old row stays soft-deleted)
    aggregates.add_aggregate_host(engine, "fast", "h1")
    assert aggregates.get_aggregate(engine, "fast")["hosts"] == ["h1"]
    assert len(_rows(engine, models.aggregate_hosts, host="h1")) == 3


def test_add_host_twice(register, engine):
    register(node("h1"))
    aggregates.create_aggregate(engine, "fast")
    aggregates.add_aggregate_host(engine, "fast", "h1")
    with pytest.raises(exception.InvalidRequest) as info:
        aggregates.add_aggregate_host(engine, "fast", "h1")
    assert info.value.message == "host 'h1' is already in aggregate 'fast'"
    assert aggregates.get_aggregate(engine, "fast")["hosts"] == ["h1"]


def test_add_host_twice_racing_is_still_refused(register, engine,
                                                monkeypatch):
    """If a concurrent add commits between the check and the insert, the
    unique constraint refuses the second row; the error is the same."""
    register(node("h1"))
    aggregates.create_aggregate(engine, "fast")
    aggregates.add_aggregate_host(engine, "fast", "h1")
    real_select = sa.select

    def blind_select(*columns, **kw):
        query = real_select(*columns, **kw)
        if len(columns) == 1 and columns[0] is models.aggregate_hosts.c.id:
            return query.where(sa.false())    # the check sees nothing
        return query
    monkeypatch.setattr(aggregates.sa, "select", blind_select)
    with pytest.raises(exception.InvalidRequest) as info:
        aggregates.add_aggregate_host(engine, "fast", "h1")
    assert info.value.message == "host 'h1' is already in aggregate 'fast'"


@pytest.mark.parametrize("aggregate, host, message", [
    ("nope", "h1", "no aggregate 'nope'"),
    ("fast", "nope", "no compute host 'nope'"),
    ("fast", "gone", "no compute host 'gone'"),
    ("fast", "conductor", "no compute host 'conductor'")])
def test_add_host_unknown(register, engine, aggregate, host, message):
    register(node("h1"), node("gone"), node("conductor"))
    set_service(engine, "gone", deleted=99)
    set_service(engine, "conductor", binary="nova-conductor")
    aggregates.create_aggregate(engine, "fast")
    with pytest.raises(exception.NotFound) as info:
        aggregates.add_aggregate_host(engine, aggregate, host)
    assert info.value.message == message
    assert aggregates.get_aggregate(engine, "fast")["hosts"] == []


def test_add_host_to_a_deleted_aggregate(register, engine):
    register(node("h1"))
    aggregates.create_aggregate(engine, "fast")
    aggregates.delete_aggregate(engine, "fast")
    with pytest.raises(exception.NotFound) as info:
        aggregates.add_aggregate_host(engine, "fast", "h1")
    assert info.value.message == "no aggregate 'fast'"


def test_remove_host_errors(register, engine):
    register(node("h1"), node("h2"))
    aggregates.create_aggregate(engine, "fast")
    aggregates.add_aggregate_host(engine, "fast", "h1")
    with pytest.raises(exception.NotFound) as info:
        aggregates.remove_aggregate_host(engine, "fast", "h2")
    assert info.value.message == "host 'h2' is not in aggregate 'fast'"
    with pytest.raises(exception.NotFound) as info:
        aggregates.remove_aggregate_host(engine, "nope", "h1")
    assert info.value.message == "no aggregate 'nope'"
    aggregates.remove_aggregate_host(engine, "fast", "h1")
    with pytest.raises(exception.NotFound):
        aggregates.remove_aggregate_host(engine, "fast", "h1")


def test_remove_a_host_that_is_no_longer_a_compute_host(register, engine):
    register(node("h1"))
    aggregates.create_aggregate(engine, "fast")
    aggregates.add_aggregate_host(engine, "fast", "h1")
    set_service(engine, "h1", deleted=99)
    aggregates.remove_aggregate_host(engine, "fast", "h1")
    assert aggregates.get_aggregate(engine, "fast")["hosts"] == []


def test_delete_aggregate_soft_deletes_it_with_hosts_and_metadata(
        register, engine):
    register(node("h1"), node("h2"))
    agg = aggregates.create_aggregate(engine, "fast", zone="az9")
    aggregates.set_aggregate_metadata(engine, "fast", {"ssd": "true"})
    aggregates.add_aggregate_host(engine, "fast", "h1")
    aggregates.add_aggregate_host(engine, "fast", "h2")
    other = aggregates.create_aggregate(engine, "other", zone="az8")
    aggregates.add_aggregate_host(engine, "other", "h1")

    with pytest.raises(exception.InvalidRequest) as info:
        aggregates.delete_aggregate(engine, "fast")
    assert info.value.message == (
        "aggregate 'fast' still has 2 host(s): h1, h2; remove them first "
        "or use --force")
    assert aggregates.get_aggregate(engine, "fast")["hosts"] == ["h1", "h2"]

    before = _counter(engine)
    assert aggregates.delete_aggregate(engine, "fast", force=True) == [
        "h1", "h2"]
    assert _counter(engine) > before
    assert [a["name"] for a in aggregates.list_aggregates(engine)] == [
        "az1", "az2", "az3", "other"]
    for table, column in ((models.aggregates, "id"),
                          (models.aggregate_hosts, "aggregate_id"),
                          (models.aggregate_metadata, "aggregate_id")):
        rows = _rows(engine, table, **{column: agg["id"]})
        assert rows
        assert all(r.deleted == r.id and r.deleted_at is not None
                   for r in rows), table.name
    # the other aggregate is untouched
    assert aggregates.get_aggregate(engine, "other") == {
        **other, "hosts": ["h1"]}
    with pytest.raises(exception.NotFound) as info:
        aggregates.delete_aggregate(engine, "fast")
    assert info.value.message == "no aggregate 'fast'"


def test_delete_an_empty_aggregate(engine):
    aggregates.create_aggregate(engine, "fast", zone="az9")
    assert aggregates.delete_aggregate(engine, "fast") == []
    assert aggregates.list_aggregates(engine) == []
    with pytest.raises(exception.NotFound):
        aggregates.delete_aggregate(engine, "nope", force=True)


def test_set_aggregate_metadata(register, engine, conf):
    register(node("h1"))
    aggregates.create_aggregate(engine, "fast", zone="az9")
    aggregates.add_aggregate_host(engine, "fast", "h1")
    assert aggregates.set_aggregate_metadata(
        engine, "fast", {"ssd": "true", "cpu_allocation_ratio": "2.0"}) == {
        "availability_zone": "az9", "cpu_allocation_ratio": "2.0",
        "ssd": "true"}
    # change one, remove one (empty or None), ignore an absent key
    before = _counter(engine)
    assert aggregates.set_aggregate_metadata(
        engine, "fast", {"availability_zone": "az8", "ssd": "",
                         "cpu_allocation_ratio": None, "absent": ""}) == {
        "availability_zone": "az8"}
    assert _counter(engine) > before
    assert aggregates.get_aggregate(engine, "fast")["metadata"] == {
        "availability_zone": "az8"}
    states = fresh_host_manager(conf, engine).host_states()
    assert {s.host: s.availability_zones() for s in states}["h1"] == {
        "az1", "az8"}
    removed = [r for r in _rows(engine, models.aggregate_metadata)
               if r.key in ("ssd", "cpu_allocation_ratio")]
    assert len(removed) == 2
    assert all(r.deleted == r.id and r.deleted_at for r in removed)
    zone = _rows(engine, models.aggregate_metadata,
                 key="availability_zone", value="az8")[0]
    assert zone.deleted == 0 and zone.updated_at is not None
    # a removed key can be set again
    assert aggregates.set_aggregate_metadata(engine, "fast", {"ssd": "no"})[
        "ssd"] == "no"
    # setting the same value again changes nothing
    before = _counter(engine)
    aggregates.set_aggregate_metadata(engine, "fast", {"ssd": "no"})
    assert _counter(engine) == before


@pytest.mark.parametrize("name, metadata, error, message", [
    ("nope", {"a": "b"}, exception.NotFound, "no aggregate 'nope'"),
    ("fast", {}, exception.InvalidRequest, "no metadata to set"),
    ("fast", {"": "b"}, exception.InvalidRequest,
     "metadata key must not be empty"),
    ("fast", {"k" * 256: "b"}, exception.InvalidRequest,
     "metadata key is longer than 255 characters"),
    ("fast", {"a": "v" * 256}, exception.InvalidRequest,
     "value of metadata key 'a' is longer than 255 characters")])
def test_set_aggregate_metadata_errors(engine, name, metadata, error,
                                       message):
    aggregates.create_aggregate(engine, "fast")
    with pytest.raises(error) as info:
        aggregates.set_aggregate_metadata(engine, name, metadata)
    assert info.value.message == message
    assert aggregates.get_aggregate(engine, "fast")["metadata"] == {}
