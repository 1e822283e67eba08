"""Nova 34's own client drives our server: it places, refuses, migrates,
resizes and sends its casts, and gets what it expects back.

Nova runs in its own virtualenv (``tools/nova-venv`` builds it once into
``.cache/nova-venv``); ``nova_driver.py`` is run with that python and
speaks JSON lines with these tests. Our server listens where nova looks:
topic ``scheduler`` on the control exchange both are configured with.
"""
from __future__ import annotations

import datetime
import uuid

import pytest

from scheduler.claims import lifecycle
from scheduler.db import models
from tests.fixtures.nova_client import NovaClient
from tests.functional.conftest import every_database
from tests.functional.conftest import node
from tests.functional.waits import wait_until

CELL = "8f1b1c52-6c2d-4f0e-9d51-3c1e8f0a7b21"
EXCHANGE = f"nova-interop-{uuid.uuid4().hex[:8]}"
SMALL = {"memory_mb": 1024, "vcpus": 1, "root_gb": 10}
BIG = {"memory_mb": 3072, "vcpus": 2, "root_gb": 20}


@pytest.fixture(scope="module")
def nova(nova_python, rabbitmq, tmp_path_factory):
    """Nova's client, configured as a nova deployment would be."""
    client = NovaClient.configured(nova_python, rabbitmq.transport_url,
                                   EXCHANGE, tmp_path_factory.mktemp("nova"))
    yield client
    client.close()


@pytest.fixture
def cloud(make_deployment):
    """Our server as nova's scheduler: three hosts of 4 GB / 4 vCPUs,
    logging at debug (see :func:`served`)."""
    deployment = make_deployment(DEFAULT__control_exchange=EXCHANGE,
                                 scheduler__topic="scheduler",
                                 nova__cell_uuid=CELL, DEFAULT__debug="true")
    deployment.add_nodes([node(h, vcpus=4, memory_mb=4096, local_gb=100)
                          for h in ("c1", "c2", "c3")])
    deployment.start_server()
    yield deployment
    deployment.stop_servers()
    log = deployment.server_log()
    assert " ERROR " not in log and "Traceback" not in log, log[-3000:]


def used(cloud, host: str) -> int:
    return cloud.nodes()[host].memory_mb_used


def served(cloud, cast: str, host: str) -> int:
    """How many ``cast`` casts from ``host`` the server has finished (its
    debug line says so even when nothing changed)."""
    return cloud.server_log().count(f" {cast} from {host}: ")


def boot(nova, flavor=SMALL, count=1, **request):
    uuids = [str(uuid.uuid4()) for _ in range(count)]
    answer = nova("select", flavor=flavor, instance_uuids=uuids, **request)
    assert "selections" in answer, answer
    return uuids, answer["selections"]


def test_nova_boots_one_and_gets_selection_objects(nova, cloud):
    uuids, selections = boot(nova)

    [[chosen, *alternates]] = selections
    nodes = cloud.nodes()
    assert chosen["class"] == "nova.objects.selection.Selection"
    assert chosen["cell_uuid"] == CELL
    assert chosen["compute_node_uuid"] == nodes[chosen["service_host"]].uuid
    assert chosen["limits"]["memory_mb"] == 4096
    # max_attempts (3) hosts in all: the two others as alternates.
    assert sorted(a["service_host"] for a in alternates) == sorted(
        set(nodes) - {chosen["service_host"]})
    assert all(a["compute_node_uuid"] == nodes[a["service_host"]].uuid
               for a in alternates)
    assert [a.consumer_uuid for a in cloud.allocations()] == uuids
    assert used(cloud, chosen["service_host"]) == 1024


def test_nodes_without_a_uuid_are_named_by_uuids_nova_can_read(nova, cloud):
    """nova's Selection.compute_node_uuid cannot be None: a reply naming
    a node whose row has no uuid, chosen or alternate, was unreadable to
    nova's client (ValueError), after the claim was made."""
    with cloud.engine.begin() as conn:
        conn.execute(models.compute_nodes.update().values(uuid=None))
    uuids, [[chosen, *alternates]] = boot(nova)

    named = [s["compute_node_uuid"] for s in (chosen, *alternates)]
    assert len(named) == 3 and len(set(named)) == 3 and None not in named
    assert [a.consumer_uuid for a in cloud.allocations()] == uuids


