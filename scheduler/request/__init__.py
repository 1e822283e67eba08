"""What a caller asks, validated at the edge: nothing below sees raw input.

- ``schema``: the one JSON schema a ``spec`` must satisfy.
- ``spec``: ``RequestSpec`` and its parts, built from a valid ``spec``.
- ``legacy``: nova 4.0's ``request_spec`` + ``filter_properties`` pair.
- ``unsupported``: what the scheduler does not model, refused by name.
- ``hints``: scheduler hints that name hosts, instances or groups.
- ``names``: the one rule for uuids and for host names.
- ``moves``: the one rule that tells a move from a client's retry.
"""
