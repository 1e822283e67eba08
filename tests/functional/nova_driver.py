"""Drive a scheduler with nova's own client: run with the python of the
nova==34.0.0 virtualenv (tools/nova-venv), never the project's.

    nova_driver.py NOVA_CONFIG_FILE

Reads one JSON request per line on stdin, writes one JSON answer per line
on stdout. Requests are ``{"op": ..., ...}``:

- ``select``: build a RequestSpec the way nova's compute API and conductor
  do (``RequestSpec.from_components``, then the move fields a conductor
  task sets) and call ``SchedulerQueryClient.select_destinations``;
  ``version_cap`` caps the RPC version as ``[upgrade_levels] scheduler``
  does. Answers ``{"selections": [[selection, ...], ...]}`` (Selection
  objects as nova deserialized them) or ``{"destinations": [...]}``
  (without return_objects), or ``{"error": "module.Class", "message"}``.
  ``num_instances`` is the stored boot's count (a move of one of its
  instances); ``rebuild_on`` makes it nova's rebuild check on that host
  (cell ``cell_uuid``); ``destination_cell`` keeps a move in that cell,
  as live migration and evacuation do.
- ``update_instance_info``, ``delete_instance_info``,
  ``sync_instance_info``, ``update_aggregates``, ``delete_aggregate``: the
  fanout casts, sent by nova's client as a compute or the API sends them.
- ``request_id``: the request id of the context every call is sent with
  (nova's RequestContext makes one up).
- ``select_concurrently``: ``requests``, a list of ``select`` requests
  (same fields, without ``op``), all sent at once, each from a thread of
  its own with a context of its own (a request id each, as separate
  boots through nova's API), as the conductor's threads send a stack's
  boots (nova 34's conductor runs on native threads, unpatched, as this
  process does). Answers ``{"answers": [...]}``, each as ``select``'s
  (an error as ``{"error", "message"}``), in the order of ``requests``.
- ``time_select``: ``n`` select/answer round trips of a 1-instance boot,
  without claims piling up (each boot is its own instance, released by
  the caller afterwards); answers the seconds of each round trip.
"""
from __future__ import annotations

from concurrent import futures
import json
import sys
import threading
import time

from nova import config
from nova import context as nova_context
from nova import objects
from nova.scheduler.client import query


def _flavor(f: dict) -> objects.Flavor:
    return objects.Flavor(
        id=f.get("id", 1), flavorid=str(f.get("flavorid", "1")),
        name=f.get("name", "m1.test"), memory_mb=f["memory_mb"],
        vcpus=f["vcpus"], root_gb=f["root_gb"],
        ephemeral_gb=f.get("ephemeral_gb", 0), swap=f.get("swap", 0),
        extra_specs=f.get("extra_specs", {}), rxtx_factor=1.0,
        vcpu_weight=0, disabled=False, is_public=True, description=None)


def _group(g: dict | None) -> objects.InstanceGroup | None:
    if not g:
        return None
    return objects.InstanceGroup(
        uuid=g["uuid"], policy=g["policy"], rules=g.get("rules", {}),
        hosts=g.get("hosts", []), members=g.get("members", []),
        name="group", project_id="p", user_id="u")


def _spec(ctxt, req: dict) -> objects.RequestSpec:
    uuids = req["instance_uuids"]
    image = {"id": "155d900f-4e14-4e4c-a73d-069cbf4541e6", "name": "cirros",
             "properties": req.get("image_properties", {}),
             "min_ram": 0, "min_disk": 0, "size": 0,
             "disk_format": "qcow2", "container_format": "bare",
             "status": "active"}
    numa = None
    if req.get("numa"):
        numa = objects.InstanceNUMATopology(cells=[
            objects.InstanceNUMACell(id=0, cpuset=set(), pcpuset={0},
                                     memory=512)])
    spec = objects.RequestSpec.from_components(
        ctxt, uuids[0], image, _flavor(req["flavor"]), numa,
        objects.InstancePCIRequests(requests=[]),
        {"scheduler_hints": req.get("hints", {})}, _group(req.get("group")),
        None, project_id="p", user_id="u")
    # A move sends the stored spec of the boot: num_instances is still the
    # boot's count when one of its instances moves.
    spec.num_instances = req.get("num_instances", len(uuids))
    spec.is_bfv = bool(req.get("is_bfv"))
    if req.get("ignore_hosts") is not None:
        spec.ignore_hosts = req["ignore_hosts"]
    if req.get("required_traits"):
        spec.request_level_params = objects.RequestLevelParams(
            root_required=set(req["required_traits"]))
    if req.get("requested_destination") or req.get("destination_cell"):
        fields = dict(req.get("requested_destination") or {})
        if req.get("destination_cell"):
            # A live migration's or an evacuation's conductor task keeps
            # the instance in its cell, beside a host the operator named
            # (_get_request_spec_for_select_destinations,
            # _restrict_request_spec_to_cell).
            fields["cell"] = objects.CellMapping(uuid=req["destination_cell"])
        spec.requested_destination = objects.Destination(**fields)
    if req.get("rebuild_on"):
        # compute/api.py's rebuild with a new image, then the conductor's
        # _set_requested_destination_cell.
        spec.scheduler_hints["_nova_check_type"] = ["rebuild"]
        spec.force_hosts = [req["rebuild_on"]]
        spec.force_nodes = [req["rebuild_on"]]
        spec.requested_destination = objects.Destination(
            cell=objects.CellMapping(uuid=req["cell_uuid"]))
    return spec


