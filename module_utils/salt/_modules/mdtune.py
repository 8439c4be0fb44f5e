"""
Tune Linux md RAID arrays with the mdtune binary.

This module is a thin wrapper, not a second implementation: every function turns
its arguments into one JSON object, runs ``mdtune -`` with that object on stdin
and returns the binary's JSON result. Validation, hardware-queue discovery,
planning, applying, rollback and persistence are the binary's job; its interface
is described in the mdtune README (the module contract).

The desired state. :py:func:`apply` and :py:func:`query` start from the
minion's pillar ``mdtune`` (:py:func:`desired`), compiled afresh as a state run
compiles it, so ``salt '*' mdtune.query`` compares every minion with the same
desired state that ``state.apply mdtune`` applies to it. Their arguments
(``arrays``, ``thread_policy``, ``speed_limit_min``, ``speed_limit_max``,
``sync_io_depth``, ``persist``, and any other key mdtune takes) override the pillar key by key:
``mdtune.apply test=True thread_policy=auto`` keeps the pillar's arrays and
their stripe cache. ``from_pillar=False`` starts from mdtune's defaults instead.

salt-ssh. An execution function called with ``salt-ssh`` runs on the target as
``salt-call --local``, where the master's pillar is not compiled: there the
pillar is empty. The salt-ssh wrapper (``_wrapper/mdtune.py``, run on the
master with the target's pillar) translates the pillar with :py:func:`desired`
and passes the result to these functions as arguments with ``from_pillar=False``.
Without the wrapper, :py:func:`apply` and :py:func:`query` (unless given
``from_pillar=False``) and :py:func:`desired` refuse to run over salt-ssh, with
a message saying how to install it, instead of answering against mdtune's
defaults. :py:func:`revert` and :py:func:`binary_path` take ``mdtune:root`` and
``mdtune:binary`` from the roster's ``minion_opts`` there. The formula
(``salt-ssh HOST state.apply mdtune``) carries the pillar to the target by
itself.

The host. ``root`` and ``binary`` default to the config/pillar keys
``mdtune:root`` and ``mdtune:binary`` (``config.get``: minion config, grains,
pillar). Finding the binary, first match wins:

1. the ``binary`` argument;
2. ``mdtune:binary`` (or the target of the formula's ``mdtune:deploy``);
3. ``mdtune`` on the minion's PATH;
4. ``/usr/local/sbin/mdtune``.

A binary named by 1 or 2 that is not there is an error, not a reason to run
some other mdtune.

Test mode. ``test=True`` (``salt.utils.args.test_mode``) or the minion's
``test`` option means ``check_mode: true``; an explicit ``check_mode`` wins.

Failures follow Salt's convention: a run that fails (mdtune's ``failed: true``,
exit status 1, or unusable input, exit status 2), a missing binary or output
that is not JSON raises ``CommandExecutionError``. Its message carries mdtune's
``msg`` and exit status; its ``info`` the exit status, ``changed`` and what was
rolled back or not restored. A host that is not compliant is not a failure.

CLI Example:

.. code-block:: bash

    salt '*' mdtune.query
    salt '*' mdtune.apply test=True
    salt '*' mdtune.apply arrays='[{"name": "hana_data", "stripe_cache_size": 4096}]'
    salt '*' mdtune.desired
    salt '*' mdtune.revert
    salt '*' mdtune.binary_path
"""

import copy
import json
import os

import salt.utils.args
import salt.utils.data
import salt.utils.path
import salt.utils.platform
from salt.exceptions import CommandExecutionError

__virtualname__ = "mdtune"

DEFAULT_BINARY = "/usr/local/sbin/mdtune"

# The tuning arguments: the desired state. When a call gives none of them, the pillar's apply.
# The one list of them: apply() and query() (and the salt-ssh wrapper's and the state's
# functions) take each as a named argument, and `cargo test` (tests/integration/forms) checks
# the list and those signatures against `mdtune --schema`.
DESIRED_KEYS = (
    "arrays", "thread_policy", "speed_limit_min", "speed_limit_max", "sync_io_depth", "persist",
    "reason",
)

# The keys of one run's measurement (mdtune's ``measure``, ``revert_if_slower``): apply passes
# them, query and revert leave a pillar's out (mdtune takes them on state: present only).
MEASURE_KEYS = ("measure", "revert_if_slower")

# Pillar keys desired() translates itself or that are the formula's own switches.
_NOT_PASSED = (
    "thread_policy", "thread_auto", "arrays", "deploy", "install", "metrics", "measure",
)

