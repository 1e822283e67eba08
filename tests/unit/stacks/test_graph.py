"""Heat's creation batches and the refusal of cycles."""
import pytest

from scheduler import exception
from scheduler.stacks import graph


def on(*names, field="depends_on"):
    return dict.fromkeys(names, field)


def test_batches_follow_dependencies_names_sorted_within_a_batch():
    deps = {"web2": on("db", "net"), "web1": on("db"), "db": on("net"),
            "net": on(), "lb": on("web1", "web2"), "volume": on()}
    assert graph.batches(deps) == [["net", "volume"], ["db"],
                                   ["web1", "web2"], ["lb"]]


def test_independent_resources_form_one_batch():
    assert graph.batches({"c": on(), "a": on(), "b": on()}) == [
        ["a", "b", "c"]]


def test_a_cycle_is_refused_with_its_path():
    deps = {"a": on("b"), "b": on("c"), "c": on("a"), "d": on(),
            "e": on("a")}
    with pytest.raises(exception.InvalidRequest) as e:
        graph.batches(deps)
    assert e.value.message == "depends_on cycle: a -> b -> c -> a"


def test_the_cycle_named_is_the_cycle_not_what_waits_on_it():
    # x waits on the cycle b <-> c but is not part of it.
    deps = {"x": on("b"), "b": on("c"), "c": on("b")}
    with pytest.raises(exception.InvalidRequest,
                       match=r"^depends_on cycle: b -> c -> b$"):
        graph.batches(deps)


@pytest.mark.parametrize("a_on_b, b_on_a, message", [
    ("different_host", "different_host",
     "different_host cycle: a -> b -> a (a relation orders the two "
     "resources it relates: name it on one of them only)"),
    ("same_host", "depends_on", "depends_on/same_host cycle: a -> b -> a"),
])
def test_a_cycle_names_the_fields_that_make_it(a_on_b, b_on_a, message):
    # It said "depends_on cycle" for relations that named each other.
    deps = {"a": on("b", field=a_on_b), "b": on("a", field=b_on_a)}
    with pytest.raises(exception.InvalidRequest) as e:
        graph.batches(deps)
    assert e.value.message == message


def test_a_longer_cycle_through_a_relation_gets_no_one_side_advice():
    # A HOT template's hint (get_resource) is a relation on a longer cycle.
    deps = {"web": on("app"), "app": on("db", field="different_host"),
            "db": on("web")}
    with pytest.raises(exception.InvalidRequest) as e:
        graph.batches(deps)
    assert e.value.message == (
        "depends_on/different_host cycle: app -> db -> web -> app")
