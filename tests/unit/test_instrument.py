"""scheduler.instrument: database failures become ServiceUnavailable."""
from __future__ import annotations

from oslo_messaging.rpc import dispatcher as rpc_dispatcher
import pytest
from sqlalchemy import exc as sa_exc

from scheduler import conf as sched_conf
from scheduler import exception
from scheduler import instrument


class Endpoint:
    def __init__(self, error=None):
        self.conf = sched_conf.load([])
        self.conf.set_override("connection", "sqlite:////srv/s.sqlite",
                               group="database")
        self.error = error

    @instrument.rpc_method
    def call(self, ctxt, value=None):
        if self.error:
            raise self.error
        return value


def test_passes_arguments_and_result():
    assert Endpoint().call({}, 5) == 5
    assert Endpoint().call({"request_id": "req-1"}, value=6) == 6


def test_read_only_database_is_an_expected_service_unavailable():
    error = sa_exc.OperationalError("INSERT INTO allocations", {},
                                    Exception("attempt to write a "
                                              "readonly database"))
    with pytest.raises(rpc_dispatcher.ExpectedException) as raised:
        Endpoint(error).call({})
    original = raised.value.exc_info[1]
    assert isinstance(original, exception.ServiceUnavailable)
    assert original.message.startswith(
        "database /srv/s.sqlite is read-only for this user")
    assert "INSERT" not in original.message
