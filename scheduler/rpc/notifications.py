"""oslo.messaging notifications of decisions, stacks and moves.

Every RPC method that changes claims sends ``scheduler.<method>.start``
when its request is parsed, then ``scheduler.<method>.end`` (INFO) or
``scheduler.<method>.error`` (ERROR) — :func:`scheduler.rpc.instrument.
rpc_method` calls this module, so a new RPC method notifies by
construction unless it is listed in :data:`QUIET`. Nothing is built or
sent unless ``[oslo_messaging_notifications] driver`` is set: without it
:func:`notifier` is None and the request path never enters this module.

Payload (every event): ``request_id``, ``global_request_id``, ``api``
(``scheduler`` or ``nova``), ``method``, then what was asked when the
request parsed: ``instance_uuids``, ``num_instances``, ``flavor``
(``name``, ``vcpus``, ``memory_mb``, ``disk_gb``) and ``move``; for a
stack ``stack_id`` and its resources; for a drain ``host``, ``apply`` and
``same_aggregate``. ``.end`` adds ``destinations`` (``instance_uuid``,
``host``, ``nodename``; a stack's with ``resource``, a drain's with
``from_host``) or
``count`` (confirm/revert/release: how many changed) and ``duration_ms``;
``.error`` adds ``error`` (the exception's class name), ``message`` (the
whole explanation, per filter) and ``refused_by`` (the filter that removed
the last hosts, when one did).
"""
from __future__ import annotations

import functools
from typing import Any

from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts

from scheduler import exception
from scheduler import trace as trace_mod

LOG = logging.getLogger(__name__)

#: Methods that send no notification: reads that change nothing, and
#: nova's instance-info and aggregate casts, which every compute sends
#: every couple of minutes and which decide nothing.
QUIET = frozenset({"ping", "rank_destinations", "rank_stack", "capacity",
                   "update_aggregates", "delete_aggregate",
                   "update_instance_info", "sync_instance_info",
                   "delete_instance_info"})

def notifier(conf: cfg.ConfigOpts) -> messaging.Notifier | None:
    """A Notifier publishing as ``scheduler.<host>``, or None when no
    ``[oslo_messaging_notifications] driver`` is configured.

    Its transport is ``[oslo_messaging_notifications] transport_url`` (else
    the RPC one); the caller owns it (``notifier.transport.cleanup()``).

    :raises ConfigError: that transport's driver does not load.
    """
    # oslo.messaging registers its options when it builds a transport;
    # the driver must be read before deciding to build one.
    for group, opts in messaging_opts.list_opts():
        conf.register_opts(opts, group=group)
    if not conf.oslo_messaging_notifications.driver:
        return None
    try:
        transport = messaging.get_notification_transport(conf)
    except (messaging.DriverLoadFailure, ImportError) as e:
        # oslo.messaging loads the URL scheme's driver here: an unknown
        # one is a DriverLoadFailure, one whose library is missing (kafka
        # without confluent_kafka) a bare ImportError; neither names the
        # option.
        own = conf.oslo_messaging_notifications.transport_url
        where = ("[oslo_messaging_notifications]" if own else
                 "[DEFAULT]") + " transport_url"
        url = messaging.TransportURL.parse(conf, own)
        raise exception.ConfigError(
            f"{where}: cannot load the {url.transport} transport driver "
            f"({getattr(e, 'ex', e)}); use rabbit:// or install the "
            f"driver's library") from None
    return messaging.Notifier(transport, publisher_id=f"scheduler.{conf.host}")


def _context() -> dict[str, Any]:
    context = oslo_context.get_current()
    if context is None:
        return {}
    return {"request_id": context.request_id,
            "global_request_id": context.global_request_id}


def _flavor(flavor) -> dict[str, Any]:
    return {"name": flavor.name, "vcpus": flavor.vcpus,
            "memory_mb": flavor.memory_mb, "disk_gb": flavor.disk_gb}


