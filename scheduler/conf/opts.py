"""Entry point for oslo-config-generator: every option, grouped."""

from scheduler.conf import default
from scheduler.conf import filter_scheduler
from scheduler.conf import metrics
from scheduler.conf import nova
from scheduler.conf import scheduler
from scheduler.conf import upgrade_levels


def list_opts() -> list[tuple[str, list]]:
    """Our groups; oslo.db's and oslo.messaging's come from their own entry
    points in the generator config."""
    groups: dict[str, list] = {}
    for module in (default, scheduler, filter_scheduler, metrics, nova,
                   upgrade_levels):
        for group, opts in module.list_opts().items():
            groups.setdefault(group, []).extend(opts)
    return sorted(groups.items())

