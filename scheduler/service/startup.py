"""What ``scheduler-server`` checks before it forks a worker, and what a
configuration must pass to be taken on SIGHUP: what no worker could
survive is one line naming the option or the database, and the fix, not a
worker that fails (and is forked again) after the start.
"""
from __future__ import annotations

from scheduler.rpc import broker
from scheduler.service import database
from scheduler.service import http
from scheduler.decide import plugins
from scheduler.rpc import transport as rpc
from scheduler.db.engine import create_engine
from scheduler.decide.filter import Pipeline


def check_config(conf) -> None:
    """What a configuration must pass to be taken, at start-up and on
    SIGHUP: every option's value reads (a bad one raises, naming it,
    instead of surfacing later in whatever reads it first), and the
    filters and weighers it names load.

    :raises cfg.Error: naming the option and its file.
    :raises ConfigError: naming the plugin option.
    """
    # Built as a request's pipeline is (the same loading and freezing),
    # then dropped: what passes here is what the workers will take.
    Pipeline.load(conf)


def check_startup(conf, config_given: bool = True) -> None:
    """Fail before forking on what no worker could survive: plugins that
    do not load, a database that is missing, without our schema or that
    this user may not write, a broker that does not answer within
    ``[scheduler] broker_startup_timeout`` or refuses the login, an HTTP
    listen address that is malformed, an RPC thread pool of no thread.

    :raises ConfigError: naming the option or the database, and the fix.
    :raises errors.BrokerUnavailable: naming the broker (BrokerRefused
        when the credentials are wrong).
    """
    check_config(conf)
    plugins.check_driver(conf)
    rpc.check_server_options(conf)
    if conf.scheduler.http_listen:
        http.parse_address(conf.scheduler.http_listen)
    database.check_database(conf, config_given=config_given)
    engine = create_engine(conf)
    try:
        database.require_schema(conf, engine)
        database.require_writable(conf, engine)
    finally:
        engine.dispose()
    broker.check(conf, conf.scheduler.broker_startup_timeout)
