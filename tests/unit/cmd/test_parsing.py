"""The command line every console script shares."""
from __future__ import annotations

import pytest

from scheduler.cmd import client
from scheduler.cmd import fleet
from scheduler.cmd import manage
from scheduler.cmd import parsing
from scheduler.cmd import server
from scheduler.cmd import status


@pytest.mark.parametrize("name, main", [
    ("scheduler-server", server.main), ("scheduler-manage", manage.main),
    ("scheduler-client", client.main), ("scheduler-fleet", fleet.main),
    ("scheduler-status", status.main)])
def test_version_is_the_commands_name_and_version(capsys, name, main):
    # The server and scheduler-status printed the version alone.
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"{name} {parsing.version()}\n"
