"""What ``scheduler-status upgrade check`` checks before (re)starting the
service on new code: the database answers, its schema is at this code's
head, the broker takes our login, and the configured plugins load.

Each check returns an oslo.upgradecheck ``Result``: an operator-fixable
problem is a FAILURE whose details name it and the fix (the same line the
commands print, from :mod:`scheduler.errors`); only a bug in a check
raises, which oslo.upgradecheck reports as an error (exit 255).
"""
from __future__ import annotations

from typing import Callable, Sequence

from oslo_config import cfg
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa

from scheduler.rpc import broker
from scheduler.service import database
from scheduler import errors
from scheduler.decide import plugins
from scheduler.db.engine import create_engine
from scheduler.db import migration
from scheduler.decide.filter import Pipeline
from scheduler.novadb.databases import NovaDatabases
from scheduler.heat import database as heat_database

Code = upgradecheck.Code
Result = upgradecheck.Result


def _failure_for_operator_errors(check: Callable[["Checks"], Result]
                                 ) -> Callable[["Checks"], Result]:
    """Turn an operator error raised by ``check`` into a FAILURE naming it;
    anything else (a bug) still raises."""
    def wrapped(self: "Checks") -> Result:
        try:
            return check(self)
        except Exception as e:
            message = errors.describe(e, self.conf)
            if message is None:
                raise
            return Result(Code.FAILURE, message)
    wrapped.__doc__ = check.__doc__
    return wrapped


class Checks(upgradecheck.UpgradeCommands):
    """The scheduler's upgrade checks, run in the order listed.

    :param conf: the loaded configuration.
    :param broker_timeout: seconds the broker check may take; None for
        ``[scheduler] broker_startup_timeout``.
    """

    display_title = "Scheduler upgrade check results"

    def __init__(self, conf: cfg.ConfigOpts,
                 broker_timeout: Callable[[], float | None] = lambda: None):
        self.conf = conf
        self._broker_timeout = broker_timeout

    def _engine(self) -> sa.Engine:
        # A missing SQLite file is refused before SQLite creates it empty.
        database.check_database(self.conf)
        return create_engine(self.conf)

    @_failure_for_operator_errors
    def check_database(self) -> Result:
        """The database answers a query."""
        engine = self._engine()
        try:
            with engine.connect() as connection:
                connection.execute(sa.text("SELECT 1"))
        finally:
            engine.dispose()
        return Result(Code.SUCCESS, f"{errors.database_name(self.conf)} "
                                    f"answers")

    @_failure_for_operator_errors
    def check_schema(self) -> Result:
        """The schema revision is this code's head."""
        engine = self._engine()
        try:
            problem = migration.problem(migration.version(engine),
                                        errors.database_name(self.conf))
        finally:
            engine.dispose()
        if problem:
            return Result(Code.FAILURE, problem)
        return Result(Code.SUCCESS,
                      f"schema at revision {migration.head()} (head)")

    @_failure_for_operator_errors
    def check_broker(self) -> Result:
        """The broker accepts our login within the time budget."""
        budget = self._broker_timeout()
        if budget is None:
            budget = self.conf.scheduler.broker_startup_timeout
        broker.check(self.conf, budget)
        return Result(Code.SUCCESS, f"message broker at "
                      f"{errors.broker_hosts(self.conf)} accepts the login")

    @_failure_for_operator_errors
    def check_config(self) -> Result:
        """The driver, filters and weighers named in the configuration are
        installed and load."""
        plugins.check_driver(self.conf)
        # As the server checks it: every value reads, or names itself.
        pipeline = Pipeline.load(self.conf)
        # Named, not counted: the pipeline adds the capacity filters a list
        # lacks (drivers.filter.with_capacity), so a count would not match
        # the list the operator wrote.
        return Result(Code.SUCCESS, f"driver {self.conf.scheduler.driver}, "
                      f"filters {_names(pipeline.filters)}; weighers "
                      f"{_names(pipeline.weighers)}: all load")

    @_failure_for_operator_errors
    def check_nova(self) -> Result:
        """With ``[nova] api_database_connection``: nova's API database and
        every enabled cell's are nova's, at nova 34's schema or later, and
        answer."""
        if not self.conf.nova.api_database_connection:
            return Result(Code.SUCCESS,
                          "not used: hosts from this service's tables")
        databases = NovaDatabases(self.conf)
        try:
            labels = databases.check()
        finally:
            databases.close()
        if not labels:
            return Result(Code.WARNING, "nova's API database maps no "
                          "enabled cell but cell0: nothing to place on")
        return Result(Code.SUCCESS, f"nova's API database and cells "
                      f"{', '.join(labels)}: nova 34's schema, answering")

    @_failure_for_operator_errors
    def check_heat(self) -> Result:
        """With ``[heat] database_connection``: Heat's database answers
        and holds Heat's tables, and the flavors its templates name can
        be found."""
        if not self.conf.heat.database_connection:
            return Result(Code.SUCCESS,
                          "not used: stacks placed with select_stack only")
        engine = heat_database.engine(self.conf)
        try:
            stacks = heat_database.check(engine)
        finally:
            engine.dispose()
        return Result(Code.SUCCESS, f"Heat's database answers: {stacks} "
                      f"root stack(s)")

    _upgrade_checks = (
        ("Database", check_database),
        ("Schema revision", check_schema),
        ("Message broker", check_broker),
        ("Configuration", check_config),
        ("Nova databases", check_nova),
        ("Heat database", check_heat),
    )


def _names(loaded: Sequence) -> str:
    return ", ".join(p.name for p in loaded) or "none"
