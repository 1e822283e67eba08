"""Nova's own scheduler API (RPC 4.x), so nova's unmodified conductor can
use this service as its nova-scheduler (``doc/source/architecture.rst``
"Nova's own conductor as a client").

One module per concern: ``primitives`` reads nova's versioned-object
primitives into our request spec, ``selections`` writes the replies,
``exception`` is the refusal nova recognises, ``casts`` acts on the fanout
casts, ``endpoint`` is the RPC endpoint tying them together. Nothing here
imports nova.
"""
