"""Alembic environment: always run online against the connection that
scheduler.db.migration hands over in ``config.attributes``."""
from alembic import context

from scheduler.db import models

config = context.config
connection = config.attributes["connection"]
context.configure(connection=connection, target_metadata=models.Base.metadata,
                  render_as_batch=True,
                  on_version_apply=config.attributes.get("on_version_apply",
                                                         ()))
with context.begin_transaction():
    context.run_migrations()
