"""A root stack as Heat's database holds it, read and never written.

Heat writes a stack's ``stack`` row and its ``raw_template`` (the template,
its environment, and the files its nested templates come from, in
``raw_template_files``) before it creates the stack's first resource: the
whole stack is there when its first server boots. Heat stores each as a
JSON text; only the columns read here are declared.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

from oslo_config import cfg
import sqlalchemy as sa

from scheduler import exception
from scheduler.db import foreign
from scheduler.db import response

_heat = sa.MetaData()
stack = sa.Table(
    "stack", _heat, sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(255)),
    sa.Column("raw_template_id", sa.Integer),
    sa.Column("owner_id", sa.String(36)), sa.Column("tenant", sa.String(256)),
    sa.Column("deleted_at", sa.DateTime))
raw_template = sa.Table(
    "raw_template", _heat, sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("template", sa.Text), sa.Column("files", sa.Text),
    sa.Column("files_id", sa.Integer), sa.Column("environment", sa.Text))
raw_template_files = sa.Table(
    "raw_template_files", _heat, sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("files", sa.Text))


@dataclasses.dataclass(frozen=True)
class HeatStack:
    """A root stack of Heat's: what its creation was given."""
    stack_id: str
    name: str
    project_id: str | None
    template: dict[str, Any]
    files: dict[str, str]
    environment: dict[str, Any]


class NotRoot(Exception):
    """The stack id is no live root stack of Heat's database."""


def engine(conf: cfg.ConfigOpts) -> sa.Engine | None:
    """The engine reading Heat's database (``[heat]
    database_connection``), or None when none is set.

    :raises ConfigError: the URL cannot be used, or no source of the
        flavors Heat's templates name is set, naming the options.
    """
    url = conf.heat.database_connection
    if not url:
        return None
    if not (conf.nova.api_database_connection or conf.heat.flavors_file):
        raise exception.ConfigError(
            "[heat] database_connection: the flavors Heat's templates name "
            "come from nova's API database or a file: set [nova] "
            "api_database_connection or [heat] flavors_file")
    return foreign.reader_engine(url, "[heat] database_connection",
                                 response.timeout(conf))


def check(engine: sa.Engine) -> int:
    """That ``engine``'s database holds Heat's tables, as read here.

    :returns: how many root stacks it holds (deleted ones not counted).
    :raises ConfigError: one line naming the database (not its password)
        and what failed.
    """
    try:
        with engine.connect() as conn:
            for table in (raw_template, raw_template_files):
                conn.execute(sa.select(*table.c).limit(1)).all()
            return conn.execute(sa.select(sa.func.count()).where(
                stack.c.owner_id.is_(None), stack.c.deleted_at.is_(None))
            ).scalar_one()
    except foreign.READ_ERRORS as e:
        shown = engine.url.render_as_string(hide_password=True)
        raise exception.ConfigError(
            f"[heat] database_connection: {shown}: Heat's tables cannot be "
            f"read ({foreign.why(e)})") from None


def read_root(conn: sa.Connection, stack_id: str) -> HeatStack:
    """Root stack ``stack_id``: its name, project, template, files and
    environment.

    :raises NotRoot: no such stack, deleted, or nested in another.
    :raises ValueError: a JSON column that is not JSON.
    """
    s, r, f = stack, raw_template, raw_template_files
    row = conn.execute(
        sa.select(s.c.id, s.c.name, s.c.tenant, s.c.owner_id,
                  s.c.deleted_at, r.c.template, r.c.files, r.c.environment,
                  f.c.files.label("files_row"))
        .select_from(s.join(r, r.c.id == s.c.raw_template_id)
                     .outerjoin(f, f.c.id == r.c.files_id))
        .where(s.c.id == stack_id)).first()
    if row is None or row.deleted_at is not None:
        raise NotRoot(f"Heat has no stack {stack_id}")
    if row.owner_id is not None:
        raise NotRoot(f"Heat's stack {stack_id} is nested in {row.owner_id}")
    # Heat keeps files in raw_template_files since Newton; rows written
    # before have them in raw_template.files.
    files = _json(row.files_row) or _json(row.files) or {}
    return HeatStack(stack_id=row.id, name=row.name or row.id,
                     project_id=row.tenant, template=_json(row.template),
                     files=files, environment=_json(row.environment) or {})


def _json(text: str | None) -> Any:
    return None if text is None else json.loads(text)
