"""Write stacks into a real Heat database with Heat's own code, and tell
what each of their servers would send nova: run with the python of the
openstack-heat==27.0.1 virtualenv (tools/heat-venv), never the project's.

    heat_driver.py

Reads one JSON request per line on stdin, writes one JSON answer per line
on stdout (``{"ready": true}`` first). Errors are answered as
``{"error": "module.Class", "message": ...}``. Requests are
``{"op": ..., ...}``:

- ``store``: ``database`` (SQLAlchemy URL: a SQLite file,
  ``postgresql+psycopg2://``, ``mysql+pymysql://``), ``template`` (HOT
  text), ``files`` (name -> text: nested templates), ``environment``
  (``parameters``, ``parameter_defaults``, ``resource_registry``),
  ``stack_name``, ``tenant``, ``user``; optional ``password`` (kept
  in Heat's user_creds) and ``args`` (the API's stack-create arguments:
  ``timeout_mins``, ``disable_rollback``...).

  Heat's schema is made first if the database has none (Heat's own
  alembic migrations, as ``heat-manage db_sync``). Then what Heat's engine
  does on a stack-create, up to the moment it boots servers: the template
  and environment parsed by Heat, the stack validated as Heat validates
  a template (values unchecked: checking flavors and images would need
  nova and glance; with no keystone catalog to ask, every service a
  resource type needs is taken to be there), stored with
  ``Stack.store()`` and handed to the convergence engine
  (``Stack.converge_stack``: resource rows, sync points, events). The
  worker's casts go to oslo.messaging's in-memory ``fake://`` transport,
  where nothing takes them.

  Heat's workers then create the resources in dependency order; here
  nothing is created, except nested stacks: each ``OS::Heat::ResourceGroup``
  and template resource (a type naming a file, or mapped to one by the
  ``resource_registry``) has its own ``handle_create`` run, which stores
  the nested stack's template and, in place of the RPC call to an engine,
  creates the nested stack in this process the way the engine does (so
  nested stacks are rows too, ``owner_id`` their parent's). A server or
  server group counts as created once it is reached in that order: it is
  given a physical id (``physical_id``), as nova would give it, in memory
  only (its resource row keeps none), so that Heat resolves what names it
  as it would: ``get_resource`` of it in a later server's hints, or in a
  nested stack's parameters (which Heat stores with the nested stack).

  Answers ``{"stack_id": root id, "stacks": [{"path", "id", "name"}],
  "server_groups": [{"path", "name", "physical_id", "policies",
  "rules"}], "servers": [server, ...]}``, servers ordered by ``(batch,
  path, name)``; a server is ``{"path": [parent resource names from the
  root], "name": resource name, "physical_id", "batch": N, "hints":
  {...}, "scheduler_hints": {...}, "flavor", "image",
  "availability_zone" (or null), "group": name of the
  OS::Nova::ServerGroup resource its ``group`` hint names (or null),
  "group_path": that resource's stack's path (or null)}``. ``path`` is
  ``[]`` at the root; a ResourceGroup's member is named by its index.

  ``hints`` are what ``SchedulerHintsMixin._scheduler_hints`` (Heat's, on
  the server's resource object, with ``stack_scheduler_hints = true``)
  returns for the server's ``scheduler_hints`` property: its own hints plus
  Heat's ``heat_*`` ones, values exactly as Heat gives them (strings, and
  ``heat_path_in_stack`` a list). ``scheduler_hints`` is the property
  alone. In both, a value that is the physical id of a server or server
  group is ``{"resource": name, "path": [...]}``: the test puts the nova
  uuid of that server or group in its place (its ``physical_id``, or its
  own). Other resources are never created: Heat resolves ``get_resource``
  of one (a ResourceGroup too) to its name; ``get_attr`` of any resource
  is null (a ResourceGroup's ``refs`` too).

  ``batch`` is the resource's dependency depth in the whole stack with its
  nested stacks expanded (Heat's own dependency graphs, per stack): a
  resource with no dependency is batch 0 and others one more than the
  latest of what they wait for; a nested stack's resources start with
  their parent resource's batch, and what depends on the parent waits for
  the whole nested stack. Servers of one batch may be created at once by
  Heat's convergence engine.
- ``delete``: ``database``, ``stack_id``: what Heat's convergence delete
  leaves once it has finished, nested stacks (deepest first) then the
  root: the stack's state DELETE_COMPLETE, then ``Stack.purge_db``
  (resource rows and sync points gone, the root's user credentials
  deleted, the stack row soft-deleted: ``deleted_at`` set).
  Answers ``{"deleted": [stack ids]}``.
"""
from __future__ import annotations

