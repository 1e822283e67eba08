"""Loading drivers, filters and weighers by entry point (stevedore).

A name that is not installed stops start-up with an error naming the option,
the missing name and the names that are available.
"""
from __future__ import annotations

from typing import Any

from oslo_config import cfg
from stevedore import driver as sd_driver
from stevedore import extension
from stevedore import named

from scheduler import exception

DRIVER_NS = "scheduler.driver"
FILTER_NS = "scheduler.filters"
WEIGHER_NS = "scheduler.weighers"


def names(namespace: str) -> list[str]:
    """The plugin names installed in ``namespace``."""
    return sorted(ext.name for ext in
                  extension.ExtensionManager(namespace).extensions)


def _available(namespace: str) -> str:
    return ", ".join(names(namespace)) or "none"


def _load_named(namespace: str, option: str, names: list[str],
                conf: cfg.ConfigOpts) -> list[Any]:
    missing: list[str] = []

    def on_load_failure(manager, entrypoint, error):
        raise exception.ConfigError(
            f"{option}: plugin {entrypoint.name!r} from namespace "
            f"{namespace!r} failed to load: {error}")

    manager = named.NamedExtensionManager(
        namespace, names, name_order=True, invoke_on_load=True,
        invoke_args=(conf,), on_load_failure_callback=on_load_failure,
        on_missing_entrypoints_callback=missing.extend)
    if missing:
        raise exception.ConfigError(
            f"{option}: no plugin named {', '.join(sorted(missing))} in "
            f"namespace {namespace!r}; available: {_available(namespace)}")
    return [ext.obj for ext in manager.extensions]


def load_filters(conf: cfg.ConfigOpts) -> list:
    """The enabled filters, instantiated, in configured order."""
    return _load_named(FILTER_NS, "[filter_scheduler] enabled_filters",
                       conf.filter_scheduler.enabled_filters, conf)


#: How nova's ``[filter_scheduler] weight_classes`` spells its weighers: a
#: class path under this package, or this function for all of them.
NOVA_WEIGHERS = "nova.scheduler.weights."
NOVA_ALL_WEIGHERS = NOVA_WEIGHERS + "all_weighers"


def weigher_names(configured: list[str]) -> list[str]:
    """The entry-point names of ``configured`` weighers, taking nova's
    spelling too, so an operator's ``weight_classes`` carries over:
    ``nova.scheduler.weights.ram.RAMWeigher`` is ``RAMWeigher``, and
    ``nova.scheduler.weights.all_weighers`` (nova's default) is every
    installed weigher. Each name once, first mention first."""
    out: list[str] = []
    for name in configured:
        if name == NOVA_ALL_WEIGHERS:
            expanded = names(WEIGHER_NS)
        elif name.startswith(NOVA_WEIGHERS):
            expanded = [name.rpartition(".")[2]]
        else:
            expanded = [name]
        out.extend(n for n in expanded if n not in out)
    return out


def load_weighers(conf: cfg.ConfigOpts) -> list:
    """The enabled weighers, instantiated, in configured order (names as
    :func:`weigher_names` reads them)."""
    return _load_named(WEIGHER_NS, "[filter_scheduler] weighers",
                       weigher_names(conf.filter_scheduler.weighers), conf)


def load_driver(conf: cfg.ConfigOpts, *args: Any) -> Any:
    """The driver named by ``[scheduler] driver``, built with
    ``(conf, *args)``.

    :raises ConfigError: it is not installed, or it fails to import or to
        build (naming the option and the driver's own error).
    """
    check_driver(conf)

    def on_load_failure(manager, entrypoint, error):
        if isinstance(error, (cfg.Error, exception.ConfigError)):
            raise error    # it names its own option
        raise exception.ConfigError(
            f"[scheduler] driver: driver {entrypoint.name!r} failed to "
            f"load: {type(error).__name__}: {error}")

    return sd_driver.DriverManager(
        DRIVER_NS, conf.scheduler.driver, invoke_on_load=True,
        invoke_args=(conf, *args),
        on_load_failure_callback=on_load_failure).driver



def check_driver(conf: cfg.ConfigOpts) -> None:
    """Raise ConfigError unless ``[scheduler] driver`` is installed."""
    if conf.scheduler.driver not in names(DRIVER_NS):
        raise exception.ConfigError(
            f"[scheduler] driver: no driver named {conf.scheduler.driver!r} "
            f"in namespace {DRIVER_NS!r}; available: "
            f"{_available(DRIVER_NS)}")