def _asked(subject: Any) -> dict[str, Any]:
    """What the request asked for, from what it parsed to."""
    # Imported here: the stack package imports the drivers, which
    # import this module's callers.
    from scheduler.request.spec import RequestSpec
    from scheduler.stacks.stack import Stack

    if isinstance(subject, RequestSpec):
        return {"instance_uuids": list(subject.instance_uuids),
                "num_instances": subject.num_instances,
                "flavor": _flavor(subject.flavor), "move": subject.move}
    if isinstance(subject, Stack):
        return {"stack_id": subject.stack_id,
                "instance_uuids": subject.consumers,
                "num_instances": len(subject.consumers),
                "resources": {name: {"num_instances": r.spec.num_instances,
                                     "flavor": _flavor(r.spec.flavor)}
                              for name, r in subject.placed.items()}}
    if isinstance(subject, list):
        return {"instance_uuids": subject, "num_instances": len(subject)}
    if isinstance(subject, str):
        return {"stack_id": subject}
    if isinstance(subject, dict):
        return dict(subject)      # a drain: its host and flags
    return {}


def _payload(api: str, trace: trace_mod.Trace) -> dict[str, Any]:
    payload = {**_context(), "api": api, "method": trace.method}
    payload.update(_asked(trace.subject))
    return payload


def _destinations(result: Any) -> list[dict[str, Any]] | None:
    """The hosts chosen, from what select_destinations (the driver's
    list), select_stack or plan_drain returned."""
    if isinstance(result, list):
        return [{"instance_uuid": d["uuid"], "host": d["host"],
                 "nodename": d["nodename"]} for d in result]
    if isinstance(result, dict) and "resources" in result:
        return [{"resource": name, "instance_uuid": d["uuid"],
                 "host": d["host"], "nodename": d["nodename"]}
                for name, dests in result["resources"].items()
                for d in dests]
    if isinstance(result, dict) and "moves" in result:
        return [{"instance_uuid": m["consumer_uuid"],
                 "from_host": m["from"]["host"], "host": m["to"]["host"],
                 "nodename": m["to"]["nodename"]}
                for m in result["moves"]]
    return None


def _guarded(send):
    """A notification that cannot be built must not fail the request it
    reports on (oslo.messaging already logs, and swallows, one that cannot
    be sent): log it, with the traceback, since it is our bug."""
    @functools.wraps(send)
    def guarded(notifier, api: str, trace: trace_mod.Trace, *args) -> None:
        try:
            send(notifier, api, trace, *args)
        except Exception:
            LOG.exception("Notification of %s not sent", trace.method)
    return guarded


@_guarded
def start(notifier: messaging.Notifier, api: str,
          trace: trace_mod.Trace) -> None:
    """``scheduler.<method>.start``."""
    notifier.info(_context(), f"scheduler.{trace.method}.start",
                  _payload(api, trace))


@_guarded
def end(notifier: messaging.Notifier, api: str, trace: trace_mod.Trace,
        result: Any, elapsed: float) -> None:
    """``scheduler.<method>.end``. ``result`` is the driver's list of
    destinations for a select_destinations (whichever API), the method's
    return value otherwise."""
    payload = _payload(api, trace)
    if trace.placed is not None:
        result = trace.placed
    destinations = _destinations(result)
    if destinations is not None:
        payload["destinations"] = destinations
    elif isinstance(result, int):
        payload["count"] = result
    payload["duration_ms"] = round(elapsed * 1000, 3)
    notifier.info(_context(), f"scheduler.{trace.method}.end", payload)


@_guarded
def error(notifier: messaging.Notifier, api: str, trace: trace_mod.Trace,
          exc: BaseException) -> None:
    """``scheduler.<method>.error``, with the whole explanation."""
    payload = _payload(api, trace)
    payload.update(error=type(exc).__name__, message=str(exc),
                   refused_by=trace.refused_by)
    notifier.error(_context(), f"scheduler.{trace.method}.error", payload)
