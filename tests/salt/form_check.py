"""
Checks the SUSE Manager / Uyuni form (module_utils/suma/metadata/mdtune/form.yml) against the
mdtune binary: what the form lets a user save is exactly what mdtune accepts.

Usage: form_check.py REPO BINARY ROOT   (ROOT: a scratch copy of examples/demo-host; the binary
runs in check mode, nothing is written). Prints "ok   - ..." / "FAIL - ..." lines; exits 1 on
any failure. Run by tests/salt/run.sh with the Salt venv's python (it needs PyYAML and Salt's
salt.utils for the execution module).

How:
- The form's side is modelled on Uyuni's form code (web/html/src/components/formulas/
  FormulaComponentGenerator.tsx): on save it checks `$required` (a value that is falsy fails)
  and `$match` (as "^" + pattern + "$", on every value, the empty one and numbers included);
  the browser also flags a number outside `$min`/`$max`. A select can only hold its `$values`,
  a number field a number or "".
- The pillar is what Uyuni's server makes of the saved data (tests/salt/uyuni_pillar.py, a
  transcription of suma_minion.py's merge_formula_data and adjust_empty_values), and mdtune's
  input is what the formula passes on: the execution module's mdtune.desired(), which the
  state mdtune.managed calls with from_pillar: true (states/mdtune/init.sls; loaded here with
  the pillar as its only Salt dependency).
- Every field of form.yml is walked; each has a list of candidate values (a field without one
  fails the check). For each candidate: does the form accept it, does mdtune (exit 0 or 2)?
"""

import copy
import importlib.util
import json
import os
import re
import subprocess
import sys

import yaml

repo, binary, root = sys.argv[1:4]
sys.path.insert(0, os.path.join(repo, "tests", "salt"))
import uyuni_pillar  # noqa: E402

meta_dir = os.path.join(repo, "module_utils", "suma", "metadata", "mdtune")
layout = yaml.safe_load(open(os.path.join(meta_dir, "form.yml")))
example = yaml.safe_load(open(os.path.join(meta_dir, "pillar.example")))

failures = 0


def ok(name):
    print(f"ok   - {name}")


def fail(name, *details):
    global failures
    failures += 1
    print(f"FAIL - {name}")
    for line in details:
        print(f"       {line}")


def check(name, condition, *details):
    if condition:
        ok(name)
    else:
        fail(name, *details)


# --- the execution module's translation, as the formula uses it ---------------------------
spec = importlib.util.spec_from_file_location(
    "mdtune_module", os.path.join(repo, "module_utils", "salt", "_modules", "mdtune.py")
)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
_current = {}
module.__pillar__ = _current
module.__opts__ = {}


def desired(pillar):
    _current.clear()
    _current["mdtune"] = copy.deepcopy(pillar)
    return module.desired()


def run_binary(args):
    """mdtune's verdict on these arguments: (accepted, result JSON)."""
    args = dict(args, root=root, check_mode=True, state="present")
    args.pop("binary", None)
    proc = subprocess.run(
        [binary, "-"], input=json.dumps(args), capture_output=True, text=True, timeout=30
    )
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        out = {"msg": proc.stdout + proc.stderr}
    if proc.returncode not in (0, 2):
        raise AssertionError(f"mdtune exit status {proc.returncode} for {args}: {out.get('msg')}")
    return proc.returncode == 0, out


# --- the form's side ------------------------------------------------------------------------
def js_text(value):
    """A value as JavaScript's RegExp.test() sees it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def uyuni_regex(match):
    """The pattern as Uyuni's checkFieldsFormat builds it (no group around it)."""
    regex = match if match.startswith("^") else "^" + match
    regex = regex if regex.endswith("$") else regex + "$"
    return regex[:-1] + r"\Z"  # JavaScript's $ (no m flag) is the very end


def form_accepts(element, value, key=False):
    """(saving is allowed, the browser flags nothing) for this value of this field."""
    kind = element.get("$type", "text")
    saves = True
    if (key or element.get("$required") is True) and not value and value is not False:
        saves = False
    if "$match" in element and not re.match(uyuni_regex(element["$match"]), js_text(value)):
        saves = False
    if kind == "select" and value not in element["$values"]:
        saves = False
    if kind == "boolean" and not isinstance(value, bool):
        saves = False
    flags = False
    if kind == "number" and value != "":
        if not isinstance(value, int) or isinstance(value, bool):
            flags = True
        elif not element["$min"] <= value <= element["$max"]:
            flags = True
    if "$match" in element and kind != "number":
        # The browser's own pattern check: ^(?:pattern)$.
        if value != "" and not re.match(r"^(?:" + element["$match"] + r")\Z", js_text(value)):
            flags = True
    return saves, not flags


