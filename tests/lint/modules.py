#!/usr/bin/env python3
"""Checks the module graph of a Rust src/ tree: no import cycles, no oversized file.

Usage: tests/lint/modules.py [SRC_DIR] [--max-lines N] [--crate-name NAME] [--edges]
(default: the repository's src/, 400 lines, the [lib] or [package] name in SRC_DIR/../Cargo.toml).

Modules. Every .rs file under SRC_DIR is one module: src/a.rs and src/a/mod.rs are `a`,
src/a/b.rs is `a::b`; src/main.rs and src/lib.rs are the crate root, `crate` (when both exist,
main.rs is the binary's root, `main`, which uses the library's modules).

Edges. A file's module depends on every module its non-test code names:
  - `use` trees: `use crate::a::{b, c::{self, D}}`, `use super::x`, `use self::x`, `use x::y`
    where `x` is a child module (`mod x;` in the same file), `pub(crate) use` in a face;
  - paths anywhere in the code: `crate::a::b::f()`, `super::x`, `super::super::x`, `self::x::y`,
    `x::f()` for a child `x`, and `NAME::a` for the library crate's name (from main.rs).
A path resolves to the deepest module file that exists: `crate::plan::build::plan` is an edge to
`plan::build` when that module exists, else to `plan`. So `super::Name` for a Name defined in the
parent's mod.rs, or `crate::plan::Name` from inside plan/, is an edge up to the face, and with the
face's own `pub(crate) use child::...` it closes the cycle parent -> child -> parent.
Not edges: `mod x;` declarations (a declaration is not an import), text in comments and string
literals, paths inside `pub(in path)`, and any item under `#[cfg(test)]` (a `#[cfg(test)] mod
tests { ... }` block, or a `#[cfg(test)] mod x;` whose file is then left out altogether, as is
a file that opens with `#![cfg(test)]`).

Size. A file's size is its non-test code: the lines that are not blank and not only a comment,
outside the items under `#[cfg(test)]`. A file over --max-lines fails.

Prints each cycle as a chain (`a -> b -> a`, with where each arrow comes from), each oversized
file, and a one-line summary; exits 1 when there is a cycle or an oversized file, 2 on bad usage.
Python 3 standard library only.

Why a reader of its own, and not the compiler's view: nothing available gives the graph this
rule is about (which module names which, test code left out) more simply. rustc's
`-Zunpretty=expanded` (nightly) prints source back, not edges, and would still need a reader
like this one; cargo-modules would bring rust-analyzer's crates into every CI build (minutes on
two cores) for the same `use`-based edges; rust-analyzer's own `lsif` dump (a rustup component,
not installed here) resolves every reference, but counts every use of a type or method as an
edge, a stricter rule than this one, whose change would have to be agreed first. So the rule stays here, with its
self-test (tests/lint/test_modules.py) holding each case it reads.
"""

import argparse
import os
import re
import sys
from collections import deque

