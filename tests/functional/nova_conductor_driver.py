"""Boot and delete servers through nova's own conductor, as nova-api
does, without nova-api: run with the python of the nova==34.0.0
virtualenv (tools/nova-venv), never the project's.

    nova_conductor_driver.py NOVA_CONFIG_FILE

The config is a nova service's (``[api_database]``, ``[database]`` of the
cell, ``transport_url``, ``control_exchange``). Reads one JSON request per
line on stdin, writes one JSON answer per line on stdout:

- ``{"op": "flavor", "name", "memory_mb", "vcpus", "root_gb"}``: create
  the flavor in the API database (what ``openstack flavor create`` has
  nova-api do). Answers ``{"id": ...}``.
- ``{"op": "boot", "flavor": NAME, "count": N, "name": ...}``: what
  ``openstack server create --flavor NAME --image IMAGE --nic none --min
  N --max N`` has nova-api do: nova's own ``compute.api.API`` methods
  validate and build the instances' base options, the block device
  mappings, and (``_provision_instances``) the RequestSpec, BuildRequest
  and InstanceMapping in the API database; then
  ``ComputeTaskAPI.schedule_and_build_instances`` casts to the conductor.
  Answers ``{"uuids": [...]}`` at once, as nova-api answers 202.
- ``{"op": "show", "uuid"}``: the instance as nova-api's GET finds it
  (the cell's instance once mapped, else the build request):
  ``{"host", "node", "vm_state", "task_state", "cell"}``, or
  ``{"deleted": true}``.
- ``{"op": "delete", "uuid"}``: nova-api's DELETE, ``compute.api.API
  .delete``: for an instance on an up compute, the ``terminate_instance``
  cast to that compute. Answers ``{}`` at once (nova-api's 204).

Errors answer ``{"error": "module.Class", "message": ...}``.

The one step of nova-api's boot left out is asking glance for the image
(there is no glance): the image is the dict nova's image API would return
for a small public qcow2 image, and nova's own code takes it from there.
"""
from __future__ import annotations

import json
import sys
import traceback

from nova.compute import api as compute_api
from nova import config
from nova import context as nova_context
from nova import exception
from nova import objects

#: The image, as nova.image.glance translates glance's answer: what
#: ``_get_image`` would have returned for a cirros upload.
IMAGE_ID = "155d900f-4e14-4e4c-a73d-069cbf4541e6"
IMAGE = {
    "id": IMAGE_ID, "name": "cirros", "status": "active",
    "is_public": True, "min_ram": 0, "min_disk": 0, "size": 21430272,
    "disk_format": "qcow2", "container_format": "bare",
    "checksum": None, "owner": "demo", "deleted": False,
    "created_at": None, "updated_at": None, "deleted_at": None,
    "properties": {},
}

#: Who boots: a project member, as nova-api's context for a user's token.
PROJECT = "demo"
USER = "demo"


def _context() -> nova_context.RequestContext:
    return nova_context.RequestContext(
        user_id=USER, project_id=PROJECT, is_admin=True,
        roles=["admin", "member", "reader"])


def boot(api: compute_api.API, ctxt, req: dict) -> dict:
    """compute.api.API._create_instance, step by step, with the image
    given instead of fetched from glance (see the module docstring)."""
    flavor = objects.Flavor.get_by_name(ctxt, req["flavor"])
    count = req.get("count", 1)
    boot_meta = dict(IMAGE)
    # `--nic none`: nova-api's NetworkRequest 'none' (microversion 2.37).
    # Nothing asks neutron for a port: there is no neutron here.
    requested_networks = objects.NetworkRequestList(
        objects=[objects.NetworkRequest(network_id="none")])
    filter_properties = {"scheduler_hints": req.get("hints", {}),
                         "instance_type": flavor}
    min_comp_ver = objects.service.get_minimum_version_all_cells(
        ctxt, ["nova-compute"])
    api._check_auto_disk_config(image=boot_meta, auto_disk_config=None)
    (base_options, max_net_count, key_pair, security_groups,
     network_metadata) = api._validate_and_build_base_options(
        ctxt, flavor, boot_meta, IMAGE_ID, IMAGE_ID, None, None,
        req.get("name", "server"), req.get("name", "server"), None, None,
        None, ["default"], None, None, {}, None, None, requested_networks,
        None, None, req.get("reservation_id") or "r-e2e", count, False,
        min_comp_ver)
    block_device_mapping = api._check_and_transform_bdm(
        ctxt, base_options, flavor, boot_meta, count, count, [], True)
    api._update_ephemeral_encryption_bdms(flavor, boot_meta,
                                          block_device_mapping)
    api._checks_for_create_and_rebuild(
        ctxt, IMAGE_ID, boot_meta, flavor, {}, [],
        block_device_mapping.root_bdm(), min_comp_ver, validate_numa=False)
    instance_group = api._get_requested_instance_group(ctxt,
                                                       filter_properties)
    tags = api._create_tag_list_obj(ctxt, [])
    to_build = api._provision_instances(
        ctxt, flavor, count, count, base_options, boot_meta,
        security_groups, block_device_mapping, instance_group, False,
        filter_properties, key_pair, tags, None, False, network_metadata,
        None, None)
    build_requests, request_specs = [], []
    for spec, build_request, _ in to_build:
        build_requests.append(build_request)
        spec.requested_networks = requested_networks
        request_specs.append(spec)
    api.compute_task_api.schedule_and_build_instances(
        ctxt, build_requests=build_requests, request_spec=request_specs,
        image=boot_meta, admin_password=None, injected_files=[],
        requested_networks=requested_networks,
        block_device_mapping=block_device_mapping, tags=tags)
    return {"uuids": [b.instance_uuid for b in build_requests]}


def show(api: compute_api.API, ctxt, uuid: str) -> dict:
    try:
        instance = api.get(ctxt, uuid)
    except exception.InstanceNotFound:
        return {"deleted": True}
    mapping = objects.InstanceMapping.get_by_instance_uuid(ctxt, uuid)
    return {"host": instance.host, "node": instance.node,
            "vm_state": instance.vm_state,
            "task_state": instance.task_state,
            "cell": (mapping.cell_mapping.uuid if mapping.cell_mapping
                     else None)}


def handle(api: compute_api.API, ctxt, req: dict) -> dict:
    op = req["op"]
    if op == "flavor":
        flavor = objects.Flavor(
            ctxt, name=req["name"], flavorid=req["name"],
            memory_mb=req["memory_mb"], vcpus=req["vcpus"],
            root_gb=req["root_gb"], ephemeral_gb=0, swap=0,
            rxtx_factor=1.0, vcpu_weight=0, disabled=False, is_public=True,
            extra_specs={})
        flavor.create()
        return {"id": flavor.id}
    if op == "boot":
        return boot(api, ctxt, req)
    if op == "show":
        return show(api, ctxt, req["uuid"])
    if op == "delete":
        api.delete(ctxt, api.get(ctxt, req["uuid"]))
        return {}
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    config.parse_args(["nova_conductor_driver", "--config-file",
                       sys.argv[1]])
    objects.register_all()
    api = compute_api.API()
    ctxt = _context()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            answer = handle(api, ctxt, req)
        except Exception as e:
            traceback.print_exc()
            answer = {"error": f"{type(e).__module__}.{type(e).__name__}",
                      "message": str(e)}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
