# -*- coding: utf-8 -*-
# Copyright: mdtune maintainers
# Apache License 2.0 (see LICENSE in the collection)
"""What the action plugins promise: the build for the host's CPU runs; without one, nothing runs."""

from __future__ import annotations

from unittest.mock import MagicMock

import pytest

from ansible_collections.mdtune.mdraid.plugins.action import mdtune as action_mdtune
from ansible_collections.mdtune.mdraid.plugins.action import mdtune_info as action_info
from ansible_collections.mdtune.mdraid.plugins.plugin_utils import builds


def make(cls, args=None, uname="x86_64\n", rc=0):
    task = MagicMock()
    task.args = args if args is not None else {"arrays": [{"name": "md*"}]}
    task.async_val = 0
    task.check_mode = False
    connection = MagicMock()
    connection._shell.tmpdir = None
    plugin = cls(task, connection, MagicMock(), MagicMock(), MagicMock(), MagicMock())
    plugin._execute_module = MagicMock(return_value={"changed": True, "msg": "ran"})
    plugin._low_level_execute_command = MagicMock(
        return_value={"rc": rc, "stdout": uname, "stderr": ""}
    )
    plugin._remove_tmp_path = MagicMock()
    return plugin


@pytest.fixture(autouse=True)
def three_builds(monkeypatch):
    monkeypatch.setattr(builds, "carried", lambda binaries=None: ["aarch64", "ppc64le", "x86_64"])


def test_without_facts_the_host_is_asked_with_uname_and_its_build_runs():
    plugin = make(action_mdtune.ActionModule, uname="aarch64\n")
    result = plugin.run(task_vars={})
    plugin._low_level_execute_command.assert_called_once_with("uname -m", sudoable=False)
    call = plugin._execute_module.call_args.kwargs
    assert call["module_name"] == "mdtune.mdraid.mdtune_aarch64"
    assert call["module_args"] == {"arrays": [{"name": "md*"}]}
    assert result["changed"] is True and result["msg"] == "ran"


def test_the_gathered_fact_wins_and_no_command_runs():
    plugin = make(action_mdtune.ActionModule)
    plugin.run(
        task_vars={"ansible_facts": {"architecture": "ppc64le"}, "ansible_architecture": "x86_64"}
    )
    plugin._low_level_execute_command.assert_not_called()
    assert plugin._execute_module.call_args.kwargs["module_name"] == "mdtune.mdraid.mdtune_ppc64le"


def test_an_inventory_variable_names_the_architecture():
    plugin = make(action_info.ActionModule)
    plugin.run(task_vars={"ansible_architecture": "arm64"})
    plugin._low_level_execute_command.assert_not_called()
    assert (
        plugin._execute_module.call_args.kwargs["module_name"]
        == "mdtune.mdraid.mdtune_info_aarch64"
    )


def test_a_host_without_a_build_fails_and_nothing_is_copied_or_run():
    plugin = make(action_mdtune.ActionModule, uname="s390x\n")
    result = plugin.run(task_vars={})
    plugin._execute_module.assert_not_called()
    assert result["failed"] is True and result["changed"] is False
    assert "s390x" in result["msg"] and "aarch64, ppc64le, x86_64" in result["msg"]


def test_a_uname_that_fails_is_refused_not_guessed():
    plugin = make(action_info.ActionModule, uname="", rc=127)
    result = plugin.run(task_vars={})
    plugin._execute_module.assert_not_called()
    assert result["failed"] is True and "cannot tell" in result["msg"]


def test_the_remote_temporary_directory_is_removed_after_the_run():
    plugin = make(action_mdtune.ActionModule)
    plugin._connection._shell.tmpdir = "/tmp/ansible-tmp-1"
    plugin.run(task_vars={})
    plugin._remove_tmp_path.assert_called_once_with("/tmp/ansible-tmp-1")