# --- candidates per field -------------------------------------------------------------------
THREADS_TEXT = ["", "auto", "off", "0", "8", "0008", "8192", "8193", "-1", "1.5", "x",
                "autox", "xoff", "fixed", "88888"]
THREADS_NUMBER = ["", 0, 8, 8192, 8193, -1, 1.5, 100000]
SPEED_TEXT = ["", "system", "0", "1", "500000", "00100", "2147483647", "2147483648",
              "9999999999", "-1", "x", "systemx", "1.5"]
SPEED_NUMBER = ["", 0, 1, 400000, 2147483647, 2147483648, -1, 1.5]
DEPTH_TEXT = ["", "system", "0", "1", "64", "00100", "16777215", "16777216", "2147483647", "-1",
              "x", "systemx", "1.5"]
DEPTH_NUMBER = ["", 0, 1, 32, 16777215, 16777216, -1, 1.5]
TRISTATE = ["unmanaged", "enabled", "disabled"]  # a select holds nothing else
REASON = ["", "CHG0042: SAP note 2382421", "x" * 200, "x" * 201, "a\tb", "a\nb", "a\x1bb",
          "a\u202eb", "ünicode \\ ok"]
CANDIDATES = {
    "thread_policy": THREADS_TEXT,
    "thread_auto.min": THREADS_NUMBER,
    "thread_auto.max": THREADS_NUMBER,
    "thread_auto.combine": ["min", "max"],
    "arrays.$key": ["md*", "*", "md?", "md0", "hana_data", "/dev/md/hana_data", "md_*", "",
                    ".", "..", "a/b", "md..x", "/dev/md/", "/dev/md/a/b", "md**", "md\x01"],
    "arrays.uuid": ["", "b2c3d4e5:e5f60718:293a4b5c:6d7e8f90",
                    "b2c3d4e5-e5f6-0718-293a-4b5c6d7e8f90", "B2C3D4E5:E5F60718:293A4B5C:6D7E8F90",
                    "b2c3d4e5:e5f60718:293a4b5c", "b2c3d4e5-e5f60718:293a4b5c:6d7e8f90",
                    "zzzzzzzz:e5f60718:293a4b5c:6d7e8f90", "x"],
    "arrays.group_thread_cnt": THREADS_TEXT,
    "arrays.stripe_cache_size": ["", 16, 17, 4096, 32768, 32769, 0, -1, 1.5],
    # With the entry's stripe_cache_size at 32768 (see BASE_ITEM): above it is the host's call.
    "arrays.preread_bypass_threshold": ["", 0, 64, 32768, -1, 1.5, 4294967296],
    "arrays.skip_copy": TRISTATE,
    "arrays.sync_speed_min": SPEED_TEXT,
    "arrays.sync_speed_max": SPEED_TEXT,
    "arrays.sync_io_depth": DEPTH_TEXT,
    "arrays.sync_force_parallel": TRISTATE,
    "arrays.sync_boost.sync_speed_min": SPEED_TEXT,
    "arrays.sync_boost.sync_speed_max": SPEED_TEXT,
    "arrays.sync_boost.sync_io_depth": DEPTH_TEXT,
    "arrays.sync_boost.during": ["", "resync", "resync, recover", "check,repair", " reshape ",
                                 "scrub", "resync recover", "RESYNC", "idle"],
    "speed_limit_min": SPEED_NUMBER,
    "speed_limit_max": SPEED_NUMBER,
    "sync_io_depth": DEPTH_NUMBER,
    "persist": TRISTATE,
    # Short windows only: a candidate that mdtune accepts runs (in check mode) for that long.
    "measure.seconds": ["", 1, 0, 601, 1.5, -1],
    "measure.revert_if_slower": [False, True],
    "reason": REASON,
    "arrays.reason": REASON,
}
# Values the form refuses although mdtune takes them: stricter on purpose, and said here.
STRICTER = {
    "thread_policy": [" 8"],  # mdtune trims blanks
    "arrays.$key": ["md[01]", "**"],  # bracket globs and ** (a glob crate rule) are not offered
    "arrays.sync_boost.during": ["resync,"],  # an empty item of the list is not offered
}
# Fields that are the formula's own, not mdtune's input (map.jinja uses them for file.managed,
# pkg.installed and the metrics timer's service.running).
FORMULA_ONLY = {"deploy.enabled", "deploy.source", "deploy.source_hash", "deploy.target",
                "install.enabled", "metrics.enabled"}

# An edit-group item whose fields are all empty: the baseline for the prototype's fields.
prototype = layout["mdtune"]["arrays"]["$prototype"]


