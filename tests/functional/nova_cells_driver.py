"""Fill nova's own databases with nova's own objects: run with the python
of the nova==34.0.0 virtualenv (tools/nova-venv), never the project's.

    nova_cells_driver.py NOVA_CONFIG_FILE

Reads one JSON request per line on stdin, writes one JSON answer per line
on stdout (``{"ready": true}`` first). Every request is ``{"op": ...}``;
every answer is a JSON object, or ``{"error": "module.Class", "message"}``
when nova raised. Rows are written by ``nova.objects`` (``create``,
``save``, ``destroy``) in the cell they belong to (``target_cell``), so
their shape is nova's, not ours.

``open`` must come first: ``{"op": "open", "api_database_connection":
URL}`` points the process at a deployment's API database (a process
serves one deployment at a time; ``open`` again switches; ``close`` lets
go of its connections). Cells are named by ``cell`` (their mapping's
name) and found in that API database.

Ops (and their answers):

- ``update_cell {cell, database_connection?, disabled?, transport_url?}``
  -> ``{"uuid"}``
- ``create_cell {name, database_connection, transport_url?, uuid?}`` ->
  ``{"uuid"}``: a cell mapping, as ``nova-manage cell_v2 create_cell``.
- ``add_compute {cell, host, nodes: [{hypervisor_hostname, uuid?, vcpus,
  memory_mb, local_gb, vcpus_used?, memory_mb_used?, local_gb_used?,
  free_ram_mb?, free_disk_gb?, running_vms?, cpu_allocation_ratio?, ...,
  hypervisor_type?, supported_instances?, cpu_info?, stats?}], map?}`` ->
  ``{"service_id", "nodes": [{"id", "uuid", "hypervisor_hostname"}]}``: a
  ``nova-compute`` Service, its ComputeNodes and (``map``, default true)
  its HostMapping, as ``nova-manage cell_v2 discover_hosts`` makes it.
- ``add_node {cell, host, node: {...}}`` -> ``{"id", "uuid", ...}``
- ``heartbeat {cell, host, seconds_ago?}`` -> ``{"last_seen_up"}``: what
  nova's DB servicegroup driver does (``report_count += 1; save()``);
  ``seconds_ago`` writes that ``last_seen_up`` instead of now.
- ``update_service {cell, host, disabled?, disabled_reason?,
  forced_down?}`` -> ``{"id"}``
- ``update_node {cell, uuid, <ComputeNode fields>}`` -> ``{"updated_at"}``:
  a resource tracker's ``ComputeNode.save()``.
- ``delete_node {cell, uuid}``; ``delete_service {cell, host}`` (as
  nova-api does: out of its aggregates, HostMapping and Service destroyed,
  which soft-deletes its nodes).
- ``add_instance {cell, uuid?, project_id?, user_id?, flavor: {vcpus,
  memory_mb, root_gb, ephemeral_gb?, swap?, id?, name?}, host?, node?,
  vm_state?, task_state?, availability_zone?}`` -> ``{"uuid", "id"}``; an
  InstanceMapping is made in the API database.
- ``update_instance {cell, uuid, host?, node?, vm_state?, task_state?}``;
  ``delete_instance {cell, uuid}`` (``Instance.destroy()``).
- ``add_migration {cell, instance_uuid, source_compute, dest_compute,
  source_node, dest_node, status?, migration_type?, dest_compute_id?}``
  -> ``{"id", "uuid"}`` (the destination node must be in the same cell,
  or ``dest_compute_id`` given);
  ``update_migration {cell, uuid, status}``.
- ``add_aggregate {name, availability_zone?, metadata?, hosts?}`` ->
  ``{"id", "uuid"}``; ``aggregate_add_host`` / ``aggregate_remove_host``
  ``{id, host}``; ``delete_aggregate {id}``.
- ``add_server_group {policy, rules?, members?, name?, project_id?,
  user_id?, uuid?}`` -> ``{"id", "uuid"}``; ``server_group_add_members
  {uuid, members}``; ``delete_server_group {uuid}``.
- ``add_flavor {name, memory_mb, vcpus, root_gb, ephemeral_gb?, swap?,
  flavorid?, extra_specs?}`` -> ``{"id", "flavorid"}``: as
  ``openstack flavor create`` makes it (``Flavor.create``).
"""
from __future__ import annotations

