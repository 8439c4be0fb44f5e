"""The monitoring suite's readers (tests/monitoring/run.sh), one subcommand each:

  tick-command UNIT BINARY TEXTFILE_DIR ROOT
      the unit's ExecStart as systemd runs it, one word a line: each ${VAR} (a whole word)
      replaced by its value, /usr/sbin/mdtune by BINARY
  persisted REPORT_JSON
      fails unless the report is of a run that did not fail and changed what it persists
  alerts INSTANCE STATE < /api/v1/alerts
      the names of the alerts in STATE for INSTANCE, sorted, on one line
  value < /api/v1/query
      the first result's value, or "none"
"""

import json
import re
import shlex
import sys


def tick_command(unit, binary, textfile, root):
    env = {"TEXTFILE_DIR": textfile, "MDTUNE_ROOT": root}
    with open(unit) as f:
        line = next(line for line in f if line.startswith("ExecStart="))
    words = shlex.split(line[len("ExecStart="):])
    assert words[0] == "/usr/sbin/mdtune", words
    words[0] = binary
    for w in words:
        print(re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], w))


def persisted(report):
    r = json.loads(report)
    assert r["failed"] is False and r["persist"]["changed"], r["msg"]


def alerts(instance, state):
    found = json.load(sys.stdin)["data"]["alerts"]
    print(" ".join(sorted(a["labels"]["alertname"] for a in found
                          if a["labels"].get("instance") == instance and a["state"] == state)))


def value():
    r = json.load(sys.stdin)["data"]["result"]
    print(r[0]["value"][1] if r else "none")


COMMANDS = {"tick-command": tick_command, "persisted": persisted, "alerts": alerts, "value": value}

if __name__ == "__main__":
    COMMANDS[sys.argv[1]](*sys.argv[2:])
