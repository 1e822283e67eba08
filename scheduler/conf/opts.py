"""Entry point for oslo-config-generator: every option, grouped."""

from scheduler.conf import MODULES


def list_opts() -> list[tuple[str, list]]:
    """Our groups; oslo.db's and oslo.messaging's come from their own entry
    points in the generator config."""
    groups: dict[str, list] = {}
    for module in MODULES:
        for group, opts in module.list_opts().items():
            groups.setdefault(group, []).extend(opts)
    return sorted(groups.items())