import datetime
import json
import sys
import uuid as uuidlib

from oslo_db.sqlalchemy import enginefacade
from oslo_utils import timeutils

from nova import config
from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova import objects
from nova import rpc

PROJECT = "6f70656e737461636b20697320636f6f6c"
USER = "fake-user"

_reset_api = None


def _open(url: str) -> None:
    """Point nova's API database context manager at ``url`` and forget the
    engines of the cells opened before (the same cell uuids come back in
    the next deployment, with other databases)."""
    _close()
    factory = enginefacade._TransactionFactory()
    factory.configure(connection=url)
    _reset_api = api_db_api.context_manager.patch_factory(factory)


def _close() -> None:
    """Let go of the open deployment's connections (a server may be
    about to drop its databases)."""
    global _reset_api
    for db_connection, _ in nova_context.CELL_CACHE.values():
        db_connection.dispose_pool()
    nova_context.CELL_CACHE.clear()
    nova_context.CELLS.clear()
    if _reset_api is not None:
        api_db_api.context_manager.dispose_pool()
        _reset_api()
        _reset_api = None


def _cell(ctxt, name: str) -> objects.CellMapping:
    for mapping in objects.CellMappingList.get_all(ctxt):
        if mapping.name == name:
            return mapping
    raise LookupError(f"no cell named {name!r}")


def _iso(value) -> str | None:
    return None if value is None else value.isoformat()


#: ComputeNode fields a request may set, beside the ones given defaults.
_NODE_FIELDS = (
    "vcpus", "memory_mb", "local_gb", "vcpus_used", "memory_mb_used",
    "local_gb_used", "free_ram_mb", "free_disk_gb", "current_workload",
    "running_vms", "hypervisor_type", "hypervisor_version", "cpu_info",
    "disk_available_least", "cpu_allocation_ratio", "ram_allocation_ratio",
    "disk_allocation_ratio", "host_ip", "stats")


def _node_values(node: dict) -> dict:
    """ComputeNode fields from a request; ``supported_instances`` is a list
    of [arch, hv_type, vm_mode], as nova's virt drivers report it."""
    values = {k: node[k] for k in _NODE_FIELDS if k in node}
    if "cpu_info" in values and not isinstance(values["cpu_info"], str):
        values["cpu_info"] = json.dumps(values["cpu_info"])
    if "stats" in values:
        values["stats"] = {k: str(v) for k, v in values["stats"].items()}
    if "supported_instances" in node:
        values["supported_hv_specs"] = [
            objects.HVSpec.from_list(spec)
            for spec in node["supported_instances"]]
    return values


def _add_node(ctxt, service: objects.Service, node: dict) -> dict:
    """A ComputeNode as a compute's resource tracker first reports it:
    usage zero and free = total unless the request says otherwise."""
    values = {
        "vcpus_used": 0, "memory_mb_used": 0, "local_gb_used": 0,
        "free_ram_mb": node["memory_mb"], "free_disk_gb": node["local_gb"],
        "current_workload": 0, "running_vms": 0,
        "hypervisor_type": "fake", "hypervisor_version": 1000,
        "cpu_info": "{}", "disk_available_least": node["local_gb"],
        "cpu_allocation_ratio": 16.0, "ram_allocation_ratio": 1.5,
        "disk_allocation_ratio": 1.0, "host_ip": "127.0.0.1", "stats": {},
        "supported_hv_specs": [objects.HVSpec.from_list(
            ["x86_64", "fake", "hvm"])],
    }
    values.update(_node_values(node))
    compute = objects.ComputeNode(
        ctxt, uuid=node.get("uuid") or str(uuidlib.uuid4()),
        host=service.host, service_id=service.id,
        hypervisor_hostname=node.get("hypervisor_hostname", service.host),
        pci_device_pools=objects.PciDevicePoolList(objects=[]),
        numa_topology=None, metrics="[]", mapped=0, **values)
    compute.create()
    return {"id": compute.id, "uuid": compute.uuid,
            "hypervisor_hostname": compute.hypervisor_hostname}


