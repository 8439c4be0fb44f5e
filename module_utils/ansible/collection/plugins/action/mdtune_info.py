# -*- coding: utf-8 -*-
# Copyright: mdtune maintainers
# Apache License 2.0 (see LICENSE in the collection)
"""Runs mdtune.mdraid.mdtune_info as the build for the managed host's CPU (see mdtune.py)."""

from __future__ import annotations

from ansible_collections.mdtune.mdraid.plugins.action.mdtune import ActionModule as _Mdtune


class ActionModule(_Mdtune):
    """The mdtune_info module, through the build for the host's architecture."""

    FACE = "mdtune_info"
