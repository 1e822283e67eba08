"""Stacks: a whole Heat stack's servers placed at once, atomically.

- ``graph``: the dependency graph and Heat's creation batches (Kahn).
- ``stack``: the ``select_stack`` request, validated, with its canonical
  definition.
- ``ids``: the one reading of a stack id (``canonical_id``, release_stack's
  too) and the consumer uuids derived from it.
- ``definition``: a stored definition read back: its consumers, and what
  changed between two.
- ``planner``: every resource planned on one view of the hosts, relations
  and groups kept, hardest first with repairs.
- ``store``: the ``stacks`` table and the one transaction that claims a
  whole stack.
- ``placement``: select / rank / release, idempotent, retried on races.
- ``template``: a HOT template (what ``scheduler-client stack`` reads, or
  Heat keeps) as a ``select_stack`` request: its resources, nested
  templates' too, and what depends on what.
- ``nested``: nested stacks (template resources, ResourceGroups of them),
  their resources named by their path from the root (``tier/0/web``).
- ``environment``: a stack's environment: parameters, parameter_defaults,
  the resource registry.
- ``files``: reading YAML (a template, an environment, a nested
  template's text) and the flavors file.
- ``nested_files``: a template's nested templates and environment files
  read from disk, as python-heatclient reads them.
- ``limits``: how large a template may be, and how many values and how
  deep once its aliases and get_params are expanded.
- ``functions``: Heat's functions in values (get_param, if, get_resource,
  get_attr).
- ``conditions``: the template's conditions, as Heat evaluates them.
- ``parameters``: the template's parameters, typed and constrained.
- ``servers``: an OS::Nova::Server as what is placed (spec, relations,
  server group); which references name a resource's id.
"""
