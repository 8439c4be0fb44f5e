"""
Keep Linux md RAID arrays tuned with the mdtune binary.

A thin state over the ``mdtune`` execution module (ship both: ``salt://_modules``
and ``salt://_states``, then ``saltutil.sync_all``). The binary reads before it
writes, so a state that is already in place costs reads only and reports no
changes. ``test=True`` runs the binary in check mode: the result is None with the
predicted changes, or True when nothing would change. A failed run gives result
False, mdtune's message and exit status in the comment, and what it rolled back.

``changes`` maps each changed array (kernel name) to its settings, plus the
system speed limits and the persisted files:

.. code-block:: yaml

    md0:
      group_thread_cnt: {old: 0, new: 8}
      stripe_cache_size: {old: 256, new: 4096}
    system:
      speed_limit_max: {old: 200000, new: 500000}
    persist:
      files: [/etc/mdtune/mdtune.json, ...]

Example:

.. code-block:: yaml

    hana_raid_tuned:
      mdtune.managed:
        - thread_policy: auto
        - speed_limit_max: 500000
        - arrays:
          - name: hana_data
            stripe_cache_size: 4096
          - name: hana_log
            sync_speed_min: 50000
        - persist: true

``name`` is only the state's label; it is not passed to the binary.

``from_pillar: true`` takes the desired state from the run's pillar ``mdtune``
(the execution module's ``mdtune.desired``, on the minion), the state's own
arguments overriding it key by key. The SUSE Manager / Uyuni formula does this,
so that its SLS renders the same without calling a custom function while it
renders: under salt-ssh a template's ``salt['mdtune.desired']()`` would run on
the target without the pillar, while the state run there carries it.

Transactional systems. ``mdtune.managed`` and ``mdtune.reverted`` refuse to run
inside a transactional-update snapshot (``transactional_update.apply``, or
``TRANSACTIONAL_UPDATE`` in the environment): there the sysfs writes would take
effect at once, while ``/etc/mdtune``, the udev rule and an installed binary
would appear only after the reboot. Apply them live (``state.apply``); the
formula's metadata tells SUSE Manager / Uyuni to.
"""

import difflib
import os

import salt.utils.args
from salt.exceptions import CommandExecutionError

# Salt's own arguments that may reach a state function's **kwargs; never passed on.
_SALT_KEYWORDS = frozenset(("name", "fun", "state", "saltenv"))


def __virtual__():
    if "mdtune.apply" in __salt__:
        return "mdtune"
    return (False, "mdtune: the mdtune execution module is not loaded (saltutil.sync_all)")


