"""How a stack and its consumers are named: the stack id, derived
consumer uuids."""
import pytest

from scheduler import exception
from scheduler.stacks.ids import canonical_id
from scheduler.stacks.ids import consumer_uuid
from scheduler.stacks.stack import Stack
from tests.unit.fakes import spec_dict

SID = "5a0b0c0d-0000-4000-8000-000000000001"


def _stack(**resources):
    return {"stack_id": SID, "project_id": "p1", "resources": resources}


@pytest.mark.parametrize("written", [SID, SID.upper(), SID.replace("-", "")])
def test_a_stack_id_is_canonical_however_written(written):
    assert canonical_id(written) == SID


@pytest.mark.parametrize("bad", ["{" + SID + "}", "urn:uuid:" + SID,
                                 SID + "\n", None, 7])
def test_a_stack_id_is_read_by_the_request_uuid_rule(bad):
    with pytest.raises(exception.InvalidRequest) as e:
        canonical_id(bad, "stack.stack_id")
    assert e.value.message == (
        f"stack.stack_id: expected a uuid (32 hex digits, dashes optional), "
        f"got {bad!r}")


def test_consumers_are_derived_from_stack_name_and_index():
    raw = _stack(web={"spec": spec_dict(num_instances=2)})
    one = Stack.from_primitives(raw)
    again = Stack.from_primitives(raw)
    assert one.consumers == again.consumers == [
        consumer_uuid(SID, "web", 0),
        consumer_uuid(SID, "web", 1)]
    assert len(set(one.consumers)) == 2
    assert one.definition == again.definition
    other = Stack.from_primitives(
        {**raw, "stack_id": "5a0b0c0d-0000-4000-8000-000000000002"})
    assert not set(other.consumers) & set(one.consumers)
