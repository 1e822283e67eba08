"""A stack's stored definition read back: its consumers, and what changed
between two."""
from scheduler.stacks.definition import changes
from scheduler.stacks.definition import consumers_of
from scheduler.stacks.ids import consumer_uuid
from scheduler.stacks.stack import Stack
from tests.unit.fakes import spec_dict

SID = "5a0b0c0d-0000-4000-8000-000000000001"


def _stack(**resources):
    return {"stack_id": SID, "project_id": "p1", "resources": resources}


def test_a_definition_records_the_stacks_consumers():
    stack = Stack.from_primitives(_stack(
        net={"spec": None}, web={"spec": spec_dict(num_instances=2)}))
    assert consumers_of(stack.definition) == stack.consumers == [
        consumer_uuid(SID, "web", 0), consumer_uuid(SID, "web", 1)]


def test_changes_name_the_fields_that_differ():
    old = Stack.from_primitives(_stack(
        web={"spec": spec_dict()}, db={"spec": spec_dict()}))
    new = Stack.from_primitives(_stack(
        web={"spec": spec_dict(flavor={"vcpus": 2})},
        cache={"spec": None}))
    assert changes(old.definition, new.definition) == [
        "resources.cache added", "resources.db removed",
        "resources.web.spec.flavor.vcpus: 1 -> 2"]
    assert changes(old.definition, old.definition) == []


def test_a_flavor_swapped_for_another_is_named_once():
    old = Stack.from_primitives(_stack(web={"spec": spec_dict()}))
    new = Stack.from_primitives(_stack(web={"spec": spec_dict(
        flavor={"name": "m1.medium", "memory_mb": 4096, "vcpus": 2})}))
    assert changes(old.definition, new.definition) == [
        "resources.web.spec.flavor changed"]


def test_a_long_list_that_changed_says_how():
    """Both sides of a long list are cut alike (a resource group's count
    raised showed its uuids twice, the same): say what differs."""
    old = Stack.from_primitives(_stack(
        web={"spec": spec_dict(num_instances=2)}))
    more = Stack.from_primitives(_stack(
        web={"spec": spec_dict(num_instances=3)}))
    assert changes(old.definition, more.definition) == [
        "resources.web.spec.instance_uuids: 2 -> 3 items"]
    given = [consumer_uuid(SID, "web", i) for i in range(2)] + [
        "aaaaaaaa-0000-4000-8000-000000000001"]
    swapped = Stack.from_primitives(_stack(
        web={"spec": spec_dict(instance_uuids=given)}))
    assert changes(more.definition, swapped.definition) == [
        f"resources.web.spec.instance_uuids.2: "
        f"\"{consumer_uuid(SID, 'web', 2)}\" -> "
        f"\"aaaaaaaa-0000-4000-8000-000000000001\""]
