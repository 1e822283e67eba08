"""Exceptions that cross the RPC boundary.

Only the classes here are rebuilt on the client side (``rpc.ALLOWED_EXMODS``);
they carry their whole message in ``args[0]`` so oslo.messaging can
serialize them and the client re-raises the same class with the same text.
"""


class SchedulerException(Exception):
    """Base of the expected errors; the message is the only argument."""

    def __init__(self, message: str = ""):
        super().__init__(message)

    @property
    def message(self) -> str:
        return self.args[0] if self.args else ""


class InvalidRequest(SchedulerException):
    """The request spec is malformed; the message names the field."""


class NoValidHost(SchedulerException):
    """No host can take the request; the message says why, per filter."""


class ConfigError(SchedulerException):
    """A configuration value cannot be used; the message names the option."""


class NotFound(SchedulerException):
    """An admin command named a host, service or aggregate that is absent."""


class ServiceUnavailable(SchedulerException):
    """The scheduler cannot answer now for a reason outside the request
    (its database is read-only, gone, or without a schema); the message
    names it and the fix. Nothing was claimed."""


class CallerGone(ServiceUnavailable):
    """The caller of a request stopped waiting for its reply (its RPC
    timeout, ``[DEFAULT] rpc_response_timeout``, passed) before one of the
    request's database transactions began or committed: the request is
    dropped, nothing claimed. The caller has re-sent it (answered there)
    or given up."""
