"""SchedulerAPI's version cap for the stack methods, on oslo.messaging's
in-memory fake transport (nothing is sent when the cap refuses)."""
import oslo_messaging as messaging
import pytest

from scheduler import exception
from scheduler.rpc.client import SchedulerAPI


@pytest.mark.parametrize("call", [
    lambda api: api.select_stack({}, {"stack_id": "x", "resources": {}}),
    lambda api: api.rank_stack({}, {"stack_id": "x", "resources": {}}),
    lambda api: api.release_stack({}, "x"),
])
def test_stack_methods_need_1_4(conf, call):
    conf.set_override("scheduler", "1.2", group="upgrade_levels")
    transport = messaging.get_rpc_transport(conf, url="fake://")
    try:
        api = SchedulerAPI(conf, transport=transport)
        with pytest.raises(exception.InvalidRequest,
                           match=r"_stack needs RPC API 1.4 but "
                                 r"\[upgrade_levels\] scheduler caps this "
                                 r"client at 1.2"):
            call(api)
    finally:
        transport.cleanup()
