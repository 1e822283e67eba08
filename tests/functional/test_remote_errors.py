"""What a caller learns from a failed call: the error's class and message,
never the server's traceback (its file paths are the server's business;
its log keeps them)."""
from __future__ import annotations

import os

import oslo_messaging as messaging
import pytest

import scheduler
from scheduler import exception

FLAVOR = {"memory_mb": 1024, "vcpus": 1, "root_gb": 10}
#: Where the server's code lives (it runs from the same checkout).
SERVER_PATHS = (os.path.dirname(scheduler.__file__),
                os.path.dirname(messaging.__file__))


def everything_the_caller_holds(error: BaseException) -> str:
    """The remote error as text, every way a caller can read it: str, the
    args, and every attribute oslo.messaging's deserializer left on it
    (RemoteError's ``traceback``, our classes' ``message``)."""
    return "\n".join([str(error), repr(error.args),
                      *(f"{k}={v!r}" for k, v in vars(error).items())])


def assert_no_server_traceback(error: BaseException) -> None:
    text = everything_the_caller_holds(error)
    assert "Traceback" not in text, text
    assert 'File "' not in text, text
    for path in SERVER_PATHS:
        assert path not in text, text


@pytest.fixture
def serving(make_deployment):
    deployment = make_deployment()
    deployment.fleet(2)
    deployment.start_server()
    return deployment


def test_expected_errors_reach_the_caller_without_the_servers_traceback(
        serving):
    with pytest.raises(exception.InvalidRequest) as caught:
        serving.api.select_destinations(
            {}, {"flavor": {**FLAVOR, "memory_mb": -1}})
    assert caught.value.message.startswith("spec.flavor.memory_mb: -1")
    assert_no_server_traceback(caught.value)

    with pytest.raises(exception.NoValidHost) as caught:
        serving.api.select_destinations(
            {}, {"flavor": {**FLAVOR, "memory_mb": 10 ** 9}})
    assert caught.value.message.startswith("No valid host")
    assert_no_server_traceback(caught.value)

    # A call oslo.messaging's dispatcher refuses before our code runs.
    call = serving.api.client.prepare(version="1.0").call
    with pytest.raises(messaging.RemoteError) as caught:
        call({}, "drop_all_tables")
    assert caught.value.exc_type == "NoSuchMethod"
    assert_no_server_traceback(caught.value)

    # Serving goes on, and nothing of the above was an error to the server.
    assert serving.api.select_destinations({}, {"flavor": FLAVOR})
    assert "Traceback" not in serving.server_log()
