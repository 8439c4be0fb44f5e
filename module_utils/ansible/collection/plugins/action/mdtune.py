# -*- coding: utf-8 -*-
# Copyright: mdtune maintainers
# Apache License 2.0 (see LICENSE in the collection)
"""Runs mdtune.mdraid.mdtune as the build for the managed host's CPU.

A binary module is copied to the host as it is, so the plain name must pick the build: this
action plugin finds the host's architecture (the fact or inventory variable
ansible_architecture when there is one, else `uname -m` over the connection, which needs no
Python on the host), and runs the module mdtune_<arch>. A host whose architecture the collection
has no build for fails before anything is copied, with a message naming its architecture and
the builds the collection carries.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.mdtune.mdraid.plugins.plugin_utils import builds


class ActionModule(ActionBase):
    """The mdtune module, through the build for the host's architecture."""

    FACE = "mdtune"
    TRANSFERS_FILES = False  # _execute_module makes the remote tmp when it copies the build
    _requires_connection = True

    def host_arch(self, task_vars):
        """The host's architecture as it reports it: the variable, else `uname -m`."""
        facts = task_vars.get("ansible_facts") or {}
        arch = facts.get("architecture") or task_vars.get("ansible_architecture")
        if arch:
            return str(arch)
        res = self._low_level_execute_command("uname -m", sudoable=False)
        if res.get("rc") != 0:
            return ""
        return res.get("stdout", "").strip()

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        arch = self.host_arch(task_vars)
        module, msg = builds.module_for(self.FACE, arch, builds.carried())
        if module is None:
            result.update(failed=True, changed=False, msg=msg)
            return result
        try:
            result.update(
                self._execute_module(
                    module_name=module, module_args=self._task.args, task_vars=task_vars
                )
            )
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