def test_nova_boots_an_anti_affinity_group_on_distinct_hosts(nova, cloud):
    group = {"uuid": str(uuid.uuid4()), "policy": "anti-affinity"}
    _, selections = boot(nova, count=3, group=group,
                         hints={"group": group["uuid"]})

    assert sorted(s[0]["service_host"] for s in selections) == [
        "c1", "c2", "c3"]
    answer = nova("select", flavor=SMALL, instance_uuids=[str(uuid.uuid4())],
                  group=group)
    assert answer["error"] == "nova.exception.NoValidHost"


def test_refusals_arrive_as_novas_no_valid_host(nova, cloud):
    too_big = {"memory_mb": 8192, "vcpus": 1, "root_gb": 10}
    answer = nova("select", flavor=too_big,
                  instance_uuids=[str(uuid.uuid4())])
    assert answer["error"] == "nova.exception.NoValidHost"
    assert "0/3 hosts passed" in answer["message"]
    assert "RamFilter removed 3" in answer["message"]

    for request, field in [
            ({"numa": True}, "numa_topology"),
            ({"required_traits": ["HW_CPU_X86_AVX2"]}, "root_required"),
            ({"flavor": {**SMALL, "extra_specs": {"resources:VGPU": "1"}}},
             "extra_specs.resources:VGPU"),
            ({"flavor": {**SMALL, "extra_specs": {
                "trait:HW_CPU_X86_AVX2": "required"}}},
             "extra_specs.trait:HW_CPU_X86_AVX2")]:
        answer = nova("select", **{"flavor": SMALL, **request},
                      instance_uuids=[str(uuid.uuid4())])
        assert answer["error"] == "nova.exception.NoValidHost", answer
        assert field in answer["message"]
    assert cloud.allocations() == []


def test_boot_from_volume_needs_no_root_disk(nova, cloud):
    huge_root = {**SMALL, "root_gb": 500}
    answer = nova("select", flavor=huge_root,
                  instance_uuids=[str(uuid.uuid4())])
    assert answer["error"] == "nova.exception.NoValidHost"

    uuids, _ = boot(nova, flavor=huge_root, is_bfv=True)
    assert [a.disk_gb for a in cloud.allocations()] == [0]


def test_cold_migration_lands_elsewhere_and_confirm_frees_the_source(
        nova, cloud):
    [instance], [[booted, *_]] = boot(nova)
    source = booted["service_host"]

    # Nova's conductor re-schedules the same instance, ignoring its host.
    [[moved, *alternates]] = nova(
        "select", flavor=SMALL, instance_uuids=[instance],
        ignore_hosts=[source])["selections"]
    target = moved["service_host"]
    assert target != source
    assert source not in [a["service_host"] for a in alternates]
    assert used(cloud, source) == 1024 and used(cloud, target) == 1024

    # Resize confirm: the source compute tells the schedulers the
    # instance left it.
    nova("delete_instance_info", host=source, uuid=instance)
    wait_until(lambda: used(cloud, source) == 0, "source freed")
    assert used(cloud, target) == 1024
    [claim] = cloud.allocations()
    assert claim.source_node_id is None


def _live_migrated(nova) -> tuple[str, str, str]:
    """An instance booted, reported on its host, and its live migration
    placed as nova's conductor asks for it (live_migrate.py's
    _find_destination: no alternates, the source ignored, the instance's
    cell): (instance, source host, destination host)."""
    [instance], [[booted, *_]] = boot(nova)
    source = booted["service_host"]
    nova("update_instance_info", host=source, uuids=[instance])
    [[moved]] = nova("select", flavor=SMALL, instance_uuids=[instance],
                     ignore_hosts=[source], destination_cell=CELL,
                     return_alternates=False)["selections"]
    return instance, source, moved["service_host"]


