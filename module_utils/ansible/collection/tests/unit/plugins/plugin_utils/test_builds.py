# -*- coding: utf-8 -*-
# Copyright: mdtune maintainers
# Apache License 2.0 (see LICENSE in the collection)
"""What builds.py promises: which build a host's architecture gets, and what a host without one is told."""

from __future__ import annotations

import os

import pytest

from ansible_collections.mdtune.mdraid.plugins.plugin_utils import builds

ALL = ["aarch64", "ppc64le", "x86_64"]


@pytest.mark.parametrize(
    "reported, build",
    [
        ("x86_64", "x86_64"),
        ("amd64", "x86_64"),
        ("aarch64", "aarch64"),
        ("arm64", "aarch64"),
        ("ppc64le", "ppc64le"),
        ("ppc64el", "ppc64le"),
        ("  aarch64\n", "aarch64"),
        ("ARM64", "aarch64"),
    ],
)
def test_each_spelling_of_an_architecture_gets_its_build(reported, build):
    assert builds.module_for("mdtune", reported, ALL) == ("mdtune.mdraid.mdtune_%s" % build, None)
    assert builds.module_for("mdtune_info", reported, ALL) == (
        "mdtune.mdraid.mdtune_info_%s" % build,
        None,
    )


def test_an_architecture_without_a_build_fails_naming_it_and_the_builds_carried():
    module, msg = builds.module_for("mdtune", "s390x", ALL)
    assert module is None
    assert "s390x" in msg
    assert "builds: aarch64, ppc64le, x86_64" in msg
    assert "binaries/mdtune-s390x" in msg


def test_a_collection_carrying_only_x86_64_refuses_aarch64():
    module, msg = builds.module_for("mdtune_info", "aarch64", ["x86_64"])
    assert module is None
    assert "architecture is aarch64" in msg and "builds: x86_64" in msg


def test_a_host_that_reports_nothing_is_refused():
    module, msg = builds.module_for("mdtune", "", ALL)
    assert module is None and "cannot tell" in msg


def test_only_the_two_module_names_have_builds():
    with pytest.raises(ValueError):
        builds.module_for("mdtune_x86_64", "x86_64", ALL)


def test_carried_lists_the_binaries_directory(tmp_path):
    for name in ("mdtune-x86_64", "mdtune-aarch64", "README", "mdtune-ppc64le.sig.d"):
        (tmp_path / name).write_text("")
    assert builds.carried(str(tmp_path)) == ["aarch64", "x86_64"]


def test_carried_is_empty_without_a_binaries_directory(tmp_path):
    assert builds.carried(str(tmp_path / "missing")) == []


def test_the_default_binaries_directory_is_the_collections():
    parts = os.path.normpath(builds.BINARIES).split(os.sep)
    assert parts[-1] == "binaries" and parts[-2] == "mdraid"
