"""SIGHUP's re-read of the files: what changed, logged with the values
in force."""
from __future__ import annotations

from scheduler import conf as sched_conf
from scheduler.conf import reload


def test_a_change_is_logged_from_the_value_in_force(tmp_path,
                                                    oslo_log_lines):
    """oslo.config logged 'changed from [None] to [-2]' for a multiplier
    whose default, 1.0, was in force; and 'to [true]', the text."""
    path = tmp_path / "scheduler.conf"
    path.write_text("[filter_scheduler]\nhost_subset_size = 2\n")
    conf = sched_conf.load(["--config-file", str(path)])
    ours = oslo_log_lines("scheduler.conf.reload")
    theirs = oslo_log_lines("oslo_config.cfg")
    path.write_text("[DEFAULT]\ndebug = true\n[filter_scheduler]\n"
                    "host_subset_size = 02\nram_weight_multiplier = -2\n")
    assert reload.mutate(conf) == {
        (None, "debug"): (False, True),
        ("filter_scheduler", "ram_weight_multiplier"): (1.0, -2.0)}
    assert [line.split(" [-] ")[1] for line in ours] == [
        "[DEFAULT] debug changed from False to True",
        "[filter_scheduler] ram_weight_multiplier changed from 1.0 to -2.0"]
    assert not [line for line in theirs if "changed from" in line]
    # An option dropped from the files is back at its default.
    path.write_text("[filter_scheduler]\nhost_subset_size = 2\n")
    del ours[:]
    assert reload.mutate(conf, log=False) == {
        (None, "debug"): (True, False),
        ("filter_scheduler", "ram_weight_multiplier"): (-2.0, 1.0)}
    assert ours == []
