"""Where an end-to-end ``select_destinations`` row's time went inside the
service, from the servers' own ``/metrics``: the same histograms an
operator scrapes (``scheduler_request_duration_seconds`` for the method,
``scheduler_stage_duration_seconds`` per stage of :data:`trace.STAGES`).

:func:`scrape` reads their sums and counts; :func:`split` turns the
difference between a scrape before a row and one after it into the mean
seconds per request of the handler as a whole (``service``) and of each
stage. Means, not medians: the histograms keep sums, and means add up —
the row's mean round trip minus ``service`` is what the bus, oslo.messaging
on both ends and the client took.
"""
from __future__ import annotations

from typing import Iterator
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from scheduler import trace

#: The stages a split has, in the order a request runs them.
STAGES = trace.STAGES
REQUEST = "scheduler_request_duration_seconds"
STAGE = "scheduler_stage_duration_seconds"
#: The handler as a whole, beside the stages, in a split.
SERVICE = "service"
SCRAPE_TIMEOUT = 10


def parse(text: str, method: str) -> dict[str, float]:
    """Sums and count from one ``/metrics`` text: ``count`` and
    ``service`` (requests of ``method`` and their seconds), and the
    seconds of each stage (every request's)."""
    totals = {"count": 0.0, SERVICE: 0.0}
    totals.update((name, 0.0) for name in STAGES)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == f"{REQUEST}_count" and \
                    sample.labels.get("method") == method:
                totals["count"] += sample.value
            elif sample.name == f"{REQUEST}_sum" and \
                    sample.labels.get("method") == method:
                totals[SERVICE] += sample.value
            elif sample.name == f"{STAGE}_sum" and \
                    sample.labels.get("stage") in STAGES:
                totals[sample.labels["stage"]] += sample.value
    return totals


def scrape(urls: list[str], method: str = "select_destinations"
           ) -> dict[str, float]:
    """:func:`parse` of every server's ``/metrics`` at ``urls``, added up.

    :raises OSError: a server did not answer (URLError is one).
    """
    total: dict[str, float] = {}
    for text in _texts(urls):
        one = parse(text, method)
        for key, value in one.items():
            total[key] = total.get(key, 0.0) + value
    return total


def split(before: dict[str, float], after: dict[str, float]
          ) -> dict[str, float] | None:
    """Mean seconds per request between two scrapes: ``service`` and each
    stage (a stage a request skipped counts as 0 for it); None when no
    request was counted in between. The stage histograms have no method
    label: only requests of the scraped method may run in between."""
    requests = after["count"] - before["count"]
    if requests <= 0:
        return None
    return {key: (after[key] - before[key]) / requests
            for key in (SERVICE, *STAGES)}


def histogram(urls: list[str], name: str) -> tuple[float, float]:
    """Sum and count of histogram ``name`` (every label) over every
    server's ``/metrics`` at ``urls``.

    :raises OSError: a server did not answer (URLError is one).
    """
    total, count = 0.0, 0.0
    for text in _texts(urls):
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == f"{name}_sum":
                    total += sample.value
                elif sample.name == f"{name}_count":
                    count += sample.value
    return total, count


def _texts(urls: list[str]) -> Iterator[str]:
    """Each server's ``/metrics`` text."""
    for url in urls:
        with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT) as answer:
            yield answer.read().decode()
