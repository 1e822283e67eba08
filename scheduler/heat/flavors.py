"""The flavors a Heat template names its servers' flavors from: nova's
own (its API database's ``flavors``), or a flavors file's when this
service does not read nova's databases."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from scheduler.novadb import schema


def nova_flavors(conn: sa.Connection) -> dict[str, dict[str, Any]]:
    """Flavor name -> its fields (as a flavors file gives them, ``flavorid``
    and ``extra_specs`` included), from nova's API database."""
    f, e = schema.flavors, schema.flavor_extra_specs
    extra: dict[int, dict[str, str]] = {}
    for row in conn.execute(sa.select(e.c.flavor_id, e.c.key, e.c.value)):
        extra.setdefault(row.flavor_id, {})[row.key] = row.value
    return {row.name: {"name": row.name, "flavorid": row.flavorid,
                       "memory_mb": row.memory_mb, "vcpus": row.vcpus,
                       "root_gb": row.root_gb,
                       "ephemeral_gb": row.ephemeral_gb or 0,
                       "swap": row.swap or 0,
                       "extra_specs": extra.get(row.id, {})}
            for row in conn.execute(sa.select(
                f.c.id, f.c.name, f.c.flavorid, f.c.memory_mb, f.c.vcpus,
                f.c.root_gb, f.c.ephemeral_gb, f.c.swap))}