def test_a_finished_live_migration_gives_the_source_back(nova, cloud):
    instance, source, target = _live_migrated(nova)
    assert used(cloud, source) == 1024 and used(cloud, target) == 1024

    # _post_live_migration on the source reports the instance (its copy
    # may still name the source); then the destination's periodic list
    # names it. Live migration has no confirm step: nothing else comes.
    nova("update_instance_info", host=source, uuids=[instance],
         task_state="migrating")
    nova("sync_instance_info", host=target, uuids=[instance])
    wait_until(lambda: cloud.allocations()[0].expires_at is None,
               "destination confirmed")
    [claim] = cloud.allocations()
    assert (claim.source_node_id, used(cloud, source)) == (None, 0)
    assert used(cloud, target) == 1024
    assert cloud.manage("allocations", "audit", check=False).returncode == 0


@every_database
def test_a_drains_moves_asked_by_nova_get_the_planned_hosts(nova, cloud):
    # Two instances on c1, drained: both moves claimed at once. Nova then
    # live-migrates each to its planned host (`openstack server migrate
    # --live-migration --host DEST`: the host requested, the source
    # ignored, the cell kept) and gets the planned claim back, no second
    # one; each arrival gives its source back.
    instances = [d["uuid"] for d in cloud.api.select_destinations({}, {
        "flavor": SMALL, "num_instances": 2, "force_hosts": ["c1"]})]
    nova("update_instance_info", host="c1", uuids=instances)
    plan = cloud.api.plan_drain({}, "c1", apply=True)
    planned = {m["consumer_uuid"]: m["to"]["host"] for m in plan["moves"]}
    assert set(planned) == set(instances) and "c1" not in planned.values()
    for instance in instances:
        [[moved]] = nova("select", flavor=SMALL, instance_uuids=[instance],
                         ignore_hosts=["c1"], destination_cell=CELL,
                         requested_destination={"host": planned[instance]},
                         return_alternates=False)["selections"]
        assert moved["service_host"] == planned[instance]
    assert len(cloud.allocations()) == 2
    assert sum(used(cloud, h) for h in ("c1", "c2", "c3")) == 4 * 1024
    for instance in instances:
        nova("sync_instance_info", host=planned[instance], uuids=[instance])
    wait_until(lambda: used(cloud, "c1") == 0, "sources given back")
    assert cloud.manage("allocations", "audit", check=False).returncode == 0


def test_an_evacuation_gives_the_source_back_once_rebuilt(nova, cloud):
    [instance], [[booted, *_]] = boot(nova)
    source = booted["service_host"]
    nova("update_instance_info", host=source, uuids=[instance])

    # rebuild_instance(evacuate=True): the source ignored, no alternates.
    [[moved]] = nova("select", flavor=SMALL, instance_uuids=[instance],
                     ignore_hosts=[source], destination_cell=CELL,
                     return_alternates=False)["selections"]
    target = moved["service_host"]

    # The rebuild on the destination reports the instance there; the
    # source host is down and never says it left.
    nova("update_instance_info", host=target, uuids=[instance])
    wait_until(lambda: cloud.allocations()[0].expires_at is None,
               "destination confirmed")
    [claim] = cloud.allocations()
    assert (claim.source_node_id, used(cloud, source)) == (None, 0)
    assert used(cloud, target) == 1024


def test_deleted_right_after_its_live_migration_it_holds_no_host(
        nova, cloud):
    instance, source, target = _live_migrated(nova)
    # _post_live_migration's report from the source (its copy names the
    # source); then the instance is deleted (or shelve-offloaded) on the
    # destination before that host's periodic list named it.
    nova("update_instance_info", host=source, uuids=[instance],
         task_state="migrating")
    nova("delete_instance_info", host=target, uuid=instance)
    wait_until(lambda: not cloud.allocations(), "claim released")
    assert (used(cloud, source), used(cloud, target)) == (0, 0)
    assert cloud.manage("allocations", "audit", check=False).returncode == 0


def test_offloaded_after_a_rolled_back_live_migration_it_holds_no_host(
        nova, cloud):
    instance, source, target = _live_migrated(nova)
    # Rolled back (nova casts nothing; the source lists it as before),
    # then shelve-offloaded there: _shelve_offload_instance's cast.
    nova("sync_instance_info", host=source, uuids=[instance])
    nova("delete_instance_info", host=source, uuid=instance)
    wait_until(lambda: not cloud.allocations(), "claim released")
    assert (used(cloud, source), used(cloud, target)) == (0, 0)
    # The unshelve is a new placement, not a re-send answered with the
    # host the migration never reached.
    [[unshelved]] = nova("select", flavor=SMALL, instance_uuids=[instance],
                         destination_cell=CELL,
                         return_alternates=False)["selections"]
    [claim] = cloud.allocations()
    assert claim.source_node_id is None
    assert used(cloud, unshelved["service_host"]) == 1024


