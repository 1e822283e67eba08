"""Is the message broker there, and does it take our credentials?

oslo.messaging retries a lost broker for ever (its reply listener ignores
``retry``), which is right for a running service and wrong for a command
with a deadline or for deciding whether a restart could ever help. This
module asks once, within a time budget, with kombu directly (the library
oslo.messaging's rabbit driver is built on).
"""
from __future__ import annotations

import ssl
import time
from urllib import parse

from oslo_config import cfg
import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts

from scheduler import errors


def kombu_urls(conf: cfg.ConfigOpts) -> list[str]:
    """``[DEFAULT] transport_url`` as one kombu ``amqp://`` URL per host.

    :raises errors.BrokerRefused: the URL is not a ``rabbit://`` one.
    """
    url = messaging.TransportURL.parse(conf)
    # RabbitMQ is the only broker this service runs on (and the one
    # check() talks to); any other scheme would fail later in
    # oslo.messaging with a bare ModuleNotFoundError or DriverLoadFailure
    # that names no option, or pass check() against a RabbitMQ port.
    if url.transport != "rabbit":
        raise errors.BrokerRefused(
            f"[DEFAULT] transport_url: {url.transport}:// is not a "
            f"RabbitMQ URL; write it as rabbit://user:password@host:5672/")
    vhost = parse.quote(url.virtual_host or "/", safe="")
    urls = []
    for host in url.hosts or [messaging.TransportHost(hostname="localhost")]:
        auth = ""
        if host.username:
            auth = parse.quote(host.username, safe="")
            if host.password:
                auth += ":" + parse.quote(host.password, safe="")
            auth += "@"
        urls.append(f"amqp://{auth}{host.hostname or 'localhost'}:"
                    f"{host.port or 5672}/{vhost}")
    return urls


#: ``[oslo_messaging_rabbit]`` integers oslo.messaging declares without
#: bounds, and the values a connection can use: (least, most or None).
#: Outside them a connection fails deep in amqp or oslo.messaging ("error:
#: argument out of range", a ZeroDivisionError) naming no option. The
#: heartbeat and the prefetch count are AMQP shorts; the rate divides.
RABBIT_BOUNDS: dict[str, tuple[int, int | None]] = {
    "heartbeat_timeout_threshold": (0, 65535),
    "heartbeat_rate": (1, None),
    "rabbit_qos_prefetch_count": (0, 65535),
}


def _register_rabbit_opts(conf: cfg.ConfigOpts) -> None:
    for group, opts in messaging_opts.list_opts():
        if group == "oslo_messaging_rabbit":
            conf.register_opts(opts, group=group)


def check_options(conf: cfg.ConfigOpts) -> None:
    """The ``[oslo_messaging_rabbit]`` values of :data:`RABBIT_BOUNDS` are
    within their bounds.

    :raises errors.BrokerRefused: naming the option, its value and the file that
        sets it.
    """
    _register_rabbit_opts(conf)
    for option, (least, most) in RABBIT_BOUNDS.items():
        value = getattr(conf.oslo_messaging_rabbit, option)
        if least <= value and (most is None or value <= most):
            continue
        location = conf.get_location(option, "oslo_messaging_rabbit")
        where = f" in {location.detail}" if location and location.detail \
            else ""
        bound = f"at least {least}" if most is None else \
            f"between {least} and {most}"
        raise errors.BrokerRefused(
            f"[oslo_messaging_rabbit] {option} = {value}{where}: must be "
            f"{bound}; fix the value in the configuration file")


def _ssl(conf: cfg.ConfigOpts) -> bool | dict:
    """kombu's ``ssl`` argument from ``[oslo_messaging_rabbit]``, as
    oslo.messaging's rabbit driver builds it.

    :raises errors.BrokerRefused: a certificate or key file it names cannot be
        read.
    """
    _register_rabbit_opts(conf)
    rabbit = conf.oslo_messaging_rabbit
    if not rabbit.ssl:
        return False
    for option in ("ssl_ca_file", "ssl_cert_file", "ssl_key_file"):
        # kombu would raise the same OSError on every attempt, which
        # check() takes for a broker not there yet.
        path = getattr(rabbit, option)
        if path:
            try:
                open(path, "rb").close()
            except OSError as e:
                raise errors.BrokerRefused(
                    f"[oslo_messaging_rabbit] {option} {path}: "
                    f"{e.strerror}; fix the option or the file") from None
    params = {}
    if rabbit.ssl_ca_file:
        params.update(ca_certs=rabbit.ssl_ca_file,
                      cert_reqs=ssl.CERT_REQUIRED)
    if rabbit.ssl_cert_file:
        params["certfile"] = rabbit.ssl_cert_file
    if rabbit.ssl_key_file:
        params["keyfile"] = rabbit.ssl_key_file
    return params or True


def check(conf: cfg.ConfigOpts, budget: float) -> None:
    """Connect to the broker (any host of ``transport_url``) and log in,
    retrying for at most ``budget`` seconds.

    :raises errors.BrokerRefused: the broker rejected the user, password or
        virtual host, ``transport_url`` is not a RabbitMQ URL, a TLS file
        of ``[oslo_messaging_rabbit]`` cannot be read or one of its values
        no connection can use (:func:`check_options`).
    :raises errors.BrokerUnavailable: nothing answered within ``budget``.
    """
    import amqp.exceptions
    import kombu

    urls = kombu_urls(conf)
    # Here, not only when oslo.messaging connects: kombu's connection
    # below uses none of them, so they would pass.
    check_options(conf)
    use_ssl = _ssl(conf)
    deadline = time.monotonic() + budget
    where = errors.broker_hosts(conf)
    last: Exception | None = None
    while True:
        for url in urls:
            left = deadline - time.monotonic()
            connection = kombu.Connection(
                url, ssl=use_ssl, connect_timeout=max(0.2, min(left, 5.0)))
            try:
                # One attempt: connect() makes two, 2 s apart.
                connection.ensure_connection(
                    max_retries=0, reraise_as_library_errors=False)
                return
            except amqp.exceptions.AccessRefused as e:
                raise errors.BrokerRefused(
                    f"the message broker at {where} refused the login "
                    f"({e.reply_text if hasattr(e, 'reply_text') else e}); "
                    f"fix the user, password or virtual host in [DEFAULT] "
                    f"transport_url") from None
            except amqp.exceptions.NotAllowed as e:
                raise errors.BrokerRefused(
                    f"the message broker at {where} does not allow this "
                    f"virtual host ({e}); fix [DEFAULT] transport_url"
                ) from None
            except Exception as e:   # refused, reset, timed out, DNS
                last = e
            finally:
                connection.release()
        if time.monotonic() + 0.5 > deadline:
            break
        time.sleep(0.5)
    raise errors.BrokerUnavailable(
        f"cannot reach the message broker at {where} within {budget:g}s "
        f"({last}); start RabbitMQ or fix [DEFAULT] transport_url")