def _service(cctxt, host: str) -> objects.Service:
    return objects.Service.get_by_compute_host(cctxt, host)


def _node(cctxt, uuid: str) -> objects.ComputeNode:
    return objects.ComputeNode.get_by_uuid(cctxt, uuid)


def _flavor(f: dict) -> objects.Flavor:
    return objects.Flavor(
        id=f.get("id", 1), flavorid=str(f.get("flavorid", f.get("id", 1))),
        name=f.get("name", "m1.test"), memory_mb=f["memory_mb"],
        vcpus=f["vcpus"], root_gb=f["root_gb"],
        ephemeral_gb=f.get("ephemeral_gb", 0), swap=f.get("swap", 0),
        extra_specs=f.get("extra_specs", {}), rxtx_factor=1.0,
        vcpu_weight=0, disabled=False, is_public=True, description=None)


def _compute_id(cctxt, host: str | None, node: str | None) -> int | None:
    """The id of ``host``'s node ``node``, which nova 34 keeps beside the
    node's name in an instance; None when there is no such node (yet)."""
    if not host or not node:
        return None
    try:
        return objects.ComputeNode.get_by_host_and_nodename(
            cctxt, host, node).id
    except Exception:  # noqa: BLE001 - ComputeHostNotFound: none (yet)
        return None


_INSTANCE_CHANGES = ("host", "node", "vm_state", "task_state",
                     "availability_zone")