def test_resized_right_after_its_live_migration_it_moves_from_where_it_is(
        nova, cloud):
    instance, source, target = _live_migrated(nova)
    nova("update_instance_info", host=source, uuids=[instance],
         task_state="migrating")
    # Live-migrated (its destination's next list is still to come), then
    # resized at once: compute/api.py ignores the host it is on.
    [[resized, *_]] = nova("select", flavor=BIG, instance_uuids=[instance],
                           ignore_hosts=[target])["selections"]
    third = resized["service_host"]
    assert third not in (source, target)
    [claim] = cloud.allocations()
    assert claim.source_node_id == cloud.nodes()[target].id
    assert (used(cloud, source), used(cloud, target), used(cloud, third)
            ) == (0, 1024, 3072)
    # The resize confirmed (from the host it left), nothing is left there.
    nova("update_instance_info", host=third, uuids=[instance])
    nova("delete_instance_info", host=target, uuid=instance)
    wait_until(lambda: used(cloud, target) == 0, "resize source freed")
    assert cloud.manage("allocations", "audit", check=False).returncode == 0


def test_a_live_migrations_last_report_served_late_leaves_a_resize_claimed(
        nova, cloud):
    instance, source, target = _live_migrated(nova)
    # Resized at once, and _post_live_migration's report from the source
    # (its own copy: on the source, still migrating) is served only after
    # the resize's claim: a cast and a call travel on different queues.
    [[resized, *_]] = nova("select", flavor=BIG, instance_uuids=[instance],
                           ignore_hosts=[target])["selections"]
    third = resized["service_host"]
    nova("update_instance_info", host=source, uuids=[instance],
         task_state="migrating")
    wait_until(lambda: served(cloud, "update_instance_info", source) == 2,
               "the source's second report served")
    # It pulled the resize back onto the source: (3072, 1024, 0).
    assert (used(cloud, source), used(cloud, target), used(cloud, third)
            ) == (0, 1024, 3072)
    assert cloud.manage("allocations", "audit", check=False).returncode == 0


def test_resized_again_before_its_confirm_was_served_it_moves_from_where_it_is(
        nova, cloud):
    [instance], [[booted, *_]] = boot(nova)
    source = booted["service_host"]
    nova("update_instance_info", host=source, uuids=[instance])
    [[resized, *_]] = nova("select", flavor=BIG, instance_uuids=[instance],
                           ignore_hosts=[source])["selections"]
    target = resized["service_host"]
    nova("update_instance_info", host=target, uuids=[instance],
         vm_state="resized")                        # finish_resize
    wait_until(lambda: cloud.allocations()[0].expires_at is None,
               "destination confirmed")
    # Confirmed: confirm_resize saves the instance active on the target,
    # then the source casts delete_instance_info. The user resizes again
    # at once (compute/api.py ignores the host it is on), and that call
    # is served before the cast.
    [[again, *_]] = nova("select", flavor=SMALL, instance_uuids=[instance],
                         ignore_hosts=[target])["selections"]
    nova("delete_instance_info", host=source, uuid=instance)
    wait_until(lambda: served(cloud, "delete_instance_info", source) == 1,
               "the confirm's cast served")
    # The new move's source is where the instance runs until its confirm:
    # it kept the first source, and the late cast left the target
    # uncharged.
    [claim] = cloud.allocations()
    assert claim.source_node_id == cloud.nodes()[target].id
    used_mb = {h: used(cloud, h) for h in ("c1", "c2", "c3")}
    assert used_mb[target] == 3072 and used_mb[again["service_host"]] == 1024
    assert sum(used_mb.values()) == 3072 + 1024
    assert cloud.manage("allocations", "audit", check=False).returncode == 0


