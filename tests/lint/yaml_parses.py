"""Every YAML file given parses with PyYAML's safe loader, as Ansible and Salt read them.

Usage: yaml_parses.py FILE...  Prints one line per file that does not parse, then a count; exits 1
when any does not.
"""
import sys

import yaml


def main(paths):
    bad = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                list(yaml.safe_load_all(f))
        except yaml.YAMLError as exc:
            bad.append(f"{path}: {exc}")
    print("\n".join(bad + [f"{len(paths)} YAML files, {len(bad)} that do not parse"]))
    return 1 if bad or not paths else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