def _cell_op(ctxt, op: str, req: dict) -> dict | None:
    """Ops that write one cell's database (and maybe the API database)."""
    mapping = _cell(ctxt, req["cell"])
    with nova_context.target_cell(ctxt, mapping) as cctxt:
        if op == "add_compute":
            service = objects.Service(cctxt, host=req["host"],
                                      binary="nova-compute", topic="compute",
                                      report_count=0, disabled=False)
            service.create()
            nodes = [_add_node(cctxt, service, n) for n in req["nodes"]]
            if req.get("map", True):
                # What discover_hosts does: a HostMapping, then each
                # node marked mapped.
                objects.HostMapping(ctxt, host=req["host"],
                                    cell_mapping=mapping).create()
                for n in nodes:
                    compute = _node(cctxt, n["uuid"])
                    compute.mapped = 1
                    compute.save()
            return {"service_id": service.id, "nodes": nodes}
        if op == "add_node":
            return _add_node(cctxt, _service(cctxt, req["host"]), req["node"])
        if op == "heartbeat":
            service = _service(cctxt, req["host"])
            service.report_count += 1
            if req.get("seconds_ago") is not None:
                service.last_seen_up = timeutils.utcnow() - datetime.timedelta(
                    seconds=req["seconds_ago"])
            service.save()
            return {"last_seen_up": _iso(_service(cctxt,
                                                  req["host"]).last_seen_up)}
        if op == "update_service":
            service = _service(cctxt, req["host"])
            for field in ("disabled", "disabled_reason", "forced_down"):
                if field in req:
                    setattr(service, field, req[field])
            service.save()
            return {"id": service.id}
        if op == "update_node":
            compute = _node(cctxt, req["uuid"])
            for field, value in _node_values(req).items():
                setattr(compute, field, value)
            compute.save()
            return {"updated_at": _iso(_node(cctxt, req["uuid"]).updated_at)}
        if op == "delete_node":
            _node(cctxt, req["uuid"]).destroy()
            return {}
        if op == "delete_service":
            # nova-api's HostAPI._service_delete: out of its aggregates,
            # its host mapping gone, then the service (and its nodes).
            host = req["host"]
            for agg in objects.AggregateList.get_by_host(ctxt, host):
                agg.delete_host(host)
            try:
                objects.HostMapping.get_by_host(ctxt, host).destroy()
            except Exception:  # noqa: BLE001 - an unmapped host has none
                pass
            _service(cctxt, host).destroy()
            return {}
        if op == "add_instance":
            flavor = _flavor(req["flavor"])
            instance = objects.Instance(
                cctxt, uuid=req.get("uuid") or str(uuidlib.uuid4()),
                project_id=req.get("project_id", PROJECT),
                user_id=req.get("user_id", USER),
                flavor=flavor, old_flavor=None, new_flavor=None,
                instance_type_id=flavor.id, vcpus=flavor.vcpus,
                memory_mb=flavor.memory_mb, root_gb=flavor.root_gb,
                ephemeral_gb=flavor.ephemeral_gb,
                vm_state=req.get("vm_state", "active"),
                task_state=req.get("task_state"),
                power_state=1 if req.get("vm_state", "active") == "active"
                else 0,
                **{k: req[k] for k in ("host", "node", "availability_zone")
                   if k in req})
            if req.get("node"):
                instance.compute_id = _compute_id(cctxt, req.get("host"),
                                                  req["node"])
            instance.create()
            objects.InstanceMapping(
                ctxt, instance_uuid=instance.uuid, cell_mapping=mapping,
                project_id=instance.project_id,
                user_id=instance.user_id, queued_for_delete=False).create()
            return {"uuid": instance.uuid, "id": instance.id}
        if op == "update_instance":
            instance = objects.Instance.get_by_uuid(cctxt, req["uuid"])
            for field in _INSTANCE_CHANGES:
                if field in req:
                    setattr(instance, field, req[field])
            if "node" in req:
                # Instance.save() refuses a node changed without it.
                instance.compute_id = _compute_id(
                    cctxt, instance.host, req["node"])
            instance.save()
            return {"uuid": instance.uuid}
        if op == "delete_instance":
            objects.Instance.get_by_uuid(cctxt, req["uuid"]).destroy()
            return {}
        if op == "add_migration":
            instance = objects.Instance.get_by_uuid(cctxt,
                                                    req["instance_uuid"])
            migration = objects.Migration(
                cctxt, uuid=req.get("uuid") or str(uuidlib.uuid4()),
                instance_uuid=instance.uuid,
                source_compute=req["source_compute"],
                dest_compute=req["dest_compute"],
                source_node=req["source_node"], dest_node=req["dest_node"],
                # nova 34 refuses a dest_node without its id.
                dest_compute_id=req.get("dest_compute_id") or _compute_id(
                    cctxt, req["dest_compute"], req["dest_node"]),
                dest_host=req.get("dest_host"),
                status=req.get("status", "pre-migrating"),
                migration_type=req.get("migration_type", "migration"),
                old_instance_type_id=instance.instance_type_id,
                new_instance_type_id=instance.instance_type_id,
                project_id=instance.project_id, user_id=instance.user_id,
                cross_cell_move=False, hidden=False)
            migration.create()
            return {"id": migration.id, "uuid": migration.uuid}
        if op == "update_migration":
            migration = objects.Migration.get_by_uuid(cctxt, req["uuid"])
            migration.status = req["status"]
            migration.save()
            return {"uuid": migration.uuid}
    return None