def leaves(node, path=""):
    """(path, element) for every field; the edit-group's prototype fields as arrays.NAME."""
    for name, element in node.items():
        if name.startswith("$") and name != "$key":
            continue
        here = f"{path}.{name}" if path else name
        kind = element.get("$type", "text")
        if kind in ("group", "namespace"):
            yield from leaves(element, here)
        elif kind == "edit-group":
            yield from leaves(element["$prototype"], here)
        else:
            yield here, element


def js_default(element, key=False):
    """The value Uyuni's form starts a field with (FormulaFormContextProvider.defaultValue)."""
    kind = element.get("$type", "text")
    if kind == "boolean":
        return element.get("$default", False)
    if kind == "select":
        return element.get("$default", element["$values"][0])
    return element.get("$default", "")


def untouched_fields(node):
    """A group's fields as the form saves them untouched (a nested group as its own dict)."""
    return {name: untouched_fields(el) if el.get("$type") in ("group", "namespace") else js_default(el)
            for name, el in node.items() if not name.startswith("$")}


def untouched_item():
    """The sample item Uyuni adds to an empty edit-group ($newItemValue), as saved."""
    return untouched_fields(prototype)


def untouched_form():
    """What saving the form without touching it stores (the sample item kept, keyed by $key)."""
    def walk(node):
        out = {}
        for name, element in node.items():
            if name.startswith("$"):
                continue
            kind = element.get("$type", "text")
            if kind in ("group", "namespace"):
                out[name] = walk(element)
            elif kind == "edit-group":
                key = js_default(element["$prototype"]["$key"], key=True)
                out[name] = {key: untouched_item()} if key != "" else {}
            else:
                out[name] = js_default(element)
        return out
    return walk(layout)


def set_field(system, path, value):
    """system data with the field at PATH set; prototype fields go into one md* entry."""
    data = copy.deepcopy(system)
    parts = path.split(".")
    if parts[0] == "arrays":
        item = dict(untouched_item(), stripe_cache_size=32768) if parts[1] == "preread_bypass_threshold" \
            else untouched_item()
        if parts[1:] == ["sync_boost", "during"]:
            item["sync_boost"]["sync_speed_max"] = "500000"  # a boost to be in force during them
        key = "md*"
        if parts[1] == "$key":
            key = value
        else:
            put_field(item, parts[1:], value)
        data["mdtune"]["arrays"] = {key: item}
        return data
    put_field(data["mdtune"], parts, value)
    return data


def put_field(node, parts, value):
    """Set the field at the path PARTS inside NODE (through its nested groups)."""
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = value


def field_of(item, parts):
    """The value of a field of an edit-group item by its path inside it (a nested group's too)."""
    for part in parts:
        item = item.get(part) if isinstance(item, dict) else None
    return item


# --- 1. the form's rules are ones Uyuni enforces -------------------------------------------
def walk_all(node, path=""):
    for name, element in node.items():
        if isinstance(element, dict):
            yield f"{path}.{name}" if path else name, element
            yield from walk_all(element, f"{path}.{name}" if path else name)


problems = []
for path, element in walk_all(layout):
    for attr in ("$visible", "$visibleIf", "$required", "$disabled"):
        if attr in element and not isinstance(element[attr], bool):
            problems.append(f"{path}: {attr} is an expression ({element[attr]!r})")
check("form.yml: no $visible/$required/$disabled expressions (Uyuni ids are only parent#child)",
      not problems, *problems)

problems = []
for path, element in leaves(layout["mdtune"]):
    if path.startswith("arrays."):
        continue
    if "$placeholder" in element and "$default" not in element:
        problems.append(f"{path}: $placeholder {element['$placeholder']!r} becomes the pillar value")
check("form.yml: no field outside the prototype has a $placeholder without a $default", not problems,
      *problems)

problems = []
for path, element in leaves(layout["mdtune"]):
    if element.get("$type") == "number":
        missing = [a for a in ("$min", "$max", "$match") if a not in element]
        if missing:
            problems.append(f"{path}: no {', '.join(missing)}")
check("form.yml: every number field has $min, $max and a $match that Uyuni enforces on save",
      not problems, *problems)

problems = [p for p, _ in leaves(layout["mdtune"]) if p not in CANDIDATES and p not in FORMULA_ONLY]
check("form.yml: every field has candidate values in this check", not problems,
      *[f"{p}: add candidates to CANDIDATES (or FORMULA_ONLY)" for p in problems])