ROOT = "crate"
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
PATH_RE = re.compile(r"(?<![A-Za-z0-9_:$])(\$?" + IDENT + r"(?:\s*::\s*" + IDENT + r")+)")
USE_RE = re.compile(r"(?<![A-Za-z0-9_])use\s+([^;]*);")
MOD_DECL_RE = re.compile(r"(?<![A-Za-z0-9_])mod\s+(" + IDENT + r")\s*([;{])")
PUB_IN_RE = re.compile(r"\bpub\s*\(\s*in\s+[^)]*\)")
CFG_TEST_RE = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
INNER_CFG_TEST_RE = re.compile(r"#\s*!\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
ATTR_RE = re.compile(r"\s*#\s*\[")


# --- lexing: comments and string literals out, lines kept --------------------------------------

def mask(text):
    """Returns text with comments blanked (spaces, newlines kept) and the contents of string and
    char literals replaced by '.', so that no path can be found inside them and every line keeps
    its number. Nested block comments, raw strings (r#"..."#), byte and C strings are handled."""
    out = []
    i, n = 0, len(text)

    def ident_char(c):
        return c.isalnum() or c == "_"

    def blank(s):
        return "".join("\n" if c == "\n" else " " for c in s)

    def dots(s):
        return "".join("\n" if c == "\n" else "." for c in s)

    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text[i:j]))
            i = j
        elif c == "/" and nxt == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif c in "rbc" and not (i > 0 and ident_char(text[i - 1])):
            m = re.match(r'(?:br|cr|r)(#*)"', text[i:])
            if m:
                close = '"' + m.group(1)
                start = i + m.end()
                j = text.find(close, start)
                j = n if j < 0 else j
                out.append(text[i:start] + dots(text[start:j]) + close)
                i = j + len(close)
                continue
            if c in "bc" and nxt in "\"'":
                out.append(c)
                i += 1
                continue
            out.append(c)
            i += 1
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('"' + dots(text[i + 1:j]) + '"')
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}', '\'') or a lifetime / label ('a, 'static).
            m = re.match(r"'(?:\\(?:u\{[0-9A-Fa-f]*\}|x[0-9A-Fa-f]{2}|.)|[^\\'\n])'", text[i:])
            if m:
                out.append("'" + "." * (m.end() - 2) + "'")
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            if ident_char(c):
                j = i
                while j < n and ident_char(text[j]):
                    j += 1
                out.append(text[i:j])
                i = j
            else:
                out.append(c)
                i += 1
    return "".join(out)


def item_end(text, j):
    """The end of the item that starts at j (masked text): after its `;` or its `{...}` block."""
    depth, n = 0, len(text)
    while j < n:
        c = text[j]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == ";" and depth <= 0:
            return j + 1
        elif c == "{" and depth <= 0:
            braces = 0
            while j < n:
                if text[j] == "{":
                    braces += 1
                elif text[j] == "}":
                    braces -= 1
                    if braces == 0:
                        return j + 1
                j += 1
            return n
        j += 1
    return n


def strip_tests(masked):
    """Blanks every item under #[cfg(test)]. Returns (text, names of `#[cfg(test)] mod x;`)."""
    test_children = set()
    text = masked
    pos = 0
    while True:
        m = CFG_TEST_RE.search(text, pos)
        if not m:
            break
        j = m.end()
        while True:  # further attributes on the same item
            a = ATTR_RE.match(text, j)
            if not a:
                break
            j = item_end_attr(text, a.end())
        d = re.match(r"\s*(?:pub\s*(?:\([^)]*\))?\s*)?mod\s+(" + IDENT + r")\s*;", text[j:])
        if d:
            test_children.add(d.group(1))
        end = item_end(text, j)
        region = text[m.start():end]
        text = text[:m.start()] + "".join("\n" if c == "\n" else " " for c in region) + text[end:]
        pos = m.start() + 1
    return text, test_children


def item_end_attr(text, j):
    """j is just past `#[`: the position after the matching `]`."""
    depth = 1
    while j < len(text) and depth:
        if text[j] == "[":
            depth += 1
        elif text[j] == "]":
            depth -= 1
        j += 1
    return j


def code_lines(text):
    return sum(1 for line in text.splitlines() if line.strip())


# --- use trees ------------------------------------------------------------------------------------

def split_top(s, sep=","):
    parts, depth, cur = [], 0, []
    for c in s:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def use_paths(tree, prefix=()):
    """Expands a use tree into full paths (tuples of segments): `a::{b, c::{self, d}}` gives
    (a, b), (a, c), (a, c, d). `self` names the prefix itself; `*` and `as x` keep the prefix."""
    tree = re.sub(r"\s+", " ", tree).strip()
    tree = re.sub(r"\s*::\s*", "::", tree)
    if tree.startswith("::"):
        tree = tree[2:]
    if tree.startswith("{") and tree.endswith("}"):
        paths = []
        for sub in split_top(tree[1:-1]):
            paths.extend(use_paths(sub, prefix))
        return paths
    brace = tree.find("{")
    if brace >= 0:
        head = tree[:brace].rstrip(":")
        segs = tuple(s for s in head.split("::") if s)
        return use_paths(tree[brace:], prefix + segs)
    tree = re.sub(r"\s+as\s+\S+$", "", tree)
    segs = [s for s in tree.split("::") if s]
    if segs and segs[-1] == "*":
        segs = segs[:-1]
    if segs == ["self"]:
        return [prefix] if prefix else []
    return [prefix + tuple(segs)] if prefix or segs else []