def test_resized_in_place_right_after_its_live_migration_it_frees_the_source(
        nova, cloud):
    instance, source, target = _live_migrated(nova)
    nova("update_instance_info", host=source, uuids=[instance],
         task_state="migrating")
    # Live-migrated (its destination's next list is still to come), then
    # resized where it is (allow_resize_to_same_host: compute/api.py
    # ignores no host; the user named the host it is on).
    [[resized, *_]] = nova("select", flavor=BIG, instance_uuids=[instance],
                           requested_destination={"host": target}
                           )["selections"]
    assert resized["service_host"] == target
    [claim] = cloud.allocations()
    assert claim.source_node_id == cloud.nodes()[target].id
    assert (used(cloud, source), used(cloud, target)) == (0, 1024 + 3072)
    # finish_resize reports it, the confirm (from the host it resized on)
    # gives the old size back.
    nova("update_instance_info", host=target, uuids=[instance])
    nova("delete_instance_info", host=target, uuid=instance)
    wait_until(lambda: used(cloud, target) == 3072, "resize source freed")
    assert used(cloud, source) == 0
    assert cloud.manage("allocations", "audit", check=False).returncode == 0


@pytest.mark.parametrize("vm_state, sizes", [
    ("resized", (1024, 3072)),      # finish_resize: the resize goes on
    ("active", (0, 1024)),          # the resize failed; forced there later
])
def test_a_resize_that_expired_comes_back_only_when_reported_resized(
        nova, cloud, vm_state, sizes):
    [instance], [[booted, *_]] = boot(nova)
    source = booted["service_host"]
    nova("update_instance_info", host=source, uuids=[instance])
    target = nova("select", flavor=BIG, instance_uuids=[instance],
                  ignore_hosts=[source])["selections"][0][0]["service_host"]
    a = models.allocations
    with cloud.engine.begin() as conn:          # the disk copy outlived
        conn.execute(a.update().values(         # the claim TTL
            expires_at=datetime.datetime(2000, 1, 1)))
    assert lifecycle.expire(cloud.engine) == 1
    # Nova's own Instance primitive, as finish_resize (vm_state resized)
    # or a forced evacuation or live migration (active) reports it.
    nova("update_instance_info", host=target, uuids=[instance],
         vm_state=vm_state)
    wait_until(lambda: (used(cloud, source), used(cloud, target)) == sizes,
               f"reported {vm_state} on the expired destination")
    assert cloud.manage("allocations", "audit", check=False).returncode == 0


def test_a_cold_migration_seen_on_its_destination_keeps_the_source(
        nova, cloud):
    # migrate.py asks for alternates: finish_resize reports the instance
    # on the destination, and the source waits for the confirm.
    [instance], [[booted, *_]] = boot(nova)
    source = booted["service_host"]
    target = nova("select", flavor=SMALL, instance_uuids=[instance],
                  ignore_hosts=[source])["selections"][0][0]["service_host"]
    nova("update_instance_info", host=target, uuids=[instance])
    wait_until(lambda: cloud.allocations()[0].expires_at is None,
               "destination confirmed")
    assert used(cloud, source) == 1024
    assert cloud.allocations()[0].source_node_id is not None


def test_one_instance_of_a_multi_create_boot_migrates_alone(nova, cloud):
    instances, selections = boot(nova, count=2)
    source = selections[0][0]["service_host"]

    # The stored spec still says the boot made two instances.
    answer = nova("select", flavor=SMALL, instance_uuids=instances[:1],
                  num_instances=2, ignore_hosts=[source])
    [[moved, *_]] = answer["selections"]
    assert moved["service_host"] != source
    assert used(cloud, moved["service_host"]) >= 1024
    assert sorted(a.consumer_uuid for a in cloud.allocations()) == sorted(
        instances)


def test_a_rebuild_with_a_new_image_checks_the_instances_own_host(
        nova, cloud):
    # One instance placed here, and one this scheduler never saw (booted
    # before it ran): nova names the host by forcing it either way.
    [placed], [[booted, *_]] = boot(nova)
    for instance, host in [(placed, booted["service_host"]),
                           (str(uuid.uuid4()), "c3")]:
        [[checked]] = nova("select", flavor=SMALL, instance_uuids=[instance],
                           rebuild_on=host, cell_uuid=CELL,
                           return_alternates=False)["selections"]
        assert checked["service_host"] == host
    assert [a.consumer_uuid for a in cloud.allocations()] == [placed]
    assert used(cloud, booted["service_host"]) == 1024


