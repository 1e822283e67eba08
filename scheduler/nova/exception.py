"""The refusal nova's conductor recognises as its own.

Nova's RPC rebuilds remote exceptions only from ``nova.exception``
(``allowed_remote_exmods``), by module and class name; any other class
reaches the conductor as a ``RemoteError``, which its move tasks do not
catch. oslo.messaging names an exception by its class's ``__module__`` and
``__name__``, so this class is serialized as ``nova.exception.NoValidHost``
and nova rebuilds its own class with our message as the only argument.
"""


class NoValidHost(Exception):
    """No host can take the request; the message says why (per filter), or
    names the field the request cannot be honoured for."""


NoValidHost.__module__ = "nova.exception"