# What the SUSE Manager / Uyuni form writes for "leave this setting alone".
_UNSET = (None, "", "unmanaged")

# How much of a non-JSON stdout/stderr a failure message quotes.
_QUOTE_CHARS = 2000

# Where the salt-ssh wrapper goes on the master (the default extension_modules), on Salt 3006 and
# 3008 alike, and where the mdtune-salt-modules package has it.
WRAPPER_INSTALL = (
    "install -D -m 0644 /usr/share/susemanager/salt/_wrapper/mdtune.py "
    "/var/cache/salt/master/extmods/wrapper/mdtune.py"
)

# How the binary's trail (the system log line of every run that changes something) names Salt:
# MDTUNE_CALLER, "salt mdtune.<function>", by the run's state.
_CALLER_ENV = "MDTUNE_CALLER"
_FUNCTION_OF_STATE = {"present": "apply", "query": "query", "reverted": "revert"}


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
    sync_io_depth=None,
    persist=None,
    reason=None,
    root=None,
    check_mode=None,
    diff=None,
    test=None,
    binary=None,
    from_pillar=True,
    measure=None,
    revert_if_slower=None,
    **kwargs,
):
    """
    Apply the desired md tuning (``state: present``) and return mdtune's report.

    arrays
        List of array entries (``name`` and/or ``uuid`` plus per-array settings:
        ``group_thread_cnt``, ``stripe_cache_size``, ``preread_bypass_threshold``,
        ``skip_copy``, ``sync_speed_min``, ``sync_speed_max``, ``sync_io_depth``,
        ``sync_force_parallel``, ``reason``, ``sync_boost``: ``{sync_speed_min, sync_speed_max,
        sync_io_depth, during}`` in force only while the array resyncs, recovers or
        reshapes). Default: every array (``[{"name": "*"}]``).

    thread_policy
        ``auto`` (default), ``off``, an integer, or an object
        ``{mode, value, min, max, combine}``: ``group_thread_cnt`` for every
        selected raid4/5/6 array whose entry sets none.

    speed_limit_min, speed_limit_max
        ``/proc/sys/dev/raid/speed_limit_*`` in KiB/s (unmanaged when omitted).

    sync_io_depth
        ``/proc/sys/dev/raid/sync_io_depth``: sync I/Os in flight while an array
        is busy (Linux 6.16 and later; refused on older kernels; unmanaged when
        omitted).

    persist
        True: also keep the desired state across reboots and re-assembly (udev
        rule). False: remove what an earlier persist installed, keep the live
        values. Omitted: leave persistence as it is (``persist.diverged`` then
        lists what the persisted state would put back otherwise).

    reason
        Why these values (a ticket, a vendor note): text of at most 200
        printable characters. Persisted with the state, shown by
        ``mdtune --show``/``--verify`` and written into the system log's line;
        an entry's own ``reason`` covers the settings it sets.

    from_pillar
        Start from the pillar ``mdtune`` (:py:func:`desired`); the arguments
        given override it key by key. Default True.

    measure
        Seconds (1..600): sample each array this run changes that long before
        its writes and as long after them, from the array's own counters, and
        report ``effect`` (verdict ``faster``, ``slower``, ``same`` or
        ``inconclusive``) per array. The pillar's ``measure:seconds`` by default.

    revert_if_slower
        With ``measure``: put the run's writes back (as a rollback does) when a
        verdict is ``slower``; ``changed`` then says nothing is left changed.

    root
        Prefix for every system path (tests, chroots, containers). Default: the
        config/pillar key ``mdtune:root``, else ``/``.

    check_mode / test
        Compute and report, write nothing (with ``measure``: only the window
        before is sampled).

    diff
        Add a ``diff`` to the result.

    binary
        Path of the mdtune binary (see the module documentation for the search order).

    Raises ``CommandExecutionError`` when mdtune fails (see the module documentation).

    CLI Example:

    .. code-block:: bash

        salt '*' mdtune.apply test=True
        salt '*' mdtune.apply thread_policy=auto speed_limit_max=500000 test=True
    """
    named = locals()
    _pillar_reaches_me("apply", from_pillar)
    given = {key: named[key] for key in DESIRED_KEYS}
    given.update({key: named[key] for key in MEASURE_KEYS})
    args, binary = _request(
        "present", given, kwargs, from_pillar, root, binary,
        check_mode=_check_mode(check_mode, test, kwargs), diff=diff,
    )
    return _run(args, binary)