import copy
import json
import sys
from typing import Any
import uuid

from oslo_config import cfg

from heat.common import config as heat_config  # noqa: F401 - Heat's options
from heat.common import context as heat_context
from heat.common import messaging as heat_messaging
from heat.common import template_format
from heat.db import api as db_api
from heat.db import migration as db_migration
from heat.engine import api as engine_api
from heat.engine import environment
from heat.engine import resource
from heat.engine import resources
from heat.engine import scheduler
from heat.engine import service
from heat.engine import stack as parser
from heat.engine import stk_defn
from heat.engine import template as templatem
from heat.engine.resources.openstack.nova import server as nova_server
from heat.engine.resources.openstack.nova import server_group
from heat.engine.resources import stack_resource
from heat.objects import stack as stack_object
from heat.rpc import api as rpc_api

#: Every database this process has written to: its oslo.db transaction
#: factory, started on first use. Heat's database API goes through one
#: global transaction context; each request points it at its database.
_DATABASES: dict[str, Any] = {}


def _use_database(url: str) -> None:
    """Point Heat's database API at ``url``; make Heat's schema there on
    first use if it has none."""
    manager = _DATABASES.get(url)
    first = manager is None
    if first:
        manager = db_api.context_manager.make_new_manager()
        manager.configure(connection=url)
        _DATABASES[url] = manager
    db_api.context_manager.patch_factory(manager)
    # Heat decides from this option whether to cut long texts to MySQL's
    # TEXT size; it caches the answer.
    cfg.CONF.set_override("connection", url, group="database")
    db_api._is_mysql_cache = None
    if first:
        # What ``heat-manage db_sync`` runs: Heat's alembic migrations to
        # head. On a schema already at head it changes nothing.
        db_migration.db_sync(engine=db_api.get_engine())


class _Synchronously:
    """In place of the engine's ThreadGroupManager: the convergence
    traversal's start runs at once, in this thread."""

    def start(self, stack_id, func, *args, **kwargs):
        return func(*args, **kwargs)


