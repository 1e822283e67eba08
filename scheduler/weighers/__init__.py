"""Weighers: which of the hosts that passed is best.

A module per family, each a ``base.BaseWeigher`` returning a raw number
per host (and, for speed, ``weigh_columns``), registered under the
``scheduler.weighers`` entry points; ``base`` normalizes, multiplies by the
configured multiplier and sums.
"""
