# -*- coding: utf-8 -*-
# Copyright: mdtune maintainers
# Apache License 2.0 (see LICENSE in the collection)
"""Which of the collection's mdtune builds a managed host runs.

The collection carries one static binary per CPU architecture, binaries/mdtune-<arch>, each
also a module of its own (mdtune_<arch>, mdtune_info_<arch>). The action plugins of mdtune and
mdtune_info ask the host for its architecture and run the module of that build; this file holds
what they decide, without Ansible's objects, so that the unit tests can check it alone.
"""

from __future__ import annotations

import os
import re

# How hosts spell an architecture (uname -m, Ansible's facts) -> the name of the builds.
ALIASES = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
    "ppc64le": "ppc64le",
    "ppc64el": "ppc64le",
}

BINARIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "binaries")

_BUILD = re.compile(r"^mdtune-([A-Za-z0-9_]+)$")


def normalize(arch):
    """The build name for an architecture as a host reports it (surrounding blanks dropped)."""
    arch = str(arch or "").strip()
    return ALIASES.get(arch.lower(), arch)


def carried(binaries=BINARIES):
    """The architectures the collection carries a build for, sorted; none when there is no dir."""
    try:
        names = os.listdir(binaries)
    except OSError:
        return []
    return sorted(m.group(1) for m in map(_BUILD.match, names) if m)


def module_for(face, arch, builds):
    """(module name, None) of the build of FACE (mdtune or mdtune_info) for ARCH, or (None, msg).

    ARCH is as the host reports it; BUILDS the architectures carried. The message names the
    architecture and the builds, so that a user knows which one the host needs.
    """
    if face not in ("mdtune", "mdtune_info"):
        raise ValueError("no such module: %s" % face)
    wanted = normalize(arch)
    if not wanted:
        return None, "mdtune: cannot tell this host's CPU architecture (uname -m printed nothing)"
    if wanted in builds:
        return "mdtune.mdraid.%s_%s" % (face, wanted), None
    have = ", ".join(builds) if builds else "none"
    return None, (
        "mdtune: this host's CPU architecture is %s, and the collection mdtune.mdraid carries no "
        "build for it (builds: %s). Install a collection built with binaries/mdtune-%s "
        "(module_utils/ansible/build-collection.sh --release builds x86_64, aarch64 and ppc64le)"
        % (wanted, have, wanted)
    )
