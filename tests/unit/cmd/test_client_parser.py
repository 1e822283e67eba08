"""scheduler.cmd.client_parser: scheduler-client's flags that exclude
or need each other are usage errors (exit 2)."""
from __future__ import annotations

import pytest

from scheduler.cmd import client_parser

UUID1 = "0b0a2d4e-7b0c-4a43-9e8f-1f6d1d0b6c01"


def test_num_instances_and_instance_uuid_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as e:
        client_parser.parse_args(["select", "--num-instances", "2",
                                  "--instance-uuid", UUID1])
    assert e.value.code == 2
    assert "exclude each other" in capsys.readouterr().err


def test_group_member_needs_a_policy(capsys):
    with pytest.raises(SystemExit) as e:
        client_parser.parse_args(["select", "--group-member", UUID1])
    assert e.value.code == 2
    assert "--group-member needs --group-policy" in capsys.readouterr().err


def test_group_uuid_needs_a_policy(capsys):
    with pytest.raises(SystemExit) as e:
        client_parser.parse_args(["select", "--group-uuid", UUID1])
    assert e.value.code == 2
    assert "--group-uuid needs --group-policy" in capsys.readouterr().err


def test_unknown_group_policy_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        client_parser.parse_args(["select", "--group-policy", "spread"])
    assert e.value.code == 2
    assert "invalid choice: 'spread'" in capsys.readouterr().err
