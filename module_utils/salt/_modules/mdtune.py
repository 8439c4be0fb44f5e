"""
Tune Linux md RAID arrays with the mdtune binary.

This module is a thin wrapper, not a second implementation: every function turns
its arguments into one JSON object, runs ``mdtune -`` with that object on stdin
and returns the binary's JSON result unchanged. Validation, hardware-queue
discovery, planning, applying, rollback and persistence are the binary's job;
its interface is described in the mdtune README (the module contract).

Finding the binary, first match wins:

1. the ``binary`` argument;
2. the config/pillar key ``mdtune:binary`` (``config.get``);
3. ``mdtune`` on the minion's PATH;
4. ``/usr/local/sbin/mdtune``.

A binary named by 1 or 2 that is not there is an error, not a reason to run
some other mdtune.

Every input key of the contract passes through: ``arrays``, ``thread_policy``,
``speed_limit_min``, ``speed_limit_max``, ``persist``, ``root``, ``check_mode``
and ``diff``. ``test=True`` means ``check_mode: true``. An argument the binary
does not know fails the call with a message naming it (Salt's own ``__pub_*``
arguments are never passed on).

A failed run still returns the binary's JSON (``failed: true`` and a ``msg``),
and sets the call's return code, so ``salt-call --retcode-passthrough`` exits
non-zero.

CLI examples:

.. code-block:: bash

    salt '*' mdtune.query
    salt '*' mdtune.apply test=True
    salt '*' mdtune.apply arrays='[{"name": "hana_data", "stripe_cache_size": 4096}]'
    salt '*' mdtune.revert
    salt '*' mdtune.binary_path
"""

import copy
import json
import os

import salt.utils.args
import salt.utils.path
import salt.utils.platform
from salt.exceptions import CommandExecutionError

__virtualname__ = "mdtune"

DEFAULT_BINARY = "/usr/local/sbin/mdtune"

# How much of a non-JSON stdout/stderr a failure message quotes.
_QUOTE_CHARS = 2000


def __virtual__():
    # md RAID and its sysfs attributes exist only on Linux.
    if salt.utils.platform.is_linux():
        return __virtualname__
    return (False, "mdtune: Linux md RAID only")


def apply(
    arrays=None,
    thread_policy=None,
    speed_limit_min=None,
    speed_limit_max=None,
    persist=None,
    root=None,
    check_mode=None,
    diff=None,
    test=None,
    binary=None,
    **kwargs,
):
    """
    Apply the desired md tuning (``state: present``) and return mdtune's report.

    arrays
        List of array entries (``name`` and/or ``uuid`` plus per-array settings:
        ``group_thread_cnt``, ``stripe_cache_size``, ``preread_bypass_threshold``,
        ``skip_copy``, ``sync_speed_min``, ``sync_speed_max``,
        ``sync_force_parallel``). Default: every array (``[{"name": "*"}]``).

    thread_policy
        ``auto`` (default), ``off``, an integer, or an object
        ``{mode, value, min, max, combine}``: ``group_thread_cnt`` for every
        selected raid4/5/6 array whose entry sets none.

    speed_limit_min, speed_limit_max
        ``/proc/sys/dev/raid/speed_limit_*`` in KiB/s (unmanaged when omitted).

    persist
        Also keep the desired state across reboots and re-assembly (udev rule).

    root
        Prefix for every system path (tests, chroots, containers).

    check_mode / test
        Compute and report, write nothing.

    diff
        Add a ``diff`` to the result.

    binary
        Path of the mdtune binary (see the module documentation for the search order).

    CLI example:

    .. code-block:: bash

        salt '*' mdtune.apply thread_policy=auto speed_limit_max=500000 test=True
    """
    args = _input(
        "present",
        kwargs,
        arrays=arrays,
        thread_policy=thread_policy,
        speed_limit_min=speed_limit_min,
        speed_limit_max=speed_limit_max,
        persist=persist,
        root=root,
        check_mode=_check_mode(check_mode, test),
        diff=diff,
    )
    return _finish(_run(args, binary))


def query(
    arrays=None,
    thread_policy=None,
    speed_limit_min=None,
    speed_limit_max=None,
    persist=None,
    root=None,
    diff=None,
    binary=None,
    **kwargs,
):
    """
    Report the arrays, their live values and whether they match the desired
    state (``state: query``); writes nothing.

    Takes the same arguments as :py:func:`apply`. ``compliant`` in the result
    (overall and per array) answers "is this host tuned as asked?"; a host that
    is not compliant is not an error.

    CLI example:

    .. code-block:: bash

        salt '*' mdtune.query
        salt '*' mdtune.query arrays='[{"name": "md0", "stripe_cache_size": 4096}]'
    """
    args = _input(
        "query",
        kwargs,
        arrays=arrays,
        thread_policy=thread_policy,
        speed_limit_min=speed_limit_min,
        speed_limit_max=speed_limit_max,
        persist=persist,
        root=root,
        diff=diff,
    )
    return _finish(_run(args, binary))


def revert(
    root=None,
    check_mode=None,
    diff=None,
    test=None,
    binary=None,
    **kwargs,
):
    """
    Restore the values saved before mdtune's first change (``state: reverted``),
    remove the saved state and any persisted files, and report what was restored.

    CLI example:

    .. code-block:: bash

        salt '*' mdtune.revert test=True
        salt '*' mdtune.revert
    """
    args = _input(
        "reverted",
        kwargs,
        root=root,
        check_mode=_check_mode(check_mode, test),
        diff=diff,
    )
    return _finish(_run(args, binary))


