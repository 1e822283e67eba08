"""What every RPC method of the endpoint gets, in one decorator.

``@instrument.rpc_method`` (innermost, right above ``def``) gives a method:

- the caller's request context (``request_id``, ``global_request_id``,
  ``user``, ``project`` from the RPC context dict) as oslo.context's
  current context, so every log line of that request carries its ids;
- database failures the operator must fix (read-only, no schema, gone)
  turned into one ``ServiceUnavailable`` line on both sides instead of a
  traceback with SQL.

A new RPC method only has to use the decorator.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from oslo_context import context as oslo_context
from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_messaging.rpc import dispatcher as rpc_dispatcher
from sqlalchemy import exc as sa_exc

from scheduler import errors
from scheduler import exception

LOG = logging.getLogger(__name__)

_DB_ERRORS = (db_exc.DBError, sa_exc.DBAPIError)


def request_context(ctxt: Any) -> oslo_context.RequestContext:
    """The caller's context as a RequestContext; a request id is made up
    when the caller sent none, so the request's lines still share one."""
    values = ctxt if isinstance(ctxt, dict) else {}
    known = {k: v for k, v in values.items()
             if k in ("request_id", "global_request_id", "user", "project",
                      "user_id", "project_id", "user_name", "project_name")
             and isinstance(v, str) and len(v) <= 255}
    return oslo_context.RequestContext.from_dict(known)


def rpc_method(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate an endpoint method ``func(self, ctxt, ...)``."""
    @functools.wraps(func)
    def wrapper(self, ctxt: Any, *args: Any, **kwargs: Any) -> Any:
        context = request_context(ctxt)
        context.update_store()
        try:
            return func(self, ctxt, *args, **kwargs)
        except _DB_ERRORS as e:
            message = errors.describe(e, self.conf)
            LOG.error("%s failed: %s", func.__name__, message)
            try:
                raise exception.ServiceUnavailable(message) from None
            except exception.ServiceUnavailable:
                # Expected: the dispatcher replies with it and logs no
                # traceback.
                raise rpc_dispatcher.ExpectedException()
        finally:
            # Executor threads are reused: the next request must not log
            # under this one's ids.
            oslo_context._request_store.context = None
    return wrapper