def test_resize_revert_gives_the_destination_back(nova, cloud):
    [instance], [[booted, *_]] = boot(nova)
    source = booted["service_host"]

    resized = nova("select", flavor=BIG, instance_uuids=[instance],
                   ignore_hosts=[source])["selections"][0][0]
    target = resized["service_host"]
    assert used(cloud, target) == 3072 and used(cloud, source) == 1024

    # Revert: the destination compute says the instance left it ...
    nova("delete_instance_info", host=target, uuid=instance)
    wait_until(lambda: used(cloud, target) == 0, "destination freed")
    [claim] = cloud.allocations()
    assert (claim.memory_mb, used(cloud, source)) == (1024, 1024)
    # ... and the source reports it back (a deleted instance would not,
    # and its claim would expire).
    assert claim.expires_at is not None
    nova("update_instance_info", host=source, uuids=[instance])
    wait_until(lambda: cloud.allocations()[0].expires_at is None,
               "source confirmed")


def test_a_same_cell_resize_revert_is_seen_in_the_sources_list(nova, cloud):
    [instance], [[booted, *_]] = boot(nova)
    source = booted["service_host"]
    target = nova("select", flavor=BIG, instance_uuids=[instance],
                  ignore_hosts=[source])["selections"][0][0]["service_host"]

    # finish_resize on the destination reports the instance there ...
    nova("update_instance_info", host=target, uuids=[instance])
    wait_until(lambda: cloud.allocations()[0].expires_at is None,
               "destination confirmed")
    assert used(cloud, source) == 1024
    # ... and after a revert the source's periodic list names it again.
    nova("sync_instance_info", host=source, uuids=[instance])
    wait_until(lambda: used(cloud, target) == 0, "move reverted")
    [claim] = cloud.allocations()
    assert (claim.memory_mb, used(cloud, source)) == (1024, 1024)


def test_deleted_after_a_same_host_resize_revert_its_claim_expires(
        nova, cloud):
    [instance], [[booted, *_]] = boot(nova)
    host = booted["service_host"]
    nova("update_instance_info", host=host, uuids=[instance])
    [[resized, *_]] = nova("select", flavor=BIG, instance_uuids=[instance],
                           requested_destination={"host": host}
                           )["selections"]
    assert resized["service_host"] == host
    # finish_resize reports it; the revert casts nothing and the host's
    # list names it throughout; then the instance is deleted there.
    nova("update_instance_info", host=host, uuids=[instance])
    nova("sync_instance_info", host=host, uuids=[instance])
    wait_until(lambda: cloud.allocations()[0].expires_at is None,
               "destination confirmed")
    nova("delete_instance_info", host=host, uuid=instance)
    wait_until(lambda: cloud.allocations()[0].source_node_id is None,
               "move confirmed")
    # No host will list it again: what is left must expire, not stay.
    assert cloud.allocations()[0].expires_at is not None


def test_casts_confirm_and_release_claims_without_errors(nova, cloud):
    [instance], [[booted, *_]] = boot(nova)
    host = booted["service_host"]
    assert cloud.allocations()[0].expires_at is not None

    nova("update_aggregates", hosts=[host])
    nova("delete_aggregate")
    nova("sync_instance_info", host="c-unknown", uuids=[instance])
    nova("update_instance_info", host=host, uuids=[instance])
    wait_until(lambda: cloud.allocations()[0].expires_at is None,
               "claim confirmed by update_instance_info")

    nova("delete_instance_info", host="elsewhere", uuid=instance)
    nova("delete_instance_info", host=host, uuid=instance)
    wait_until(lambda: cloud.allocations() == [], "claim released")
    assert used(cloud, host) == 0


def test_a_build_re_tried_on_an_alternate_moves_the_claim_there(
        nova, cloud):
    # Nova's conductor re-tries a failed build on the next alternate by
    # itself; the compute there reports the instance once it is built.
    [instance], [[chosen, alternate, *_]] = boot(nova)
    first, second = chosen["service_host"], alternate["service_host"]

    nova("update_instance_info", host=second, uuids=[instance])
    wait_until(lambda: used(cloud, second) == 1024, "claim moved")
    assert used(cloud, first) == 0
    [claim] = cloud.allocations()
    assert claim.expires_at is None
    assert cloud.manage("allocations", "audit", check=False).returncode == 0