def _selection(s) -> dict:
    return {"service_host": s.service_host, "nodename": s.nodename,
            "compute_node_uuid": s.compute_node_uuid,
            "cell_uuid": s.cell_uuid,
            "limits": (None if s.limits is None else
                       {"vcpu": s.limits.vcpu,
                        "memory_mb": s.limits.memory_mb,
                        "disk_gb": s.limits.disk_gb}),
            "class": type(s).__module__ + "." + type(s).__name__}


def _client(req: dict):
    cap = req.get("version_cap")
    config.CONF.set_override("scheduler", cap, group="upgrade_levels")
    client = query.SchedulerQueryClient()
    config.CONF.clear_override("scheduler", group="upgrade_levels")
    return client


def _instances(ctxt, host: str, uuids: list[str], vm_state: str | None,
               task_state: str | None) -> objects.InstanceList:
    state = {k: v for k, v in (("vm_state", vm_state),
                               ("task_state", task_state)) if v}
    return objects.InstanceList(ctxt, objects=[
        objects.Instance(ctxt, uuid=u, host=host, **state) for u in uuids])


def _select(ctxt, client, req: dict) -> dict:
    spec = _spec(ctxt, req)
    result = client.select_destinations(
        ctxt, spec, req["instance_uuids"],
        return_objects=req.get("return_objects", True),
        return_alternates=req.get("return_alternates", True))
    if req.get("return_objects", True):
        return {"selections": [[_selection(s) for s in per_instance]
                               for per_instance in result]}
    return {"destinations": result}


def _select_concurrently(requests: list[dict]) -> dict:
    # Clients first, one by one: each reads the version cap from the
    # global config as it is made.
    clients = [_client(req) for req in requests]
    contexts = [_context() for _ in requests]
    # No call starts before every thread is ready to make its own.
    start = threading.Barrier(len(requests))

    def one(i: int) -> dict:
        start.wait()
        try:
            return _select(contexts[i], clients[i], requests[i])
        except Exception as e:  # noqa: BLE001 - answered, as select's
            return _error(e)

    with futures.ThreadPoolExecutor(max_workers=len(requests)) as pool:
        return {"answers": list(pool.map(one, range(len(requests))))}


def handle(ctxt, req: dict) -> dict:
    op = req["op"]
    if op == "request_id":
        return {"request_id": ctxt.request_id}
    if op == "select":
        return _select(ctxt, _client(req), req)
    if op == "select_concurrently":
        if not req["requests"]:
            return {"answers": []}
        return _select_concurrently(req["requests"])
    if op == "time_select":
        client = _client(req)
        times = []
        for uuid in req["instance_uuids"]:
            spec = _spec(ctxt, {**req, "instance_uuids": [uuid]})
            start = time.perf_counter()
            client.select_destinations(ctxt, spec, [uuid],
                                       return_objects=True,
                                       return_alternates=True)
            times.append(time.perf_counter() - start)
        return {"seconds": times}
    client = query.SchedulerQueryClient()
    if op == "update_instance_info":
        client.update_instance_info(ctxt, req["host"], _instances(
            ctxt, req.get("instance_host", req["host"]), req["uuids"],
            req.get("vm_state"), req.get("task_state")))
    elif op == "sync_instance_info":
        client.sync_instance_info(ctxt, req["host"], req["uuids"])
    elif op == "delete_instance_info":
        client.delete_instance_info(ctxt, req["host"], req["uuid"])
    elif op == "update_aggregates":
        client.update_aggregates(ctxt, [objects.Aggregate(
            ctxt, id=1, uuid="9e1b7a0c-3c5e-4f6e-8a3b-1a2b3c4d5e6f",
            name="agg1", hosts=req.get("hosts", []),
            metadata={"availability_zone": "az1"})])
    elif op == "delete_aggregate":
        client.delete_aggregate(ctxt, objects.Aggregate(
            ctxt, id=1, uuid="9e1b7a0c-3c5e-4f6e-8a3b-1a2b3c4d5e6f",
            name="agg1", hosts=[], metadata={}))
    else:
        raise ValueError(f"unknown op {op!r}")
    return {"sent": op}


def _error(e: Exception) -> dict:
    # oslo.messaging re-raises a remote exception as a subclass of nova's
    # own (``NoValidHost_Remote``), which the conductor's ``except
    # exception.NoValidHost`` catches: report that class.
    cls = next(c for c in type(e).__mro__
               if not c.__module__.endswith("_Remote"))
    return {"error": f"{cls.__module__}.{cls.__name__}", "message": str(e)}


def _context():
    return nova_context.RequestContext(user_id="u", project_id="p",
                                       is_admin=True)


def main() -> None:
    objects.register_all()
    config.parse_args(["nova_driver", "--config-file", sys.argv[1]],
                      configure_db=False)
    ctxt = _context()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            answer = handle(ctxt, req)
        except Exception as e:  # noqa: BLE001 - the test reads the class
            answer = _error(e)
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
