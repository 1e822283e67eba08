"""Replies in the shapes nova 34 deserializes."""
from __future__ import annotations

import pytest

from scheduler.nova import selections

CELL = "8f1b1c52-6c2d-4f0e-9d51-3c1e8f0a7b21"
DEST = {"host": "c1", "nodename": "c1", "uuid": "u1",
        "limits": {"vcpu": 64.0, "memory_mb": 6144.0, "disk_gb": 100.0},
        "allocation": {"compute_node_uuid": "n1"},
        "alternates": [{"host": "c2", "nodename": "c2",
                        "compute_node_uuid": "n2", "limits": {}}]}


def test_selection_objects_one_list_per_instance_chosen_first():
    [[chosen, alternate]] = selections.reply([DEST], True, lambda h: CELL)

    assert chosen["nova_object.name"] == "Selection"
    assert chosen["nova_object.version"] == "1.1"
    data = chosen["nova_object.data"]
    assert (data["service_host"], data["nodename"], data["compute_node_uuid"],
            data["cell_uuid"]) == ("c1", "c1", "n1", CELL)
    limits = data["limits"]["nova_object.data"]
    assert limits == {"vcpu": 64, "memory_mb": 6144, "disk_gb": 100,
                      "numa_topology": None}
    assert data["allocation_request"] is None
    assert alternate["nova_object.data"]["compute_node_uuid"] == "n2"
    assert alternate["nova_object.data"]["limits"] is None


def test_without_objects_the_old_dicts():
    assert selections.reply([DEST], False, lambda h: None) == [
        {"host": "c1", "nodename": "c1", "limits": DEST["limits"]}]


def test_each_host_gets_its_own_cell():
    cells = {"c1": CELL, "c2": "5c0d8a57-2f3e-4a59-8f3a-0d3b8f7e6c10"}
    [[chosen, alternate]] = selections.reply([DEST], True, cells.get)
    assert chosen["nova_object.data"]["cell_uuid"] == CELL
    assert alternate["nova_object.data"]["cell_uuid"] == cells["c2"]


def test_objects_need_a_cell():
    with pytest.raises(ValueError, match="host c2 has no cell"):
        selections.reply([DEST], True, {"c1": CELL}.get)
