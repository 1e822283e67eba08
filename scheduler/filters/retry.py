"""RetryFilter: skip the (host, node) pairs an earlier attempt of this
request already tried (``spec.retry["hosts"]``, a list of ``[host, node]``).

No retry information, or an empty list, lets every host pass.
"""
from scheduler.filters.utils import PASS_ALL
from scheduler.filters.utils import RequestFilter


class RetryFilter(RequestFilter):
    reason = "already tried by an earlier attempt of this request"

    def prepare(self, spec):
        tried = (spec.retry or {}).get("hosts") or ()
        if not tried:
            return PASS_ALL
        return frozenset(tuple(pair) for pair in tried)

    def passes(self, host, tried) -> bool:
        return (host.host, host.nodename) not in tried