def _api_op(ctxt, op: str, req: dict) -> dict | None:
    """Ops on the API database alone."""
    if op == "update_cell":
        mapping = _cell(ctxt, req["cell"])
        if "database_connection" in req:
            mapping.database_connection = req["database_connection"]
        if "disabled" in req:
            mapping.disabled = req["disabled"]
        if "transport_url" in req:
            mapping.transport_url = req["transport_url"]
        mapping.save()
        nova_context.CELL_CACHE.pop(mapping.uuid, None)
        return {"uuid": mapping.uuid}
    if op == "create_cell":
        mapping = objects.CellMapping(
            ctxt, uuid=req.get("uuid") or str(uuidlib.uuid4()),
            name=req["name"], database_connection=req["database_connection"],
            transport_url=req.get("transport_url", "fake://"),
            disabled=req.get("disabled", False))
        mapping.create()
        return {"uuid": mapping.uuid}
    if op == "add_aggregate":
        metadata = dict(req.get("metadata", {}))
        if req.get("availability_zone"):
            metadata["availability_zone"] = req["availability_zone"]
        agg = objects.Aggregate(ctxt, name=req["name"], metadata=metadata)
        agg.create()
        for host in req.get("hosts", []):
            agg.add_host(host)
        return {"id": agg.id, "uuid": agg.uuid}
    if op in ("aggregate_add_host", "aggregate_remove_host"):
        agg = objects.Aggregate.get_by_id(ctxt, req["id"])
        if op == "aggregate_add_host":
            agg.add_host(req["host"])
        else:
            agg.delete_host(req["host"])
        return {"id": agg.id}
    if op == "delete_aggregate":
        objects.Aggregate.get_by_id(ctxt, req["id"]).destroy()
        return {}
    if op == "add_server_group":
        group = objects.InstanceGroup(
            ctxt, uuid=req.get("uuid") or str(uuidlib.uuid4()),
            name=req.get("name", "group"), policy=req["policy"],
            rules=req.get("rules", {}),
            project_id=req.get("project_id", PROJECT),
            user_id=req.get("user_id", USER))
        group.create()
        if req.get("members"):
            objects.InstanceGroup.add_members(ctxt, group.uuid,
                                              req["members"])
        return {"id": group.id, "uuid": group.uuid}
    if op == "server_group_add_members":
        objects.InstanceGroup.add_members(ctxt, req["uuid"], req["members"])
        return {"uuid": req["uuid"]}
    if op == "delete_server_group":
        objects.InstanceGroup.get_by_uuid(ctxt, req["uuid"]).destroy()
        return {}
    if op == "add_flavor":
        flavor = objects.Flavor(
            ctxt, name=req["name"], memory_mb=req["memory_mb"],
            vcpus=req["vcpus"], root_gb=req["root_gb"],
            ephemeral_gb=req.get("ephemeral_gb", 0),
            swap=req.get("swap", 0),
            flavorid=req.get("flavorid") or str(uuidlib.uuid4()),
            extra_specs=req.get("extra_specs", {}), rxtx_factor=1.0,
            vcpu_weight=0, disabled=False, is_public=True)
        flavor.create()
        return {"id": flavor.id, "flavorid": flavor.flavorid}
    return None


def handle(ctxt, req: dict) -> dict:
    op = req["op"]
    if op == "open":
        _open(req["api_database_connection"])
        return {"opened": True}
    if op == "close":
        _close()
        return {"closed": True}
    answer = _api_op(ctxt, op, req)
    if answer is None and "cell" in req:
        answer = _cell_op(ctxt, op, req)
    if answer is None:
        raise ValueError(f"unknown op {op!r}")
    return answer


def main() -> None:
    objects.register_all()
    config.parse_args(["nova_cells_driver", "--config-file", sys.argv[1]],
                      configure_db=False)
    # Service.save() and Aggregate.create() notify; the config sends
    # notifications nowhere (driver noop), but the notifier must exist.
    rpc.init(config.CONF)
    ctxt = nova_context.get_admin_context()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            answer = handle(ctxt, req)
        except Exception as e:  # noqa: BLE001 - the test reads the class
            answer = {"error": f"{type(e).__module__}.{type(e).__name__}",
                      "message": str(e)}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
