"""Filters: which hosts can take an instance at all.

A plugin author's one place: a module per family of filters, each a
``base.BaseFilter`` with a name, a stable ``reason`` and ``host_passes``
(and, to be fast at 10,000+ hosts, ``filter_columns`` over the NumPy
columns), registered under the ``scheduler.filters`` entry points. The loop
in ``base`` counts what each filter removes, so a refusal explains itself.
"""