def query(
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
    from_pillar=True,
    **kwargs,
):
    """
    Report the arrays, their live values and whether they match the desired
    state (``state: query``); writes nothing.

    Takes the same arguments as :py:func:`apply`. The desired state is the
    minion's pillar ``mdtune`` - the one ``state.apply mdtune`` applies - with
    the arguments given overriding it key by key, so across a fleet this is the
    compliance check: each minion against its own formula data. ``compliant`` in the result (overall and
    per array) answers "is this host tuned as asked?"; a host that is not
    compliant is not an error.

    CLI Example:

    .. code-block:: bash

        salt '*' mdtune.query
        salt '*' mdtune.query from_pillar=False
        salt '*' mdtune.query arrays='[{"name": "md0", "stripe_cache_size": 4096}]'
    """
    named = locals()
    _pillar_reaches_me("query", from_pillar)
    given = {key: named[key] for key in DESIRED_KEYS}
    args, binary = _request("query", given, kwargs, from_pillar, root, binary, diff=diff)
    return _run(args, binary)


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

    CLI Example:

    .. code-block:: bash

        salt '*' mdtune.revert test=True
        salt '*' mdtune.revert
    """
    args, binary = _request(
        "reverted", {}, kwargs, False, root, binary,
        check_mode=_check_mode(check_mode, test, kwargs), diff=diff,
    )
    return _run(args, binary)


def desired(fresh=False):
    """
    Return the desired state that the pillar ``mdtune`` describes, as mdtune's
    input: the arguments :py:func:`apply` and :py:func:`query` use when given
    none, and that the formula (``state.apply mdtune``) passes to
    ``mdtune.managed``.

    fresh
        Compile the minion's pillar afresh (``pillar.items``), as a state run
        does, instead of the pillar the minion holds in memory (which is as old
        as its last ``saltutil.refresh_pillar``). :py:func:`apply` and
        :py:func:`query` do. Default False: in a template (the formula's
        ``map.jinja``) the pillar in memory is the state run's own, overrides
        included.

    The pillar may have mdtune's own shape (``arrays`` as a list of entries,
    ``thread_policy`` as mdtune takes it) or the shape the SUSE Manager / Uyuni
    form writes:

    - ``arrays`` as a dict keyed by array name: a list, entries whose key is a
      glob first, so an exact name overrides a glob;
    - empty fields (``""``, null) and ``unmanaged`` are left out (the setting is
      left alone); ``enabled``/``disabled`` become true/false; the ``sync_boost``
      group keeps its filled fields (no value filled: no boost), its ``during`` text split at commas;
    - ``thread_policy`` ``""`` is ``auto``; ``thread_auto`` (min, max, combine)
      bounds it only when it is ``auto`` (``{mode: auto, ...}``);
    - ``deploy``, ``install`` and ``metrics`` (the formula's own switches) are not passed;
      when ``deploy`` is enabled, the binary is its ``target``;
    - YAML's reading of a bare ``off`` as false is undone.

    Every other key passes as it is, so mdtune rejects a typo by name.

    CLI Example:

    .. code-block:: bash

        salt '*' mdtune.desired
        salt '*' mdtune.desired fresh=True
    """
    _pillar_reaches_me("desired", True)
    # __pillar__, not pillar.get: Salt 3008's pillar.get masks every value ("**********")
    # outside a template. _plain() also unwraps 3008's MaskedDict/MaskedList.
    if fresh:
        # unmask: Salt 3008 masks pillar.items' values; 3006 ignores the argument.
        pillar = __salt__["pillar.items"](unmask=True)
    else:
        pillar = __pillar__
    pillar = _plain(pillar.get("mdtune", {}))
    if pillar in _UNSET:
        pillar = {}
    if not isinstance(pillar, dict):
        raise CommandExecutionError(
            f"mdtune: pillar mdtune must be a dict, got {type(pillar).__name__}"
        )
    args = {}
    policy = _threads(pillar.get("thread_policy"))
    bounds = pillar.get("thread_auto")
    if isinstance(bounds, dict) and policy in (None, "auto"):
        # combine: min is mdtune's default: leave it out, so the defaults stay "auto".
        bounds = {
            k: v for k, v in bounds.items() if v not in _UNSET and (k, v) != ("combine", "min")
        }
        if bounds:
            policy = dict(bounds, mode="auto")
    if policy is not None:
        args["thread_policy"] = policy
    arrays = _arrays(pillar.get("arrays"))
    if arrays:
        args["arrays"] = arrays
    args.update(_measure(pillar.get("measure")))
    deploy = pillar.get("deploy")
    if isinstance(deploy, dict) and salt.utils.data.is_true(deploy.get("enabled")):
        target = deploy.get("target")
        args["binary"] = target if target not in _UNSET else DEFAULT_BINARY
    for key, value in pillar.items():
        if key in _NOT_PASSED or value in _UNSET:
            continue
        if key == "persist":
            value = value is True or str(value).lower() in ("true", "yes", "enabled")
        args.setdefault(key, value)
    return _normalize(args)


def binary_path(binary=None):
    """
    Return the mdtune binary this minion would run (see the module documentation
    for the search order), or the last candidate when none is executable.

    CLI Example:

    .. code-block:: bash

        salt '*' mdtune.binary_path
    """
    return _find_binary(binary)[0]


# ---------------------------------------------------------------------------
# Helpers. The state module uses only the public functions above, through __salt__.


def _pillar_reaches_me(fun, from_pillar):
    """
    Raise when FUN would read a pillar that cannot be there: called over salt-ssh
    without mdtune's wrapper. salt-ssh runs the function on the target as
    ``salt-call --local`` in a thin directory (its ``root_dir`` is
    ``<thin_dir>/running_data``, its ``sock_dir`` ``/`` under that root, so the
    root itself), with an empty pillar;
    the wrapper would have called it with ``from_pillar=False`` and the pillar's
    desired state as arguments. Inside a salt-ssh state run (``state.pkg``,
    whose pillar comes from the master) the function the target was called
    with is not this module's, and nothing is refused.
    """
    if not salt.utils.data.is_true(from_pillar):
        return
    # The salt-ssh wrapper loads this file on the master by hand and gives it __opts__ (the
    # master's); one that gives none (an older wrapper) is not a salt-ssh target either.
    opts = globals().get("__opts__") or {}
    root_dir = os.path.normpath(str(opts.get("root_dir", "")))
    over_ssh = (
        os.path.basename(root_dir) == "running_data"
        and os.path.normpath(str(opts.get("sock_dir", ""))) == root_dir
    )
    if over_ssh and opts.get("fun") == f"{__virtualname__}.{fun}":
        raise CommandExecutionError(
            f"mdtune.{fun} over salt-ssh needs mdtune's salt-ssh wrapper on the master: "
            "without it the target sees none of its pillar, and the answer would be "
            "against mdtune's defaults instead of the desired state. Install it once "
            f"on the master (Salt 3006 and 3008): {WRAPPER_INSTALL} (or unpack "
            "mdtune-salt-VERSION.tar.gz at /); or call with from_pillar=False to use "
            "mdtune's defaults."
        )


def _check_mode(check_mode, test, kwargs):
    """check_mode when given; else test=True (any spelling); else the minion's test option."""
    if check_mode is not None:
        return salt.utils.data.is_true(check_mode)
    if salt.utils.args.test_mode(test=test, **kwargs):
        return True
    if test is None and __opts__.get("test"):
        return True
    return None


def _plain(value):
    """A deep copy made of plain dicts and lists."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in dict.items(value)}
    if isinstance(value, list):
        return [_plain(item) for item in list.__iter__(value)]
    return value


def _threads(value):
    """A thread policy from pillar: unset, YAML false ("off"), a scalar or an object."""
    if value is False:
        return "off"
    if value in _UNSET:
        return None
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if v not in _UNSET} or None
    return value


def _measure(value):
    """mdtune's measure keys from the pillar's ``measure``: the form's group ``{seconds,
    revert_if_slower}`` (its revert used only when seconds is set, as the form says), or a
    number of seconds as mdtune takes it."""
    if value in _UNSET or value is False:
        return {}
    if not isinstance(value, dict):
        return {"measure": value}
    seconds = value.get("seconds")
    if seconds in _UNSET:
        return {}
    args = {"measure": seconds}
    revert = value.get("revert_if_slower")
    if revert not in _UNSET:
        args["revert_if_slower"] = revert
    return args


def _arrays(value):
    """mdtune's list as it is; the form's dict keyed by array name as a list, globs first."""
    if isinstance(value, list):
        return value
    if not isinstance(value, dict):
        return None
    globs, exact = [], []
    for key, settings in value.items():
        entry = {"name": str(key)}
        for setting, item in (settings or {}).items():
            if item in ("enabled", "disabled"):
                item = item == "enabled"
            if setting == "sync_boost":
                item = _boost(item)
            if item not in _UNSET:
                entry[setting] = item
        (globs if any(c in str(key) for c in "*?[") else exact).append(entry)
    return globs + exact


def _boost(value):
    """A sync_boost from the form's group: its empty fields left out, and ``during`` as the
    form's comma-separated text made a list. No value filled in is no boost, as the form says,
    whatever ``during`` holds (a ``during`` alone would boost nothing)."""
    if not isinstance(value, dict):
        return value
    boost = {k: v for k, v in value.items() if v not in _UNSET}
    during = boost.get("during")
    if isinstance(during, str):
        boost["during"] = [d.strip() for d in during.split(",") if d.strip()]
        if len(boost) == 1:  # the form's during alone: no value filled in
            return None
    return boost or None


def _request(state, given, extra, from_pillar, root, binary, **run_keys):
    """
    The JSON object for the binary and the binary to run: the pillar's desired
    state (see desired()) when from_pillar, overridden key by key by the tuning
    arguments given and any other caller argument except Salt's own
    (``__pub_*``, ``test``), so the binary can reject an unknown key by name;
    root and binary (or the config's), the run keys and ``state``.
    """
    extra = {
        key: value
        for key, value in salt.utils.args.clean_kwargs(**extra).items()
        if key.lower() != "test"
    }
    if "state" in extra:
        raise CommandExecutionError(
            "mdtune: 'state' is chosen by the function: use mdtune.apply, "
            "mdtune.query or mdtune.revert"
        )
    args = desired(fresh=True) if from_pillar else {}
    if state != "present":
        # A measurement is a present run's: the pillar's does not reach a query.
        for key in MEASURE_KEYS:
            args.pop(key, None)
    args.update({key: value for key, value in given.items() if value is not None})
    args.update(extra)
    pillar_binary = args.pop("binary", None)
    if root is None:
        root = args.pop("root", None) or __salt__["config.get"]("mdtune:root", default="") or None
    args.pop("root", None)
    args.update({key: value for key, value in run_keys.items() if value is not None})
    if root is not None:
        args["root"] = root
    args["state"] = state
    return _normalize(args), binary or pillar_binary


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


def _quote(text):
    text = (text or "").strip()
    if len(text) > _QUOTE_CHARS:
        text = text[:_QUOTE_CHARS] + "..."
    return text or "(empty)"


def _run(args, binary=None):
    """
    Run ``binary -`` with ``args`` as JSON on stdin and return its JSON result.

    Raises CommandExecutionError when the run failed: a missing binary, a crash,
    output that is not a JSON object, or mdtune's own failure (exit status 1 or 2),
    whose message and exit status are kept.
    """
    path, tried = _find_binary(binary)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise CommandExecutionError(
            f"mdtune binary not found or not executable: {path} (tried: "
            f"{', '.join(tried)}). Install the mdtune package, set the pillar or "
            "config key mdtune:binary, or pass binary=PATH."
        )
    payload = json.dumps(args, default=str)
    function = _FUNCTION_OF_STATE.get(args.get("state"), "apply")
    proc = __salt__["cmd.run_all"](
        [path, "-"],
        stdin=payload,
        # The trail names the caller: "salt mdtune.apply, user root: changed md0: ...".
        env={_CALLER_ENV: f"salt mdtune.{function}"},
        python_shell=False,
        # Without this Salt turns a literal backslash-n inside the JSON
        # into a newline and corrupts it.
        stdin_raw_newlines=True,
        ignore_retcode=True,
        output_loglevel="debug",
    )
    retcode = proc.get("retcode")
    stdout = proc.get("stdout") or ""
    stderr = proc.get("stderr") or ""
    try:
        result = json.loads(stdout)
    except ValueError:
        result = None
    if not isinstance(result, dict):
        raise CommandExecutionError(
            f"mdtune: {path} exited with status {retcode} without a JSON result; "
            f"stderr: {_quote(stderr)}; stdout: {_quote(stdout)}",
            info={"exit_status": retcode},
        )
    if result.get("failed") or retcode != 0:
        msg = result.get("msg") or "no message"
        if not result.get("failed"):
            # The contract says exit status and "failed" agree; trust the stricter one.
            msg = f"mdtune reported no failure: {msg}"
        info = {"exit_status": retcode, "changed": bool(result.get("changed"))}
        for key in ("rolled_back", "not_restored", "warnings"):
            if result.get(key):
                info[key] = result[key]
        raise CommandExecutionError(f"mdtune failed (exit status {retcode}): {msg}", info=info)
    return result
