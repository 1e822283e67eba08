"""Which server of which stack a boot's Heat hints name, and which
instance of a placed stack's resource that is."""
from scheduler.heat.hints import heat_server
from scheduler.heat.hints import HeatServer
from scheduler.heat.hints import instance_of

ROOT = "7D1B0C3E-2A4F-4E5B-9C6D-8E7F0A1B2C3D"


def hints(path, name, root=ROOT):
    """As nova's RequestSpec holds Heat's hints: lists of strings."""
    return {"heat_root_stack_id": [root], "heat_stack_id": ["x"],
            "heat_stack_name": ["x"], "heat_path_in_stack": path,
            "heat_resource_name": [name], "heat_resource_uuid": ["y"]}


def test_a_root_server_is_named_by_its_resource():
    server = heat_server(hints(["web-stack"], "db"))

    assert server == HeatServer(ROOT.lower(), ("db",))
    assert server.key == "db"


def test_a_nested_server_is_named_by_the_parent_resources_from_the_root():
    server = heat_server(hints(
        ["web-stack", "tier,web-stack-tier-abc", "0,web-stack-tier-abc-0-d"],
        "web"))

    assert server.path == ("tier", "0", "web")


def test_a_parent_resource_name_may_hold_a_comma():
    server = heat_server(hints(["s", "a,b,s-a,b-x1"], "web"))

    assert server.path == ("a,b", "web")


def test_the_1x_api_may_give_each_hint_as_a_string():
    server = heat_server({"heat_root_stack_id": ROOT,
                          "heat_path_in_stack": "s",
                          "heat_resource_name": "db"})

    assert server.path == ("db",)


def test_hints_that_are_not_all_heats_name_no_server():
    assert heat_server({}) is None
    assert heat_server({"heat_root_stack_id": [ROOT]}) is None
    assert heat_server(hints(["s"], "db", root="not-a-uuid")) is None
    assert heat_server(hints([], "db")) is None
    assert heat_server(hints(["s", "no-comma"], "db")) is None


def test_a_server_of_its_own_is_instance_0_of_its_resource():
    resources = {"db": 1, "app/web": 1}

    assert instance_of(HeatServer(ROOT, ("db",)), resources) == ("db", 0)
    assert instance_of(HeatServer(ROOT, ("app", "web")), resources) == \
        ("app/web", 0)


def test_a_group_member_is_the_instance_of_its_index():
    resources = {"grp": 3}

    assert instance_of(HeatServer(ROOT, ("grp", "2")), resources) == \
        ("grp", 2)
    assert instance_of(HeatServer(ROOT, ("grp", "3")), resources) is None


def test_a_server_the_plan_does_not_have_is_no_instance():
    resources = {"db": 1, "grp": 2}

    assert instance_of(HeatServer(ROOT, ("web",)), resources) is None
    assert instance_of(HeatServer(ROOT, ("grp", "x")), resources) is None