class _Engine:
    """What one ``store`` does; in place of the RPC client of each stack
    resource, it creates nested stacks here (``_create_stack``)."""

    def __init__(self, ctxt) -> None:
        self.ctxt = ctxt
        self.service = service.EngineService("heat-harness",
                                             rpc_api.ENGINE_TOPIC)
        self.service.thread_group_mgr = _Synchronously()
        #: The stack the last ``_create_stack`` made.
        self.created: parser.Stack | None = None
        #: Physical id given to each server and server group reached ->
        #: ``(path, name)``.
        self.ids: dict[str, tuple[list[str], str]] = {}
        self.stacks: list[dict] = []
        self.servers: list[dict] = []
        self.groups: list[dict] = []

    # -- the engine's create_stack, without value validation ----------

    def create(self, stack_name: str, tmpl: templatem.Template,
               args: dict, **kwargs) -> parser.Stack:
        """As ``EngineService.create_stack`` (convergence): the engine's
        own checks, parse, validate, store, converge; validation leaves
        values unchecked (no nova or glance to look flavors and images
        up in)."""
        svc = self.service
        svc._validate_new_stack(self.ctxt, stack_name, tmpl)
        stack = parser.Stack(self.ctxt, stack_name, tmpl,
                             convergence=cfg.CONF.convergence_engine,
                             **engine_api.extract_args(args), **kwargs)
        svc.resource_enforcer.enforce_stack(stack, is_registered_policy=True)
        svc._validate_deferred_auth_context(self.ctxt, stack)
        # Values unchecked, as Heat checks a nested stack's before it
        # exists: a flavor's or an image's would be looked up in nova or
        # glance.
        stack.strict_validate = False
        stack.validate(validate_res_tmpl_only=True)
        stack.strict_validate = True
        stack.store()
        stack.thread_group_mgr = svc.thread_group_mgr
        stack.converge_stack(template=stack.t, action=stack.CREATE)
        return stack

    def _create_stack(self, ctxt, stack_name, template, params, files, args,
                      environment_files=None, files_container=None,
                      owner_id=None, nested_depth=0, user_creds_id=None,
                      stack_user_project_id=None, parent_resource_name=None,
                      template_id=None):
        """EngineClient._create_stack's signature: a nested stack, its
        template stored already by StackResource (``template_id``)."""
        tmpl = templatem.Template.load(ctxt, template_id)
        self.created = self.create(
            stack_name, tmpl, args, owner_id=owner_id,
            nested_depth=nested_depth, user_creds_id=user_creds_id,
            stack_user_project_id=stack_user_project_id,
            parent_resource=parent_resource_name)
        return dict(self.created.identifier())

    # -- the workers' walk ---------------------------------------------

    def walk(self, stack: parser.Stack, path: list[str], start: int) -> int:
        """Visit ``stack``'s resources in Heat's dependency order, its
        first ones at batch ``start``. :returns: the batch after its
        last resource (``start`` for an empty stack)."""
        self.stacks.append({"path": path, "id": stack.id,
                            "name": stack.name})
        graph = stack.dependencies.graph()
        ends: dict[str, int] = {}
        last = start
        # Heat's Dependencies iterate requirements first.
        for rsrc in stack.dependencies:
            batch = max((ends[r.name] for r in graph[rsrc].requires()),
                        default=start)
            if isinstance(rsrc, stack_resource.StackResource):
                ends[rsrc.name] = self._nested(rsrc, path, batch)
            else:
                self._reach(rsrc, path, batch)
                ends[rsrc.name] = batch + 1
            last = max(last, ends[rsrc.name])
        return last

    def _nested(self, rsrc, path: list[str], batch: int) -> int:
        """Create ``rsrc``'s nested stack as its worker would, and walk it."""
        # Resource.create: the resource CREATE_IN_PROGRESS (which gives it
        # its physical name), then its handle_create.
        rsrc.state_set(rsrc.CREATE, rsrc.IN_PROGRESS, "state changed")
        rsrc._rpc_client = self
        self.created = None
        rsrc.handle_create()
        nested = self.created
        if nested is None:
            raise RuntimeError(f"{rsrc.name} ({rsrc.type()}) made no nested "
                               f"stack (a batch_create update policy?)")
        # As StackResource._parse_nested_stack does: the nested stack
        # finds its parent resource in memory instead of in the database.
        nested.set_parent_stack(rsrc.stack)
        rsrc._nested = nested
        return self.walk(nested, path + [rsrc.name], batch)

    def _reach(self, rsrc, path: list[str], batch: int) -> None:
        """Note a server or server group, then take it as created."""
        if isinstance(rsrc, nova_server.Server):
            found, into = self._server(rsrc, path, batch), self.servers
        elif isinstance(rsrc, server_group.ServerGroup):
            props = rsrc.properties
            found, into = {"path": path, "name": rsrc.name,
                           "policies": props[rsrc.POLICIES],
                           "rules": props[rsrc.RULES]}, self.groups
        else:
            return
        # Created: from now on it has a physical id, as nova would give.
        # Set in memory, never in its resource row; Heat resolves what
        # names it (get_resource, here or in a nested stack's parameters)
        # from the stack definition's data of each resource, updated as
        # Heat's engine does once a resource is created.
        found["physical_id"] = rsrc.resource_id = str(uuid.uuid4())
        into.append(found)
        self.ids[rsrc.resource_id] = (path, rsrc.name)
        stk_defn.update_resource_data(rsrc.stack.defn, rsrc.name,
                                      rsrc.node_data())

    def _server(self, rsrc, path: list[str], batch: int) -> dict:
        # Flavor and image as written: the resource's own properties
        # would have nova and glance look them up.
        written = rsrc.t.properties(rsrc.properties_schema, rsrc.context)
        own = rsrc.properties[rsrc.SCHEDULER_HINTS]
        hints = rsrc._scheduler_hints(copy.deepcopy(own))
        named = (own or {}).get("group")
        group = self.ids.get(named) if isinstance(named, str) else None
        return {
            "path": path, "name": rsrc.name, "batch": batch,
            "hints": self._marked(hints),
            "scheduler_hints": self._marked(own or {}),
            "flavor": written[rsrc.FLAVOR], "image": written[rsrc.IMAGE],
            "availability_zone": rsrc.properties[rsrc.AVAILABILITY_ZONE],
            "group": group[1] if group else None,
            "group_path": group[0] if group else None,
        }

    def _marked(self, value):
        """``value`` with each id of a server or group reached replaced by
        ``{"resource": name, "path": [...]}``."""
        if isinstance(value, str) and value in self.ids:
            path, name = self.ids[value]
            return {"resource": name, "path": path}
        if isinstance(value, dict):
            return {k: self._marked(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._marked(v) for v in value]
        return value


def _context(req: dict) -> heat_context.RequestContext:
    # deferred_auth_method = password: Heat keeps the user's password in
    # its user_creds instead of asking keystone for a trust.
    return heat_context.RequestContext(
        username=req.get("user", "demo"),
        password=req.get("password", "secret"),
        user_id=req.get("user", "demo"),
        project_id=req.get("tenant", "demo"),
        project_name=req.get("tenant", "demo"),
        is_admin=False)


def store(req: dict) -> dict:
    _use_database(req["database"])
    ctxt = _context(req)
    files = req.get("files") or {}
    env = copy.deepcopy(req.get("environment") or {})
    # As the API hands them to the engine (EngineService.create_stack).
    tmpl = templatem.Template(template_format.parse(req["template"]),
                              files=files)
    tmpl.env = environment.Environment(env)
    engine = _Engine(ctxt)
    stack = engine.create(req["stack_name"], tmpl, req.get("args") or {})
    engine.walk(stack, [], 0)
    servers = sorted(engine.servers, key=lambda s: (s["batch"], s["path"],
                                                    s["name"]))
    return {"stack_id": stack.id, "stacks": engine.stacks,
            "server_groups": engine.groups, "servers": servers}


def delete(req: dict) -> dict:
    _use_database(req["database"])
    ctxt = heat_context.get_admin_context()
    deleted: list[str] = []

    def finish(stack_id: str) -> None:
        for child in stack_object.Stack.get_all_by_owner_id(ctxt, stack_id):
            finish(child.id)
        stack = parser.Stack.load(ctxt, stack_id=stack_id)
        stack.state_set(stack.DELETE, stack.IN_PROGRESS,
                        "Stack DELETE started")
        stack.mark_complete()
        deleted.append(stack_id)

    finish(req["stack_id"])
    return {"deleted": deleted}


def handle(req: dict) -> dict:
    op = req["op"]
    try:
        if op == "store":
            return store(req)
        if op == "delete":
            return delete(req)
        raise ValueError(f"unknown op {op!r}")
    finally:
        # A test's database may be dropped once it is done: hold no
        # connection to it (nor a session server's connection slots).
        manager = _DATABASES.get(req.get("database"))
        if manager is not None:
            manager.dispose_pool()


def main() -> None:
    cfg.CONF([], project="heat", default_config_files=[],
             default_config_dirs=[])
    cfg.CONF.set_override("deferred_auth_method", "password")
    cfg.CONF.set_override("stack_scheduler_hints", True)
    # Notifications and the workers' casts stay in this process.
    heat_messaging.setup("fake://", optional=True)
    resources.initialise()
    # The convergence engine waits a second after each cast that starts
    # a resource; no worker takes them here. Heat's own tests switch the
    # wait off by this flag.
    scheduler.ENABLE_SLEEP = False
    # There is no keystone to ask for its catalog: every service a
    # resource type needs is taken to be there.
    resource.Resource.is_service_available = classmethod(
        lambda cls, context: (True, None))
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            answer = handle(req)
        except Exception as e:  # noqa: BLE001 - the test reads the class
            answer = {"error": f"{type(e).__module__}.{type(e).__name__}",
                      "message": str(e)}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
