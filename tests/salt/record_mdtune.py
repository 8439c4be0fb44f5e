"""A stand-in for the mdtune binary that records what it was given (tests/salt/run.sh): what the
Salt modules pass to the binary, independent of mdtune.

run.sh copies it, with its venv's Python as the interpreter line, to an executable file and gives
that as binary=PATH; the environment variable MDTUNE_RECORD_TO names the JSON file it writes its
arguments (argv after the program), its stdin and MDTUNE_CALLER to. It prints a result that
reports nothing done.
"""

import json
import os
import sys

with open(os.environ["MDTUNE_RECORD_TO"], "w") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "stdin": sys.stdin.read(),
                        "caller": os.environ.get("MDTUNE_CALLER")}))
print(json.dumps({"changed": False, "failed": False, "msg": "recorded", "arrays": []}))