# --- 2. every field: the form accepts exactly what mdtune accepts --------------------------
baseline = {"mdtune": uyuni_pillar.pillar(layout)["mdtune"]}
for path, element in leaves(layout["mdtune"]):
    if path not in CANDIDATES:
        continue
    disagree = []
    for value in CANDIDATES[path]:
        saves, unflagged = form_accepts(element, value, key=path.endswith("$key"))
        pillar = uyuni_pillar.pillar(layout, {}, set_field(baseline, path, value))
        try:
            accepted, out = run_binary(desired(pillar["mdtune"]))
        except AssertionError as exc:
            disagree.append(str(exc))
            continue
        if saves != accepted:
            disagree.append(f"{value!r}: form {'saves' if saves else 'refuses'} it, mdtune "
                            f"{'accepts' if accepted else 'refuses'} it ({out.get('msg', '')[:150]})")
        elif element.get("$type") == "number" and unflagged != saves:
            disagree.append(f"{value!r}: $min/$max and $match disagree (saves={saves})")
        elif element.get("$type") != "number" and "$match" in element and value != "" and unflagged != saves:
            disagree.append(f"{value!r}: the browser's pattern and Uyuni's ^...$ check disagree")
    check(f"field {path}: the form saves exactly what mdtune accepts "
          f"({len(CANDIDATES[path])} values)", not disagree, *disagree)
    for value in STRICTER.get(path, []):
        saves, _ = form_accepts(element, value, key=path.endswith("$key"))
        pillar = uyuni_pillar.pillar(layout, {}, set_field(baseline, path, value))
        accepted, _ = run_binary(desired(pillar["mdtune"]))
        check(f"field {path}: {value!r} is refused by the form although mdtune takes it (documented)",
              not saves and accepted, f"form saves={saves}, mdtune accepts={accepted}")

# --- 3. whole pillars: defaults, the untouched form, pillar.example ------------------------
defaults = uyuni_pillar.pillar(layout)
args = desired(defaults["mdtune"])
accepted, default_out = run_binary(args)
check("form defaults (formula assigned, nothing saved): the pillar mdtune accepts, mdtune's defaults",
      accepted and "arrays" not in args and args.get("thread_policy") == "auto",
      f"args {args}", default_out.get("msg", ""))

untouched = untouched_form()
sample = untouched["mdtune"]["arrays"]
problems = []
for path, element in leaves(layout["mdtune"]):
    if path.startswith("arrays.") and path != "arrays.$key":
        value = field_of(sample.get("*", {}), path.split(".")[1:])
        if not form_accepts(element, value)[0]:
            problems.append(f"{path}: {value!r}")
check("the edit-group's sample item ($prototype) is valid as it stands: key '*', every field empty",
      list(sample) == ["*"] and not problems, *problems)
args = desired(uyuni_pillar.pillar(layout, {}, untouched)["mdtune"])
accepted, out = run_binary(args)
check("the untouched form, saved with its sample item: mdtune accepts it and does what the defaults do",
      accepted and out.get("arrays") == default_out.get("arrays")
      and out.get("system") == default_out.get("system"), f"args {args}", out.get("msg", ""))

problems = []
for path, element in leaves(layout["mdtune"]):
    parts = path.split(".")
    if parts[0] == "arrays":
        for key, item in example["mdtune"]["arrays"].items():
            value = key if parts[1] == "$key" else field_of(item, parts[1:])
            if not form_accepts(element, value, key=parts[1] == "$key")[0]:
                problems.append(f"arrays.{key}.{'.'.join(parts[1:])}: {value!r}")
        continue
    node = example["mdtune"]
    for part in parts:
        node = node.get(part) if isinstance(node, dict) else None
    if not form_accepts(element, node)[0]:
        problems.append(f"{path}: {node!r}")
check("pillar.example: every value is one the form saves", not problems, *problems)
merged = uyuni_pillar.pillar(layout, {}, example)
check("pillar.example: complete as the form writes it (Uyuni's merge leaves it as it is)",
      merged == example, f"merged: {json.dumps(merged)[:300]}")
args = desired(merged["mdtune"])
accepted, out = run_binary(args)
check("pillar.example through Uyuni's merge: mdtune accepts it", accepted, out.get("msg", ""))

group = uyuni_pillar.pillar(layout, example, {"mdtune": {"speed_limit_max": 300000}})
check("group data plus a system value: the system's wins, the rest (arrays whole) is the group's",
      group["mdtune"]["speed_limit_max"] == 300000
      and group["mdtune"]["arrays"] == example["mdtune"]["arrays"])

with open(os.path.join(os.environ.get("FORM_CHECK_OUT", "."), "form-defaults.json"), "w") as f:
    json.dump(defaults, f)
with open(os.path.join(os.environ.get("FORM_CHECK_OUT", "."), "form-untouched.json"), "w") as f:
    json.dump(uyuni_pillar.pillar(layout, {}, untouched), f)
sys.exit(1 if failures else 0)
