"""db.compute.aggregates: the live aggregates as plain data, on the unit
tests' real SQLite database."""
from __future__ import annotations

import sqlalchemy as sa

from scheduler.db import compute
from scheduler.db import models


def _aggregate(conn: sa.Connection, name: str, hosts: list[str],
               metadata: dict[str, str], deleted: bool = False) -> int:
    agg_id = conn.execute(models.aggregates.insert().values(
        name=name, uuid=f"uuid-of-{name}", deleted=0)
    ).inserted_primary_key[0]
    for key, value in metadata.items():
        conn.execute(models.aggregate_metadata.insert().values(
            aggregate_id=agg_id, key=key, value=value, deleted=0))
    for host in hosts:
        conn.execute(models.aggregate_hosts.insert().values(
            host=host, aggregate_id=agg_id, deleted=0))
    if deleted:
        conn.execute(models.aggregates.update()
                     .where(models.aggregates.c.id == agg_id)
                     .values(deleted=agg_id))
    return agg_id


def test_aggregates_are_the_live_ones_with_their_metadata_and_hosts(
        engine):
    with engine.begin() as conn:
        ssd = _aggregate(conn, "ssd", ["h2", "h1"], {"disk": "ssd"})
        az = _aggregate(conn, "az1", ["h1"], {"availability_zone": "az1"})
        _aggregate(conn, "gone", ["h1", "h3"], {"x": "1"}, deleted=True)
    with engine.connect() as conn:
        found = compute.aggregates(conn)
    assert found.rows == {
        ssd: compute.AggregateRow(ssd, "ssd", "uuid-of-ssd",
                                  {"disk": "ssd"}),
        az: compute.AggregateRow(az, "az1", "uuid-of-az1",
                                 {"availability_zone": "az1"})}
    # A deleted aggregate's hosts are in none of the live ones.
    assert found.hosts == {"h1": sorted([ssd, az]), "h2": [ssd]}