def binary_path(binary=None):
    """
    Return the mdtune binary this minion would run (see the module documentation
    for the search order), or the last candidate when none is executable.

    CLI example:

    .. code-block:: bash

        salt '*' mdtune.binary_path
    """
    return _find_binary(binary)[0]


# ---------------------------------------------------------------------------
# Helpers. The state module uses only the public functions above, through __salt__.


def _check_mode(check_mode, test):
    """check_mode when given; else test=...; else the minion's test option (None: not set)."""
    if check_mode is not None:
        return bool(check_mode)
    if test is not None:
        return bool(test)
    return bool(__opts__.get("test", False)) or None


def _input(state, extra, **given):
    """
    Build the JSON object for the binary: the contract keys that were given,
    ``state``, and any other caller argument except Salt's own (``__pub_*``
    and the like), so the binary can reject an unknown key by name.
    """
    args = {key: value for key, value in given.items() if value is not None}
    for key, value in salt.utils.args.clean_kwargs(**extra).items():
        if key == "state":
            raise CommandExecutionError(
                "mdtune: 'state' is chosen by the function: use mdtune.apply, "
                "mdtune.query or mdtune.revert"
            )
        args[key] = value
    args["state"] = state
    return _normalize(args)


def _normalize(args):
    """
    Undo YAML 1.1's reading of a bare ``off`` as the boolean false where the
    contract means the string ``"off"`` (``thread_policy``, its ``mode``, and
    ``group_thread_cnt``): ``thread_policy: off`` in an SLS or pillar arrives
    here as False.
    """
    args = copy.deepcopy(args)
    policy = args.get("thread_policy")
    if policy is False:
        args["thread_policy"] = "off"
    elif isinstance(policy, dict) and policy.get("mode") is False:
        policy["mode"] = "off"
    arrays = args.get("arrays")
    if isinstance(arrays, list):
        for entry in arrays:
            if isinstance(entry, dict) and entry.get("group_thread_cnt") is False:
                entry["group_thread_cnt"] = "off"
    return args


def _find_binary(binary=None):
    """Return (path, [candidates tried]) following the documented search order."""
    configured = __salt__["config.get"]("mdtune:binary", default="")
    candidates = [(binary, True), (configured, True), ("mdtune", False), (DEFAULT_BINARY, False)]
    tried = []
    for candidate, explicit in candidates:
        if not candidate:
            continue
        candidate = str(candidate)
        if os.sep in candidate:
            tried.append(candidate)
            executable = os.path.isfile(candidate) and os.access(candidate, os.X_OK)
            found = candidate if executable else None
        else:
            tried.append(f"{candidate} (on PATH)")
            found = salt.utils.path.which(candidate)
        if found:
            return found, tried
        if explicit:
            # A binary that was asked for and does not work is an error, not a
            # reason to run some other mdtune behind the user's back.
            return candidate, tried
    return DEFAULT_BINARY, tried


def _failure(msg):
    return {"changed": False, "failed": True, "msg": msg}


def _quote(text):
    text = (text or "").strip()
    if len(text) > _QUOTE_CHARS:
        text = text[:_QUOTE_CHARS] + "..."
    return text or "(empty)"


def _run(args, binary=None):
    """
    Run ``binary -`` with ``args`` as JSON on stdin; return (result, exit status).

    Never raises for a failed run: a missing binary, a crash or output that is
    not a JSON object becomes ``{"failed": true, "msg": ...}`` (status None when
    nothing ran); the binary's own failure result (exit status 1 or 2) is
    returned as it is.
    """
    path, tried = _find_binary(binary)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return _failure(
            f"mdtune binary not found or not executable: {path} (tried: "
            f"{', '.join(tried)}). Install the mdtune package, set the pillar or "
            "config key mdtune:binary, or pass binary=PATH."
        ), None
    payload = json.dumps(args, default=str)
    try:
        proc = __salt__["cmd.run_all"](
            [path, "-"],
            stdin=payload,
            python_shell=False,
            # Without this Salt turns a literal backslash-n inside the JSON
            # into a newline and corrupts it.
            stdin_raw_newlines=True,
            ignore_retcode=True,
            output_loglevel="debug",
        )
    except CommandExecutionError as exc:
        return _failure(f"mdtune: could not run {path}: {exc}"), None
    retcode = proc.get("retcode")
    stdout = proc.get("stdout") or ""
    stderr = proc.get("stderr") or ""
    try:
        result = json.loads(stdout)
    except ValueError:
        result = None
    if not isinstance(result, dict):
        return _failure(
            f"mdtune: {path} exited with status {retcode} without a JSON result; "
            f"stderr: {_quote(stderr)}; stdout: {_quote(stdout)}"
        ), retcode
    if retcode != 0 and not result.get("failed"):
        # The contract says exit status and "failed" agree; trust the stricter one.
        result["failed"] = True
        result["msg"] = (
            f"mdtune exited with status {retcode} but reported no failure: "
            f"{result.get('msg', '')}"
        )
    return result, retcode


def _finish(run):
    """Set the call's return code from a failed result (for --retcode-passthrough)."""
    result, retcode = run
    if result.get("failed"):
        __context__["retcode"] = retcode if retcode in (1, 2) else 1
    return result
