"""Checks of the Salt modules' source, read with ast (tests/salt/run.sh runs them).

docstrings FILE...: Salt's own docstring rule for execution modules (tasks/docstrings.py in Salt's
repository): every public function has a docstring, and in an execution module (a path with
_modules) it has "CLI Example:" (case-sensitive) followed by a bash code block of salt commands.

wrapper-args MODULE WRAPPER: the salt-ssh wrapper stands in for the execution module under salt-ssh,
so each of its functions takes the arguments of the execution function of the same name.

Each prints nothing and exits 0 when the rule holds, or names every problem and exits 1.
"""

import ast
import inspect
import re
import sys


def public_functions(path):
    tree = ast.parse(open(path).read())
    return tree, [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")
    ]


def docstring_problems(path):
    tree, functions = public_functions(path)
    problems = [] if ast.get_docstring(tree) else [f"{path}: no module docstring"]
    for node in functions:
        doc = ast.get_docstring(node, clean=False)
        if not doc:
            problems.append(f"{path}: {node.name} has no docstring")
        elif "_modules" not in path:
            continue
        elif not re.search(r"CLI Example(?:s)?:", doc):
            problems.append(f"{node.name}: no 'CLI Example:' (Salt's checker is case-sensitive)")
        elif not re.search(
            r"CLI Example:\n\n\.\. code-block:: bash\n\n    salt '\*' mdtune\." + node.name,
            inspect.cleandoc(doc),
        ):
            problems.append(
                f"{node.name}: 'CLI Example:' is not followed by a bash block "
                f"with salt '*' mdtune.{node.name}"
            )
    return problems


def wrapper_problems(module_path, wrapper_path):
    module, wrapper = (
        {n.name: ast.dump(n.args) for n in public_functions(p)[1]}
        for p in (module_path, wrapper_path)
    )
    problems = [f"{name}: not in the execution module" for name in wrapper if name not in module]
    problems += [
        f"{name}: arguments differ from the execution module's"
        for name in wrapper
        if name in module and wrapper[name] != module[name]
    ]
    return problems


def main(argv):
    if len(argv) >= 2 and argv[0] == "docstrings":
        problems = [p for path in argv[1:] for p in docstring_problems(path)]
    elif len(argv) == 3 and argv[0] == "wrapper-args":
        problems = wrapper_problems(argv[1], argv[2])
    else:
        sys.exit(f"usage: {sys.argv[0]} docstrings FILE... | wrapper-args MODULE WRAPPER")
    print("\n".join(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
