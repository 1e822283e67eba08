"""The nova deployment fixture (tests/fixtures/nova_cloud.py) gives each
test databases of its own with nova's schema, and its driver writes what
nova writes, on each of the three databases."""
from __future__ import annotations

import sqlalchemy as sa

from tests.functional.conftest import every_database


def rows(url: str, sql: str, **params) -> list:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text(sql), params).all()
    finally:
        engine.dispose()


@every_database
def test_a_copy_is_a_deployment_of_its_own(nova_cloud, tmp_path):
    cloud = nova_cloud
    cells = {c.name: c for c in (cloud.cell0, *cloud.cells.values())}

    # The copy's API database maps each cell to the copy's own database,
    # not to the template's it was copied from.
    assert dict(rows(cloud.api_url, "SELECT name, database_connection "
                     "FROM cell_mappings")) == {
        name: cell.url for name, cell in cells.items()}
    assert len({cell.url for cell in cells.values()} | {cloud.api_url}) == 4

    compute = cloud.add_compute("cell1", "compute-1", vcpus=4,
                                memory_mb=4096, local_gb=100,
                                stats={"num_instances": 0})
    node_uuid = compute["nodes"][0]["uuid"]
    instance = cloud.add_instance("cell1", {"vcpus": 1, "memory_mb": 512,
                                            "root_gb": 10},
                                  host="compute-1", node="compute-1")
    cloud.update_node("cell1", node_uuid, vcpus_used=1, memory_mb_used=512,
                      local_gb_used=10, free_disk_gb=90, running_vms=1)
    cloud.add_aggregate("agg1", hosts=("compute-1",),
                        availability_zone="az1")
    group = cloud.add_server_group("anti-affinity", members=(instance,),
                                   rules={"max_server_per_host": 1})
    cloud.update_service("cell1", "compute-1", disabled=True,
                         disabled_reason="maintenance")
    cloud.update_cell("cell2", disabled=True)

    # What nova's objects wrote is in nova's tables, where the reader
    # will look (read here with our own venv's SQLAlchemy and drivers).
    cell1 = cloud.cells["cell1"].url
    assert rows(cell1, "SELECT uuid, host, vcpus_used, free_disk_gb, "
                "running_vms, mapped, deleted FROM compute_nodes") == [
        (node_uuid, "compute-1", 1, 90, 1, 1, 0)]
    assert rows(cell1, "SELECT host, services.binary, disabled, disabled_reason, "
                "forced_down, last_seen_up IS NOT NULL FROM services") == [
        ("compute-1", "nova-compute", True, "maintenance", False, True)]
    assert rows(cell1, "SELECT uuid, host, node, vcpus, memory_mb, "
                "vm_state FROM instances") == [
        (instance, "compute-1", "compute-1", 1, 512, "active")]
    assert rows(cloud.api_url, "SELECT h.host, c.name FROM host_mappings h "
                "JOIN cell_mappings c ON c.id = h.cell_id") == [
        ("compute-1", "cell1")]
    assert rows(cloud.api_url, "SELECT m.key, m.value FROM aggregate_hosts "
                "h JOIN aggregate_metadata m ON m.aggregate_id = "
                "h.aggregate_id") == [("availability_zone", "az1")]
    # InstanceGroup.rules holds strings: nova stores the rule's value as
    # "1", and a reader must make it a number itself.
    assert rows(cloud.api_url, "SELECT g.uuid, p.policy, p.rules, "
                "m.instance_uuid FROM instance_groups g JOIN "
                "instance_group_policy p ON p.group_id = g.id JOIN "
                "instance_group_member m ON m.group_id = g.id") == [
        (group, "anti-affinity", '{"max_server_per_host": "1"}', instance)]
    assert rows(cloud.api_url, "SELECT name FROM cell_mappings "
                "WHERE disabled") == [("cell2",)]
    # Nothing leaked into the other cell.
    assert rows(cloud.cells["cell2"].url,
                "SELECT COUNT(*) FROM compute_nodes") == [(0,)]

    # A third cell is a database of nova's schema, empty, and mapped.
    cell3 = cloud.add_cell("cell3", tmp_path)
    assert rows(cell3.url, "SELECT COUNT(*) FROM compute_nodes") == [(0,)]
    assert rows(cell3.url, "SELECT version_num FROM alembic_version") == \
        rows(cell1, "SELECT version_num FROM alembic_version")
    cloud.add_compute("cell3", "compute-3", vcpus=2, memory_mb=2048,
                      local_gb=20)
    assert rows(cell3.url, "SELECT host FROM services") == [("compute-3",)]
