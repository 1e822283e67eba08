"""Heat's creation batches and the refusal of cycles."""
import pytest

from scheduler import exception
from scheduler.stacks import graph


def test_batches_follow_dependencies_names_sorted_within_a_batch():
    deps = {"web2": {"db", "net"}, "web1": {"db"}, "db": {"net"},
            "net": set(), "lb": {"web1", "web2"}, "volume": set()}
    assert graph.batches(deps) == [["net", "volume"], ["db"],
                                   ["web1", "web2"], ["lb"]]


def test_independent_resources_form_one_batch():
    assert graph.batches({"c": (), "a": (), "b": ()}) == [["a", "b", "c"]]


def test_a_cycle_is_refused_with_its_path():
    deps = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set(), "e": {"a"}}
    with pytest.raises(exception.InvalidRequest) as e:
        graph.batches(deps)
    assert e.value.message == "depends_on cycle: a -> b -> c -> a"


def test_the_cycle_named_is_the_cycle_not_what_waits_on_it():
    # x waits on the cycle b <-> c but is not part of it.
    deps = {"x": {"b"}, "b": {"c"}, "c": {"b"}}
    with pytest.raises(exception.InvalidRequest,
                       match=r"^depends_on cycle: b -> c -> b$"):
        graph.batches(deps)