def managed(
    name,
    arrays=None,
    thread_policy=None,
    speed_limit_min=None,
    speed_limit_max=None,
    sync_io_depth=None,
    persist=None,
    reason=None,
    root=None,
    diff=None,
    binary=None,
    from_pillar=False,
    measure=None,
    revert_if_slower=None,
    **kwargs,
):
    """
    Ensure the md arrays carry the desired tuning (mdtune ``state: present``).

    name
        A label for the state; not passed to mdtune.

    arrays
        List of array entries, each with ``name`` (kernel name, glob or mdadm
        name) and/or ``uuid`` plus the settings to manage:
        ``group_thread_cnt``, ``stripe_cache_size``, ``preread_bypass_threshold``,
        ``skip_copy``, ``sync_speed_min``, ``sync_speed_max``, ``sync_io_depth``,
        ``sync_force_parallel``, ``reason``, ``sync_boost`` (``{sync_speed_min, sync_speed_max,
        sync_io_depth, during}``: in force only while the array resyncs, recovers or
        reshapes; ``mdtune --tick`` ends it with the sync). Default: every array.

    thread_policy
        ``auto`` (default), ``off``, an integer or ``{mode, value, min, max, combine}``.

    speed_limit_min, speed_limit_max
        System-wide resync limits in KiB/s; unmanaged when omitted.

    sync_io_depth
        System-wide sync I/Os in flight while an array is busy (Linux 6.16 and
        later); unmanaged when omitted.

    persist
        True: also keep the state across reboots and array re-assembly. False:
        remove what an earlier persist installed, keep the live values. Omitted:
        leave persistence as it is; when the persisted state would put other
        values back at the next boot, mdtune warns and is not compliant.

    measure
        Seconds (1..600): sample each array the run changes that long before and
        after its writes and report its ``effect`` (``faster``, ``slower``,
        ``same``, ``inconclusive``); the comment names each verdict.

    revert_if_slower
        With ``measure``: a ``slower`` verdict puts the run's writes back; the
        state then reports no change.

    reason
        Why these values (a ticket, a vendor note), at most 200 printable
        characters: persisted, shown by ``mdtune --show``/``--verify``, logged.

    root
        Prefix for every system path (tests, chroots).

    diff
        Ask mdtune for a textual diff (returned under ``changes:diff``).

    binary
        Path of the mdtune binary; default: pillar/config ``mdtune:binary``,
        then PATH, then /usr/local/sbin/mdtune.

    from_pillar
        Start from the run's pillar ``mdtune`` (``mdtune.desired``); the
        arguments above override it key by key. Default False: the state's
        arguments are the whole desired state, even when empty.
    """
    test = _test(kwargs)
    ret = {"name": name, "result": False, "changes": {}, "comment": ""}
    if _in_transaction():
        return _refuse_transaction(ret)
    given = {
        "arrays": arrays,
        "thread_policy": thread_policy,
        "speed_limit_min": speed_limit_min,
        "speed_limit_max": speed_limit_max,
        "sync_io_depth": sync_io_depth,
        "persist": persist,
        "reason": reason,
        "root": root,
        "binary": binary,
        "measure": measure,
        "revert_if_slower": revert_if_slower,
    }
    given = {key: value for key, value in given.items() if value is not None}
    given.update(_passthrough(kwargs))
    if from_pillar is True or str(from_pillar).lower() == "true":
        try:
            # The run's own pillar (overrides included), not a fresh compile: under salt-ssh
            # the target compiles none, the state run carries the master's.
            args = __salt__["mdtune.desired"]()
        except CommandExecutionError as exc:
            return _failed(ret, exc)
        args.update(given)
    else:
        args = given
    binary = args.pop("binary", None)
    # The state's own diff wins; the test mode is the run's.
    diff = args.pop("diff", None) if diff is None else diff
    args.pop("check_mode", None)
    missing = _missing_binary(binary)
    if missing:
        return _no_binary(ret, missing, test)
    try:
        result = __salt__["mdtune.apply"](
            check_mode=test,
            diff=diff,
            binary=binary,
            from_pillar=False,
            **args,
        )
    except CommandExecutionError as exc:
        return _failed(ret, exc)
    return _translate(ret, result, test, "tuned")


def reverted(name, root=None, binary=None, **kwargs):
    """
    Ensure the values mdtune changed are back to what they were before its first
    change, and that no persisted mdtune state is left (mdtune ``state: reverted``).

    name
        A label for the state; not passed to mdtune.

    root, binary
        As for :py:func:`managed`.
    """
    test = _test(kwargs)
    ret = {"name": name, "result": False, "changes": {}, "comment": ""}
    if _in_transaction():
        return _refuse_transaction(ret)
    missing = _missing_binary(binary)
    if missing:
        return _no_binary(ret, missing, test)
    try:
        result = __salt__["mdtune.revert"](
            root=root,
            check_mode=test,
            binary=binary,
            **_passthrough(kwargs),
        )
    except CommandExecutionError as exc:
        return _failed(ret, exc)
    return _translate(ret, result, test, "reverted")


def _test(kwargs):
    """test=True from the run (``__opts__``) or from the state's own ``test`` argument."""
    return bool(__opts__.get("test", False) or salt.utils.args.test_mode(**kwargs))


def _in_transaction():
    """True inside a transactional-update snapshot (Salt's own check where it is loaded)."""
    check = "transactional_update.in_transaction"
    if check in __salt__:
        try:
            if __salt__[check]():
                return True
        except CommandExecutionError:
            pass
    # transactional-update exports TRANSACTIONAL_UPDATE=true to what it runs in the snapshot.
    return os.environ.get("TRANSACTIONAL_UPDATE", "").lower() == "true"


def _refuse_transaction(ret):
    ret["comment"] = (
        "mdtune: not run inside a transactional-update snapshot: the md sysfs values would "
        "change at once, while /etc/mdtune, the udev rule and an installed binary would appear "
        "only after the reboot. Apply this state live, with state.apply after the reboot (the "
        "mdtune formula's metadata, transactional: transactional_then_live with live_state_ids "
        "mdtune-tuned, tells SUSE Manager / Uyuni to)."
    )
    return ret


def _passthrough(kwargs):
    """The caller's extra arguments minus Salt's own: the binary rejects unknown keys by name."""
    extra = salt.utils.args.clean_kwargs(**kwargs)
    return {
        key: value
        for key, value in extra.items()
        if key not in _SALT_KEYWORDS and key.lower() != "test"
    }