# --- the tree ------------------------------------------------------------------------------

def module_of(rel):
    """src-relative file path -> module path tuple; () is the crate root."""
    parts = rel[:-3].split(os.sep)
    if parts in (["main"], ["lib"]):
        return ()
    if parts[-1] == "mod":
        parts = parts[:-1]
    return tuple(parts)


def crate_name(src):
    cargo = os.path.join(os.path.dirname(os.path.abspath(src)), "Cargo.toml")
    try:
        with open(cargo, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    section, names = None, {}
    for line in text.splitlines():
        s = re.match(r"\s*\[([^\]]+)\]\s*$", line)
        if s:
            section = s.group(1).strip()
            continue
        m = re.match(r'\s*name\s*=\s*"([^"]+)"', line)
        if m and section in ("package", "lib"):
            names[section] = m.group(1)
    name = names.get("lib") or names.get("package")
    return name.replace("-", "_") if name else None


class Graph:
    def __init__(self, src, max_lines=400, crate=None):
        self.src = src
        self.max_lines = max_lines
        self.crate = crate
        self.files = {}  # module -> rel path
        self.sizes = {}  # rel path -> non-test code lines
        self.edges = {}  # (from, to) -> (rel path, line, text) of the first reference
        self._load()

    def name(self, mod):
        if mod == ("main",) and self.root_is_lib:
            return "main"
        return "::".join(mod) if mod else ROOT

    def _load(self):
        found = []
        for dirpath, dirnames, filenames in os.walk(self.src):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(".rs"):
                    found.append(os.path.relpath(os.path.join(dirpath, f), self.src))
        self.root_is_lib = "lib.rs" in found and "main.rs" in found
        texts, excluded = {}, set()
        for rel in found:
            mod = module_of(rel)
            if rel == "main.rs" and self.root_is_lib:
                mod = ("main",)
            with open(os.path.join(self.src, rel), encoding="utf-8") as f:
                masked = mask(f.read())
            if INNER_CFG_TEST_RE.search(masked):  # #![cfg(test)]: the whole file is a test
                excluded.add(mod)
            code, test_children = strip_tests(masked)
            texts[rel] = (mod, code)
            for child in test_children:
                excluded.add(mod + (child,) if mod != ("main",) else (child,))
        for rel, (mod, code) in texts.items():
            if mod in excluded or any(mod[:k] in excluded for k in range(1, len(mod))):
                continue
            self.files[mod] = rel
            self.sizes[rel] = code_lines(code)
        for rel, (mod, code) in texts.items():
            if mod in self.files:
                self._edges_of(mod, rel, code)

    def resolve(self, segs):
        """The deepest existing module on the path segs (absolute, from the crate root)."""
        for k in range(len(segs), 0, -1):
            if tuple(segs[:k]) in self.files:
                return tuple(segs[:k])
        return ()

    def _absolute(self, mod, segs, children, depth, binary):
        """A path as written in module mod (inside `depth` inline modules) -> absolute segments,
        or None when it names no module of this crate (std, another crate, a local item).
        In a binary's root (`binary`), the library crate's name stands for `crate`."""
        here = () if mod == ("main",) else mod
        first = segs[0].lstrip("$")
        if first == "crate" or (binary and self.crate and first == self.crate):
            return list(segs[1:])
        if first == "super":
            k = 0
            while k < len(segs) and segs[k] == "super":
                k += 1
            if k <= depth:
                return None  # stays inside the file's own inline modules
            up = k - depth
            if up > len(here):
                return None
            return list(here[: len(here) - up]) + list(segs[k:])
        if depth:
            return None  # self:: and child names inside an inline module name its own items
        if first == "self":
            return list(here) + list(segs[1:])
        if first in children:
            return list(here) + list(segs)
        return None

    def _edges_of(self, mod, rel, code):
        children = {m.group(1) for m in MOD_DECL_RE.finditer(code) if m.group(2) == ";"}
        inline = []  # spans of inline `mod x { ... }` bodies
        for m in MOD_DECL_RE.finditer(code):
            if m.group(2) == "{":
                inline.append((m.end() - 1, item_end(code, m.end() - 1)))
        binary = mod == ("main",) or rel.startswith("bin" + os.sep)
        code = PUB_IN_RE.sub(lambda m: " " * len(m.group(0)), code)

        def add(segs, pos, what):
            depth = sum(1 for a, b in inline if a < pos < b)
            path = self._absolute(mod, segs, children, depth, binary)
            if path is None:
                return
            target = self.resolve(path)
            if target == mod or (mod == ("main",) and target == ()):
                return
            line = code.count("\n", 0, pos) + 1
            self.edges.setdefault((mod, target), (rel, line, what))

        for m in USE_RE.finditer(code):
            for segs in use_paths(m.group(1)):
                if segs:
                    add(segs, m.start(), "use " + "::".join(segs))
        rest = USE_RE.sub(lambda m: "".join("\n" if c == "\n" else " " for c in m.group(0)), code)
        for m in PATH_RE.finditer(rest):
            segs = [s.strip() for s in m.group(1).split("::")]
            add(segs, m.start(), "::".join(segs))

    # --- verdicts ---------------------------------------------------------------------------------

    def cycles(self):
        """One shortest cycle through each edge that lies on a cycle, without repeats."""
        succ = {}
        for a, b in self.edges:
            succ.setdefault(a, set()).add(b)
        found, seen = [], set()
        for a, b in sorted(self.edges, key=lambda e: (self.name(e[0]), self.name(e[1]))):
            path = self._shortest(succ, b, a)
            if path is None:
                continue
            cycle = [a] + path  # a -> b -> ... -> a
            ring = cycle[:-1]
            i = ring.index(min(ring, key=self.name))
            key = tuple(ring[i:] + ring[:i])
            if key not in seen:
                seen.add(key)
                found.append(list(key) + [key[0]])
        return found

    def _shortest(self, succ, start, goal):
        prev, queue = {start: None}, deque([start])
        while queue:
            v = queue.popleft()
            if v == goal:
                path = []
                while v is not None:
                    path.append(v)
                    v = prev[v]
                return path[::-1]
            for w in sorted(succ.get(v, ()), key=self.name):
                if w not in prev:
                    prev[w] = v
                    queue.append(w)
        return None

    def oversized(self):
        return sorted((rel, n) for rel, n in self.sizes.items() if n > self.max_lines)


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src", nargs="?", default=os.path.join(here, "..", "..", "src"))
    ap.add_argument("--max-lines", type=int, default=400)
    ap.add_argument("--crate-name", default=None)
    ap.add_argument("--edges", action="store_true", help="also print every edge and its source")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.src):
        print(f"modules: {a.src} is not a directory", file=sys.stderr)
        return 2
    g = Graph(a.src, a.max_lines, a.crate_name or crate_name(a.src))
    show = os.path.normpath(a.src)

    if a.edges:
        for (x, y), (rel, line, what) in sorted(g.edges.items(), key=lambda e: e[1]):
            print(f"edge: {g.name(x)} -> {g.name(y)}: {os.path.join(show, rel)}:{line}: {what}")
    cycles = g.cycles()
    for cycle in cycles:
        print("modules: cycle: " + " -> ".join(g.name(m) for m in cycle))
        for x, y in zip(cycle, cycle[1:]):
            rel, line, what = g.edges[(x, y)]
            print(f"    {g.name(x)} -> {g.name(y)}: {os.path.join(show, rel)}:{line}: {what}")
    big = g.oversized()
    for rel, n in big:
        print(f"modules: too big: {os.path.join(show, rel)}: {n} lines of non-test code "
              f"(limit {a.max_lines})")
    largest = max(g.sizes.items(), key=lambda kv: (kv[1], kv[0]), default=("-", 0))
    print(f"modules: {len(g.files)} modules, {len(g.edges)} edges, {len(cycles)} cycles, "
          f"{len(big)} files over {a.max_lines} lines; largest {os.path.join(show, largest[0])} "
          f"({largest[1]} lines of non-test code)")
    return 1 if cycles or big else 0


if __name__ == "__main__":
    sys.exit(main())
