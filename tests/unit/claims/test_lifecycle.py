"""Release, confirm and expiry: usage given back once, by the database's
clock."""
from __future__ import annotations

import datetime

import sqlalchemy as sa

from scheduler.claims import consume
from scheduler.claims import lifecycle
from scheduler.db import clock
from scheduler.db import models
from tests.unit.claims.conftest import C1
from tests.unit.claims.conftest import C2
from tests.unit.claims.conftest import C3
from tests.unit.claims.conftest import C4
from tests.unit.claims.conftest import claim_on
from tests.unit.claims.conftest import consumers
from tests.unit.claims.conftest import usage_of
from tests.unit.fakes import allocation_rows
from tests.unit.fakes import node_row


def test_release_gives_usage_back_once(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1), claim_on(nodes["h1"], C2)])
    assert lifecycle.release(engine, [C1]) == 1
    usage = usage_of(engine, "h1")
    assert (usage["vcpus_used"], usage["memory_mb_used"],
            usage["local_gb_used"], usage["free_ram_mb"],
            usage["free_disk_gb"], usage["running_vms"]) == (
        2, 1024, 10, 8192 - 1024, 90, 1)
    assert usage["generation"] == 2
    assert [a.consumer_uuid for a in allocation_rows(engine)] == [C2]

    # idempotent: the second release changes nothing
    assert lifecycle.release(engine, [C1]) == 0
    assert usage_of(engine, "h1") == usage


def test_release_across_nodes(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1), claim_on(nodes["h2"], C2)])
    assert lifecycle.release(engine, [C1, C2, C3]) == 2
    for host in ("h1", "h2"):
        usage = usage_of(engine, host)
        assert (usage["vcpus_used"], usage["memory_mb_used"],
                usage["local_gb_used"], usage["running_vms"]) == (0, 0, 0, 0)
        assert usage["free_ram_mb"] == 8192 and usage["free_disk_gb"] == 100
    assert allocation_rows(engine) == []


def test_release_unknown_or_nothing(engine, nodes):
    assert lifecycle.release(engine, []) == 0
    assert lifecycle.release(engine, [C3]) == 0
    assert usage_of(engine, "h1")["generation"] == 0


def test_released_consumer_can_claim_again(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1)])
    lifecycle.release(engine, [C1])
    consume.claim(engine, [claim_on(node_row(engine, "h2"), C1)])
    [alloc] = allocation_rows(engine)
    assert alloc.compute_node_id == nodes["h2"].id


def _expires_at(engine, consumer):
    a = models.allocations
    with engine.connect() as conn:
        return conn.execute(sa.select(a.c.expires_at).where(
            a.c.consumer_uuid == consumer)).scalar_one()


def _db_now(engine):
    with engine.connect() as conn:
        return clock.db_time(conn)


def _set_expires_at(engine, consumer, value):
    a = models.allocations
    with engine.begin() as conn:
        conn.execute(a.update().where(a.c.consumer_uuid == consumer)
                     .values(expires_at=value))


def test_ttl_sets_expires_at_by_the_database_clock(engine, nodes):
    before = _db_now(engine)
    consume.claim(engine, [claim_on(nodes["h1"], C1)], ttl=600)
    after = _db_now(engine)
    expires = _expires_at(engine, C1)
    assert isinstance(expires, datetime.datetime)
    assert (before + datetime.timedelta(seconds=600)
            <= expires <= after + datetime.timedelta(seconds=601))


def test_no_ttl_means_a_permanent_claim(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1)])
    consume.claim(engine, [claim_on(nodes["h2"], C2)], ttl=0)
    assert _expires_at(engine, C1) is None
    assert _expires_at(engine, C2) is None


def test_confirm(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1), claim_on(nodes["h1"], C2)],
                 ttl=60)
    assert _expires_at(engine, C1) is not None
    assert lifecycle.confirm(engine, [C1, C3]) == 1
    assert _expires_at(engine, C1) is None
    assert _expires_at(engine, C2) is not None
    # confirmed before still counts; unknown consumers count 0
    assert lifecycle.confirm(engine, [C1, C2]) == 2
    assert _expires_at(engine, C2) is None
    assert lifecycle.confirm(engine, [C3, C4]) == 0
    assert lifecycle.confirm(engine, []) == 0
    # confirming changes no usage
    assert usage_of(engine, "h1")["generation"] == 1


def test_expire_releases_only_claims_past_their_time(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1), claim_on(nodes["h1"], C2)],
                 ttl=3600)
    consume.claim(engine, [claim_on(nodes["h2"], C3)])            # permanent
    consume.claim(engine, [claim_on(node_row(engine, "h2"), C4)], ttl=3600)
    now = _db_now(engine)
    _set_expires_at(engine, C1, now - datetime.timedelta(seconds=5))
    _set_expires_at(engine, C4, now - datetime.timedelta(hours=1))
    h1_gen = usage_of(engine, "h1")["generation"]

    assert lifecycle.expire(engine) == 2
    assert consumers(engine) == [C2, C3]
    h1, h2 = usage_of(engine, "h1"), usage_of(engine, "h2")
    assert (h1["vcpus_used"], h1["memory_mb_used"], h1["local_gb_used"],
            h1["free_ram_mb"], h1["free_disk_gb"], h1["running_vms"]) == (
        2, 1024, 10, 8192 - 1024, 90, 1)
    assert h1["generation"] == h1_gen + 1
    assert (h2["vcpus_used"], h2["running_vms"]) == (2, 1)

    # twice: released once
    assert lifecycle.expire(engine) == 0
    assert usage_of(engine, "h1") == h1
    assert usage_of(engine, "h2") == h2


def test_expire_with_nothing_expired(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1)], ttl=3600)
    assert lifecycle.expire(engine) == 0
    assert consumers(engine) == [C1]


def test_confirmed_claims_never_expire(engine, nodes):
    consume.claim(engine, [claim_on(nodes["h1"], C1)], ttl=3600)
    _set_expires_at(engine, C1, _db_now(engine)
                    - datetime.timedelta(seconds=5))
    assert lifecycle.confirm(engine, [C1]) == 1
    assert lifecycle.expire(engine) == 0
    assert consumers(engine) == [C1]
    assert usage_of(engine, "h1")["vcpus_used"] == 2
