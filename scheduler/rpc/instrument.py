"""What every RPC method of the endpoint gets, in one decorator.

``@instrument.rpc_method`` (innermost, right above ``def``) gives a method:

- the caller's request context (``request_id``, ``global_request_id``,
  ``user``, ``project`` from the RPC context dict) as oslo.context's
  current context, so every log line of that request carries its ids;
- one window for a database that cannot be reached, counted from its
  start and shared by all its transactions, and no transaction begun or
  committed once its caller has stopped waiting for the reply
  (:func:`scheduler.db.retry.serving`: the request is dropped in one
  line);
- database failures the operator must fix (read-only, no schema, gone)
  turned into one ``ServiceUnavailable`` line on both sides instead of a
  traceback with SQL;
- its telemetry: a :mod:`~scheduler.trace` the request path adds its stage
  timings to, counted and timed in :mod:`~scheduler.metrics` by outcome,
  one DEBUG line with the stage timings, and the ``.start`` / ``.end`` /
  ``.error`` notifications (:mod:`~scheduler.rpc.notifications`) when the
  endpoint has a ``notifier``.

A new RPC method only has to use the decorator. The endpoint may set
``rpc_api`` (the metric and notification label of its API, default
``scheduler``), ``notifier`` (None: no notifications), ``patient_callers``
(True: its callers wait longer than ``rpc_response_timeout``, so a request
of theirs is never dropped as one whose caller is gone) and ``refusals``
(the exception classes counted as a refusal, outcome ``no_valid_host``;
default :data:`REFUSALS`): an API that refuses with its own class (nova's
``NoValidHost``) names it there, so this module knows no API above it.
"""
from __future__ import annotations

import functools
import time
from typing import Any, Callable

from oslo_context import context as oslo_context
from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_messaging.rpc import dispatcher as rpc_dispatcher
from sqlalchemy import exc as sa_exc

from scheduler import errors
from scheduler import exception
from scheduler import metrics
from scheduler.rpc import notifications
from scheduler import trace as trace_mod
from scheduler.db import retry as db_retry

LOG = logging.getLogger(__name__)

_DB_ERRORS = (db_exc.DBError, sa_exc.DBAPIError)
#: What counts as a refusal unless the endpoint says (``refusals``).
REFUSALS: tuple[type[BaseException], ...] = (exception.NoValidHost,)


def request_context(ctxt: Any) -> oslo_context.RequestContext:
    """The caller's context as a RequestContext; a request id is made up
    when the caller sent none, so the request's lines still share one."""
    values = ctxt if isinstance(ctxt, dict) else {}
    known = {k: v for k, v in values.items()
             if k in ("request_id", "global_request_id", "user", "project",
                      "user_id", "project_id", "user_name", "project_name")
             and isinstance(v, str) and len(v) <= 255}
    return oslo_context.RequestContext.from_dict(known)


def outcome_of(exc: BaseException | None,
               refusals: tuple[type[BaseException], ...] = REFUSALS) -> str:
    """The ``outcome`` label of a request that raised ``exc`` (None: it
    returned), to an endpoint that refuses with ``refusals``."""
    if exc is None:
        return "ok"
    if isinstance(exc, refusals):
        return "no_valid_host"
    if isinstance(exc, exception.InvalidRequest):
        return "invalid_request"
    if isinstance(exc, exception.ServiceUnavailable):
        return "service_unavailable"
    return "error"


def rpc_method(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate an endpoint method ``func(self, ctxt, ...)``."""
    method = func.__name__
    notifies = method not in notifications.QUIET

    @functools.wraps(func)
    def wrapper(self, ctxt: Any, *args: Any, **kwargs: Any) -> Any:
        context = request_context(ctxt)
        context.update_store()
        api = getattr(self, "rpc_api", "scheduler")
        notifier = getattr(self, "notifier", None) if notifies else None
        refusals = getattr(self, "refusals", REFUSALS)
        trace = trace_mod.begin(method, None if notifier is None else
                                functools.partial(notifications.start,
                                                  notifier, api))
        failure: BaseException | None = None
        try:
            try:
                with db_retry.serving(_patience(self)):
                    result = func(self, ctxt, *args, **kwargs)
            except _DB_ERRORS as e:
                message = errors.describe(e, self.conf)
                LOG.error("%s failed: %s", method, message)
                failure = exception.ServiceUnavailable(message)
                try:
                    raise failure from None
                except exception.ServiceUnavailable:
                    # Expected: the dispatcher replies with it (class and
                    # message, rpc.transport.Dispatcher) and logs no
                    # traceback.
                    raise rpc_dispatcher.ExpectedException()
            except exception.CallerGone as e:
                # Nobody reads the reply: one line for the operator.
                LOG.warning("%s dropped: %s", method, e)
                failure = e
                raise rpc_dispatcher.ExpectedException()
            except BaseException as e:
                failure = e
                raise
            if notifier is not None:
                _notify(notifier, api, trace, result, None)
            return result
        finally:
            if failure is not None and notifier is not None:
                _notify(notifier, api, trace, None, failure)
            outcome = outcome_of(failure, refusals)
            metrics.record_request(api, outcome, trace)
            if LOG.isEnabledFor(logging.DEBUG):
                _log_timings(trace, outcome)
            trace_mod.end()
            # Executor threads are reused: the next request must not log
            # under this one's ids.
            oslo_context._request_store.context = None
    return wrapper


def _patience(endpoint: Any) -> float | None:
    """Seconds ``endpoint``'s callers wait for a reply: ``[DEFAULT]
    rpc_response_timeout``, this server's, which an operator sets to the
    callers'; None for an endpoint whose callers wait longer
    (``patient_callers``), or one called without a transport
    (oslo.messaging registers the option with it)."""
    if getattr(endpoint, "patient_callers", False) or \
            "rpc_response_timeout" not in endpoint.conf:
        return None
    return endpoint.conf.rpc_response_timeout


def _notify(notifier, api: str, trace: trace_mod.Trace, result: Any,
            failure: BaseException | None) -> None:
    # A request refused before it parsed still gets its .start, so
    # every .error or .end follows one.
    if trace.on_parsed is not None:
        trace.on_parsed = None
        notifications.start(notifier, api, trace)
    if failure is None:
        notifications.end(notifier, api, trace, result,
                          time.perf_counter() - trace.started)
    else:
        notifications.error(notifier, api, trace, failure)


def _log_timings(trace: trace_mod.Trace, outcome: str) -> None:
    stages = ", ".join(f"{name} {seconds * 1000:.2f} ms"
                       for name, seconds in trace.timings().items())
    LOG.debug("%s %s in %.2f ms%s", trace.method, outcome,
              (time.perf_counter() - trace.started) * 1000,
              f": {stages}" if stages else "")
