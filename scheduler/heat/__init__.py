"""Heat's stacks: nova's boots of a stack's servers land on the stack's plan.

With Heat's ``stack_scheduler_hints``, every server nova boots for Heat
names its root stack, its path in it and its resource. The first such boot
of a root stack this service has not placed reads the stack from Heat's
database and places it whole (``stacks.placement.select``); each boot then
takes over its server's planned claim (``stacks.instances``).

- ``hints``: the Heat scheduler hints of a boot, and the resource of the
  placed stack (and its index) they name.
- ``database``: a root stack as Heat's database holds it (template, files,
  environment), read-only.
- ``flavors``: the flavors templates name: nova's (API database) or a
  file's.
- ``boots``: the boot's destination from its stack's plan, or None to
  place it as any request.
"""