def test_a_resize_re_tried_on_an_alternate_moves_its_destination_there(
        nova, cloud):
    # prep_resize failed on the chosen host: nova's conductor takes the
    # next alternate by itself, and finish_resize there reports the
    # instance. The source stays held until the confirm.
    [instance], [[booted, *_]] = boot(nova)
    source = booted["service_host"]
    [[chosen, alternate]] = nova("select", flavor=BIG,
                                 instance_uuids=[instance],
                                 ignore_hosts=[source])["selections"]
    first, second = chosen["service_host"], alternate["service_host"]

    nova("update_instance_info", host=second, uuids=[instance])
    wait_until(lambda: used(cloud, second) == 3072, "destination moved")
    assert (used(cloud, first), used(cloud, source)) == (0, 1024)
    assert cloud.manage("allocations", "audit", check=False).returncode == 0

    # Resize confirm: the source says the instance left it.
    nova("delete_instance_info", host=source, uuid=instance)
    wait_until(lambda: used(cloud, source) == 0, "source freed")
    [claim] = cloud.allocations()
    assert (claim.memory_mb, claim.source_node_id) == (3072, None)
    assert used(cloud, second) == 3072


def test_sync_instance_info_confirms_what_it_lists(nova, cloud):
    [instance], [[booted, *_]] = boot(nova)
    nova("sync_instance_info", host=booted["service_host"],
         uuids=[instance, str(uuid.uuid4())])
    wait_until(lambda: cloud.allocations()[0].expires_at is None,
               "claim confirmed by sync_instance_info")


def test_the_4_0_legacy_path_as_far_as_nova_allows(nova, cloud):
    # Nova refuses to ask a 4.0 scheduler for Selection objects ...
    answer = nova("select", flavor=SMALL, instance_uuids=[str(uuid.uuid4())],
                  version_cap="4.0")
    assert answer["error"] == (
        "nova.exception.SelectionObjectsWithOldRPCVersionNotSupported")
    # ... but sends the legacy pair when not asked for them.
    instance = str(uuid.uuid4())
    answer = nova("select", flavor=SMALL, instance_uuids=[instance],
                  version_cap="4.0", return_objects=False,
                  return_alternates=False)
    [destination] = answer["destinations"]
    assert destination["host"] in {"c1", "c2", "c3"}
    assert [a.consumer_uuid for a in cloud.allocations()] == [instance]


def test_novas_request_id_is_on_every_server_line_of_its_request(
        nova, make_deployment):
    deployment = make_deployment(DEFAULT__control_exchange=EXCHANGE,
                                 scheduler__topic="scheduler",
                                 nova__cell_uuid=CELL, DEFAULT__debug="true")
    deployment.add_nodes([node("c1")])
    deployment.start_server()
    request_id = nova("request_id")["request_id"]
    boot(nova)
    too_big = {"memory_mb": 8192, "vcpus": 1, "root_gb": 10}
    answer = nova("select", flavor=too_big,
                  instance_uuids=[str(uuid.uuid4())])
    assert answer["error"] == "nova.exception.NoValidHost"
    deployment.stop_servers()

    lines = deployment.server_log().splitlines()
    marked = [i for i, line in enumerate(lines) if request_id in line]
    # The worker's lines from the first with the id to the last; the main
    # process (its own pid) may log its readiness in between.
    pid = lines[marked[0]].split()[2]
    between = [line for line in lines[marked[0]:marked[-1] + 1]
               if line.split()[2:3] == [pid]]
    assert all(f" {request_id} " in line for line in between), between
    assert [line.split(" DEBUG scheduler.rpc.instrument ")[1].split("] ")[1]
            .split(" in ")[0] for line in between
            if " DEBUG scheduler.rpc.instrument " in line] == [
        "select_destinations ok", "select_destinations no_valid_host"]
    assert any(" INFO scheduler.nova.endpoint " in line and
               "Nova request refused" in line for line in between)
