"""
How SUSE Manager / Uyuni reads a formula's `transactional:` metadata, transcribed for the tests.

Written from reading uyuni-project/uyuni's formula transactional policy (java/.../action/
FormulaTransactionalPolicyResolver.java and FormulaTransactionalPlan.java, the pull request
"Improve transactional systems support"); not a copy. What it does for a formula that is not one
of Uyuni's own (those have a built-in policy):

- no `transactional` key in metadata.yml: mode transactional (the whole formula runs in the
  new snapshot, with transactional_update.apply);
- otherwise `transactional` must be a map with only `mode` and `live_state_ids`; `mode` is a
  string, one of transactional, live (only on the live system), transactional_then_live (the
  formula runs in the snapshot without the states named in `live_state_ids`, then in full on
  the live system), disabled (refused on transactional systems);
- `live_state_ids` is for transactional_then_live only, and there required: a non-empty list of
  non-blank, distinct strings.
A violation is an error naming the formula, the field and the reason.

Usage: uyuni_transactional.py METADATA.yml SHOW_SLS.json
  (SHOW_SLS.json: salt-call --out=json state.show_sls FORMULA). Prints "ok   - ..." and
  "FAIL - ..." lines: the metadata parses; every live state ID is a state of the formula; the
  states left for the snapshot change nothing in sysfs (no mdtune.* state).
"""

import json
import sys

import yaml

MODES = ("transactional", "live", "transactional_then_live", "disabled")


class Invalid(ValueError):
    pass


def policy(formula, metadata):
    """(mode, live_state_ids) as Uyuni resolves them for a formula with this metadata."""
    if "transactional" not in metadata:
        return "transactional", []
    config = metadata["transactional"]
    if not isinstance(config, dict):
        raise Invalid(f"formula '{formula}': field 'transactional' must be a map")
    for key in config:
        if key not in ("mode", "live_state_ids"):
            raise Invalid(f"formula '{formula}': field '{key}' unknown transactional field")
    mode = config.get("mode")
    if mode is None:
        raise Invalid(f"formula '{formula}': field 'mode' is required")
    if not isinstance(mode, str):
        raise Invalid(f"formula '{formula}': field 'mode' must be a string")
    if mode not in MODES:
        raise Invalid(f"formula '{formula}': field 'mode' has unsupported value '{mode}'")
    if mode != "transactional_then_live":
        if "live_state_ids" in config:
            raise Invalid(f"formula '{formula}': field 'live_state_ids' is only valid for "
                          "transactional_then_live")
        return mode, []
    ids = config.get("live_state_ids")
    if not isinstance(ids, list) or not ids:
        raise Invalid(f"formula '{formula}': field 'live_state_ids' must be a non-empty list")
    seen = []
    for state_id in ids:
        if not isinstance(state_id, str) or not state_id.strip():
            raise Invalid(f"formula '{formula}': field 'live_state_ids' must contain only "
                          "non-blank strings")
        if state_id in seen:
            raise Invalid(f"formula '{formula}': field 'live_state_ids' contains duplicated ID "
                          f"'{state_id}'")
        seen.append(state_id)
    return mode, seen


def main():
    metadata_path, show_path = sys.argv[1:3]
    failures = 0

    def report(name, ok, *details):
        nonlocal failures
        print(("ok   - " if ok else "FAIL - ") + name)
        if not ok:
            failures += 1
            for line in details:
                print(f"       {line}")

    metadata = yaml.safe_load(open(metadata_path))
    try:
        mode, live = policy("mdtune", metadata)
    except Invalid as exc:
        report("metadata.yml's transactional section parses as Uyuni reads it", False, str(exc))
        return 1
    report(f"metadata.yml's transactional section parses as Uyuni reads it: {mode} {live}",
           mode == "transactional_then_live" and live == ["mdtune-tuned", "mdtune-metrics"],
           f"mode {mode}, live_state_ids {live}")
    data = json.load(open(show_path))
    rendered = data.get("local", data)
    if not isinstance(rendered, dict):
        report("the formula renders", False, repr(rendered)[:500])
        return 1
    missing = [state_id for state_id in live if state_id not in rendered]
    report("every live_state_id is a state ID of the rendered formula", not missing,
           f"not in the SLS: {missing}; states: {sorted(rendered)}")
    snapshot = {sid: body for sid, body in rendered.items() if sid not in live}
    touching = sorted(sid for sid, body in snapshot.items() if isinstance(body, dict) and "mdtune" in body)
    report(f"the snapshot phase ({sorted(snapshot)}) runs no mdtune state", not touching,
           f"mdtune states in the snapshot phase: {touching}")
    # Each of Uyuni's rules refuses what it should (a check that can fail).
    bad = [
        {"transactional": "live"},
        {"transactional": {"mode": "later"}},
        {"transactional": {"mode": "live", "live_state_ids": ["x"]}},
        {"transactional": {"mode": "transactional_then_live"}},
        {"transactional": {"mode": "transactional_then_live", "live_state_ids": ["a", "a"]}},
        {"transactional": {"mode": "transactional", "extra": 1}},
    ]
    accepted = []
    for meta in bad:
        try:
            policy("x", meta)
            accepted.append(meta)
        except Invalid:
            pass
    report("the transcription refuses what Uyuni refuses (6 cases)", not accepted,
           f"accepted: {accepted}")
    report("no transactional section means the whole formula in the snapshot",
           policy("x", {}) == ("transactional", []))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
