"""Scheduler benchmarks: ``python benchmarks/run.py`` (or ``tox -e bench``).

See ``benchmarks/README.rst``. Nothing here asserts a timing; the run
prints a table, writes a JSON file and a PNG plot.
"""
