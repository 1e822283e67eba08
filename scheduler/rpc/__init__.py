"""The RPC edge: where calls arrive over RabbitMQ and answers leave.

- ``transport``: transport, targets, serializer, the exceptions a caller
  may rebuild, and the server's dispatcher (no reply carries the
  server's traceback).
- ``endpoint``: the 1.x API (``SchedulerManager``).
- ``instrument``: what every RPC method gets (request ids, metrics,
  notifications, one line for an expected failure).
- ``notifications``: the ``.start``/``.end``/``.error`` notifications.
- ``malformed``: a message that cannot be decoded costs one warning.
- ``client``: ``SchedulerAPI``, for conductor-like callers.
- ``broker``: is the broker there, and does it take our credentials.
"""
