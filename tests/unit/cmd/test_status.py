import pytest

from scheduler.cmd import status


def test_a_mistyped_upgrade_command_is_named_not_run(capsys, monkeypatch):
    ran = []
    monkeypatch.setattr(status.upgrade_checks.Checks, "check",
                        lambda self: ran.append(1) or 0)
    assert status.main(["upgrade", "chek"]) == status.ERROR
    assert capsys.readouterr().err.splitlines() == [
        "ERROR: unknown command 'upgrade chek'; expected 'upgrade check'"]
    assert ran == []


@pytest.mark.parametrize("argv", (["upgrade", "check"],
                                  ["upgrade", "check", "--json"]))
def test_upgrade_check_runs_the_checks(argv, monkeypatch):
    ran = []
    monkeypatch.setattr(status.upgrade_checks.Checks, "check",
                        lambda self: ran.append(1) or 0)
    assert status.main(argv) == 0
    assert ran == [1]