def _missing_binary(binary):
    """The binary path that would run, if it is not an executable file; else None."""
    path = __salt__["mdtune.binary_path"](binary)
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return None
    return path


def _no_binary(ret, path, test):
    # Under test=True the binary may be one that this very run would deploy
    # (file.managed earlier in the same highstate): say so instead of failing.
    if test:
        ret["result"] = None
        ret["comment"] = (
            f"mdtune binary {path} is not there yet, so the changes cannot be "
            "predicted; it must be installed before this state runs."
        )
        return ret
    ret["comment"] = (
        f"mdtune binary not found or not executable: {path}. Install the mdtune "
        "package, set pillar mdtune:binary, or deploy it with the mdtune formula "
        "(mdtune:deploy:enabled)."
    )
    return ret


def _failed(ret, exc):
    """A failed mdtune run (CommandExecutionError from the execution module) as a state return."""
    info = exc.info if isinstance(exc.info, dict) else {}
    # The execution module's message says "mdtune failed (exit status N): ..." already.
    comment = str(exc.error or "mdtune failed without a message")
    if not comment.startswith("mdtune"):
        comment = f"mdtune failed: {comment}"
    rolled_back = info.get("rolled_back")
    if rolled_back:
        comment += f" (rolled back: {_describe(rolled_back)})"
    not_restored = info.get("not_restored")
    if not_restored:
        comment += f" (NOT restored: {_describe(not_restored)})"
    ret["result"] = False
    ret["comment"] = comment
    # What is still different from before the run, if anything.
    if info.get("changed"):
        ret["changes"] = {"not_restored": not_restored or []}
    if info.get("warnings"):
        ret["warnings"] = [str(w) for w in info["warnings"]]
    return ret


def _translate(ret, result, test, verb):
    """Turn mdtune's JSON result (a run that did not fail) into a state return."""
    msg = result.get("msg") or ""
    warnings = [str(w) for w in result.get("warnings") or []]
    if warnings:
        ret["warnings"] = warnings
    changes = _changes(result)
    ret["changes"] = changes
    if test:
        ret["result"] = None if changes else True
    else:
        ret["result"] = True
    # mdtune's msg already says what changed or would change ("check mode: md0: ...").
    ret["comment"] = f"mdtune: {msg}" if changes else f"mdtune: already {verb}: {msg}"
    return ret


def _changes(result):
    """{array: {setting: {old, new}}, system: {...}, persist: {files}} for what changed."""
    changes = {}
    for array in result.get("arrays") or []:
        per_array = {}
        for setting, value in (array.get("settings") or {}).items():
            if isinstance(value, dict) and value.get("changed"):
                per_array[setting] = {"old": value.get("before"), "new": value.get("after")}
        if per_array:
            changes[array.get("name") or array.get("uuid") or "?"] = per_array
    system = {}
    for setting, value in (result.get("system") or {}).items():
        if isinstance(value, dict) and value.get("changed"):
            system[setting] = {"old": value.get("before"), "new": value.get("after")}
    if system:
        changes["system"] = system
    persist = result.get("persist") or {}
    if persist.get("changed"):
        changes["persist"] = {"files": persist.get("files") or []}
    if result.get("diff") and changes:
        changes["diff"] = _render_diff(result["diff"])
    if result.get("changed") and not changes:
        # Something changed that this translation does not know about: show mdtune's words.
        changes["mdtune"] = {"old": None, "new": result.get("msg")}
    return changes


def _render_diff(diff):
    """mdtune's diff list (Ansible's before/after shape) as one unified diff."""
    if isinstance(diff, dict):
        diff = [diff]
    parts = []
    for item in diff if isinstance(diff, list) else []:
        if not isinstance(item, dict):
            continue
        parts.extend(
            difflib.unified_diff(
                str(item.get("before", "")).splitlines(),
                str(item.get("after", "")).splitlines(),
                fromfile=str(item.get("before_header", "before")),
                tofile=str(item.get("after_header", "after")),
                lineterm="",
            )
        )
    return "\n".join(parts)


def _describe(rolled_back):
    if isinstance(rolled_back, list):
        return ", ".join(_describe(item) for item in rolled_back) or "nothing"
    if isinstance(rolled_back, dict):
        return " ".join(f"{key}={value}" for key, value in rolled_back.items())
    return str(rolled_back)
