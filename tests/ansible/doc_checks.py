"""What tests/ansible/run.sh checks in the modules' documentation, as ansible-doc, galaxy-importer
and the EXAMPLES give it. One subcommand per check; each exits non-zero with an AssertionError that
says what is wrong.

  attributes              stdin: `ansible-doc -j mdtune`; check_mode and diff_mode are full.
  listed COUNT            stdin: `ansible-doc -t module --json <every module>`; each module's docs
                          load, name it, have examples, return keys and options (a state option for
                          mdtune, none for mdtune_info); COUNT modules in all.
  importer RESULT NAME... galaxy-importer's importer_result.json lists exactly the modules NAME...,
                          each with its documented options.
  examples-play SIDECAR INFO ROOT OUT
                          writes to OUT a playbook of every EXAMPLES task of the two sidecars, in
                          order, each mdtune task given root ROOT and become dropped; the tasks
                          must name the modules by their FQCN.
"""

import json
import sys

import yaml


def attributes():
    doc = json.load(sys.stdin)["mdtune"]["doc"]
    assert doc["attributes"]["check_mode"]["support"] == "full", doc["attributes"]
    assert doc["attributes"]["diff_mode"]["support"] == "full", doc["attributes"]
    print("ansible-doc -j: %d options, attributes ok" % len(doc["options"]))


def listed(count):
    docs = json.load(sys.stdin)
    for name, d in sorted(docs.items()):
        doc = d["doc"]
        assert doc["module"] == name.split(".")[-1], (name, doc["module"])
        assert d["examples"] and d["return"] and doc["options"], name
        info = "_info" in name
        assert ("state" in doc["options"]) != info, (name, sorted(doc["options"]))
        assert name.endswith(("mdtune", "mdtune_info")) or "build)" in doc["short_description"], (
            name
        )
        print("%s: %d options, %d return keys" % (name, len(doc["options"]), len(d["return"])))
    assert len(docs) == int(count), sorted(docs)


def importer(result_path, *names):
    result = json.load(open(result_path))
    expected = sorted(names)
    modules = sorted(c["name"] for c in result["contents"] if c["content_type"] == "module")
    assert modules == expected, "Galaxy would list %s, expected %s" % (modules, expected)
    docs = {d["content_name"]: d["doc_strings"] for d in result["docs_blob"]["contents"]}
    for name in expected:
        assert docs.get(name, {}).get("doc", {}).get("options"), "no documentation for %s" % name
    print(
        "galaxy-importer: %d modules, each with its documentation: %s"
        % (len(modules), ", ".join(modules))
    )


def rooted(task, root):
    """Gives an EXAMPLES task's mdtune module the root; returns how many module calls it has."""
    task.pop("become", None)
    short = [k for k in task if k in ("mdtune", "mdtune_info", "ansible.legacy.mdtune")]
    assert not short, "EXAMPLES task %r uses the short name %s, not the FQCN" % (
        task.get("name"),
        short,
    )
    modules = 0
    if "action" in task:
        assert str(task["action"]).startswith("mdtune.mdraid."), task["action"]
        task["args"]["root"] = root
        modules += 1
    for key in ("mdtune.mdraid.mdtune", "mdtune.mdraid.mdtune_info"):
        if key in task:
            task[key] = dict(task[key] or {}, root=root)
            modules += 1
    return modules


def examples_play(sidecar, info, root, out):
    tasks = []
    for path in (sidecar, info):
        tasks += yaml.safe_load(yaml.safe_load(open(path))["EXAMPLES"])
    modules = sum(rooted(task, root) for task in tasks)
    assert modules >= 9, "expected at least 9 mdtune tasks in EXAMPLES, found %d" % modules
    play = [
        {
            "name": "EXAMPLES",
            "hosts": "all",
            "gather_facts": True,
            "gather_subset": ["min"],
            "tasks": tasks,
        }
    ]
    yaml.safe_dump(play, open(out, "w"), sort_keys=False)
    print("%d tasks, %d of them mdtune.mdraid modules" % (len(tasks), modules))


COMMANDS = {
    "attributes": attributes,
    "listed": listed,
    "importer": importer,
    "examples-play": examples_play,
}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit("usage: %s %s ARGS..." % (sys.argv[0], "|".join(COMMANDS)))
    COMMANDS[sys.argv[1]](*sys.argv[2:])
