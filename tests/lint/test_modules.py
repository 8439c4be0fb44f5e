"""Self-test of tests/lint/modules.py: small src/ trees with a known verdict each.

Run: python3 -m unittest discover -s tests/lint -p 'test_*.py' (tests/lint/run.sh does).
Each tree is written to a temporary directory and checked through the command line (exit status
and output) and through the Graph class (the edges found).
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import modules  # noqa: E402

CHECKER = os.path.join(HERE, "modules.py")


class Tree:
    """A temporary crate: Cargo.toml and src/ with the given files (path -> text)."""

    def __init__(self, files, name="demo"):
        self.dir = tempfile.TemporaryDirectory(prefix="mdtune-lint-")
        self.src = os.path.join(self.dir.name, "src")
        with open(os.path.join(self.dir.name, "Cargo.toml"), "w") as f:
            f.write(f'[package]\nname = "{name}"\nversion = "0.1.0"\n')
        for rel, text in files.items():
            path = os.path.join(self.src, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(textwrap.dedent(text))

    def run(self, *args):
        p = subprocess.run([sys.executable, CHECKER, self.src, *args],
                           capture_output=True, text=True, check=False)
        return p.returncode, p.stdout + p.stderr

    def graph(self):
        return modules.Graph(self.src, 400, modules.crate_name(self.src))

    def edges(self):
        g = self.graph()
        return {(g.name(a), g.name(b)) for a, b in g.edges}

    def close(self):
        self.dir.cleanup()


# A clean tree in the house style: faces re-export their children, siblings import siblings,
# and every trap for a naive checker is there (comments, strings, tests, declarations).
CLEAN = {
    "main.rs": """\
        //! The edge.
        use demo::run::run;
        fn main() { run(); }
        """,
    "lib.rs": """\
        //! The crate's face.
        mod plan;
        mod run;
        mod spec;
        mod sys;
        pub use run::run;
        """,
    "sys/mod.rs": """\
        //! The floor.
        mod calls;
        pub(crate) use calls::{open, O_NOFOLLOW};
        """,
    "sys/calls.rs": """\
        pub(crate) const O_NOFOLLOW: i32 = 0o400000;
        pub(crate) fn open() -> i32 { O_NOFOLLOW }
        #[cfg(test)]
        mod tests {
            // A test may use the face; it is not part of the graph.
            use crate::sys::open;
            use super::super::*;
            #[test]
            fn opens() { assert_eq!(open(), crate::sys::O_NOFOLLOW); }
        }
        """,
    "spec/mod.rs": """\
        //! Input: see crate::plan::Plan for what comes next (a comment, not an import).
        mod parse;
        pub(crate) use self::parse::{Spec, parse};
        """,
    "spec/parse.rs": """\
        /* crate::run::run is mentioned in a block /* nested */ comment: crate::plan */
        pub(crate) struct Spec { pub(crate) name: &'static str }
        pub(crate) fn parse(text: &str) -> Spec {
            let _quote = '"';
            let _raw = r#"crate::plan::Plan and "quotes""#;
            let _s = "super::run::run() in a string";
            let _ = text;
            Spec { name: "md0" }
        }
        """,
    "plan/mod.rs": """\
        //! The plan.
        mod build;
        mod hold;
        pub(crate) use build::{plan, Plan};
        """,
    "plan/build.rs": """\
        use crate::spec::{self, Spec};
        use super::hold::held;
        pub(crate) struct Plan(pub(crate) bool);
        pub(in crate::plan) fn helper() -> bool { true }
        pub(crate) fn plan(s: &Spec) -> Plan {
            let _ = spec::parse(s.name);
            Plan(held() && helper() && crate::sys::open() > 0)
        }
        """,
    "plan/hold.rs": """\
        pub(crate) fn held() -> bool { crate::sys::O_NOFOLLOW != 0 }
        """,
    "run/mod.rs": """\
        //! One run.
        mod lock;
        pub fn run() {
            let _l = lock::take();
            let s = crate::spec::parse("{}");
            let _p = crate::plan::plan(&s);
        }
        """,
    "run/lock.rs": """\
        pub(crate) fn take() -> i32 { crate::sys::open() }
        """,
}


class CleanTree(unittest.TestCase):
    def setUp(self):
        self.t = Tree(CLEAN)

    def tearDown(self):
        self.t.close()

    def test_clean_tree_passes(self):
        rc, out = self.t.run()
        self.assertEqual(rc, 0, out)
        self.assertIn("0 cycles", out)
        self.assertNotIn("cycle:", out)

    def test_modules_are_named_by_path(self):
        g = self.t.graph()
        names = sorted(g.name(m) for m in g.files)
        self.assertEqual(names, ["crate", "main", "plan", "plan::build", "plan::hold", "run",
                                 "run::lock", "spec", "spec::parse", "sys", "sys::calls"])

    def test_edges_found_and_not_found(self):
        e = self.t.edges()
        for want in [("main", "run"),                  # demo::run from the binary
                     ("crate", "run"),                 # pub use run::run
                     ("sys", "sys::calls"),            # pub(crate) use calls::{...}
                     ("spec", "spec::parse"),          # pub(crate) use self::parse
                     ("plan::build", "spec"),          # use crate::spec::{self, ...}
                     ("plan::build", "plan::hold"),    # use super::hold (a sibling)
                     ("plan::build", "sys"),           # crate::sys::open() in code
                     ("run", "run::lock"),             # lock::take(): a child named bare
                     ("run", "plan"),                  # crate::plan::plan: plan/plan.rs is no file
                     ("run::lock", "sys")]:
            self.assertIn(want, e)
        for unwanted in [("crate", "plan"), ("crate", "spec"),  # `mod x;` is no import
                         ("spec", "plan"), ("spec::parse", "run"), ("spec::parse", "plan"),
                         ("sys::calls", "sys"),                  # only in #[cfg(test)]
                         ("plan::build", "plan")]:               # pub(in crate::plan)
            self.assertNotIn(unwanted, e)

    def test_deepest_module_wins(self):
        t = Tree({"lib.rs": "mod a;\nmod b;\n",
                  "a/mod.rs": "mod c;\n",
                  "a/c.rs": "pub(crate) fn f() {}\n",
                  "b.rs": "pub(crate) fn g() { crate::a::c::f(); crate::a::Missing::x(); }\n"})
        try:
            e = t.edges()
            self.assertIn(("b", "a::c"), e)
            self.assertIn(("b", "a"), e)
        finally:
            t.close()


class Cycles(unittest.TestCase):
    def verdict(self, files):
        t = Tree(files)
        try:
            return t.run()
        finally:
            t.close()

    def test_cycle_through_use_crate(self):
        rc, out = self.verdict({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::Y;\npub(crate) struct X(Y);\n",
            "b.rs": "use crate::{a::{self, X}};\npub(crate) struct Y;\nfn f(_: a::X) {}\n",
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("cycle: a -> b -> a", out)
        self.assertIn("1 cycles", out)

    def test_cycle_through_super(self):
        rc, out = self.verdict({
            "lib.rs": "mod plan;\n",
            "plan/mod.rs": "mod x;\nmod y;\n",
            "plan/x.rs": "use super::y::Thing;\npub(crate) fn f(_: Thing) {}\n",
            "plan/y.rs": "pub(crate) struct Thing;\nfn g() { super::x::f(Thing) }\n",
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("cycle: plan::x -> plan::y -> plan::x", out)

    def test_cycle_through_super_super(self):
        rc, out = self.verdict({
            "lib.rs": "mod a;\nmod b;\n",
            "a/mod.rs": "mod deep;\n",
            "a/deep.rs": "pub(crate) fn f() { super::super::b::g() }\n",
            "b.rs": "pub(crate) fn g() {}\nfn h() { crate::a::deep::f() }\n",
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("cycle: a::deep -> b -> a::deep", out)

    def test_face_cycle_through_super(self):
        rc, out = self.verdict({
            "lib.rs": "mod plan;\n",
            "plan/mod.rs": "mod build;\npub(crate) use build::plan;\npub(crate) struct Plan;\n",
            "plan/build.rs": "use super::Plan;\npub(crate) fn plan() -> Plan { Plan }\n",
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("cycle: plan -> plan::build -> plan", out)

    def test_face_cycle_through_crate_path(self):
        rc, out = self.verdict({
            "lib.rs": "mod plan;\n",
            "plan/mod.rs": "mod build;\npub(crate) use build::plan;\npub(crate) struct Plan;\n",
            "plan/build.rs": "pub(crate) fn plan() -> crate::plan::Plan { crate::plan::Plan }\n",
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("cycle: plan -> plan::build -> plan", out)

    def test_face_cycle_at_the_crate_root(self):
        rc, out = self.verdict({
            "lib.rs": "mod a;\npub use a::f;\npub struct Thing;\n",
            "a.rs": "pub fn f() -> crate::Thing { crate::Thing }\n",
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("cycle: a -> crate -> a", out)

    def test_declaration_alone_is_no_cycle(self):
        rc, out = self.verdict({
            "lib.rs": "mod a;\npub struct Thing;\n",
            "a.rs": "pub fn f() -> crate::Thing { crate::Thing }\n",
        })
        self.assertEqual(rc, 0, out)

    def test_a_longer_cycle_reads_as_a_chain(self):
        rc, out = self.verdict({
            "lib.rs": "mod a;\nmod b;\nmod c;\n",
            "a.rs": "use crate::b;\nfn f() { b::g() }\n",
            "b.rs": "pub(crate) fn g() { crate::c::h() }\n",
            "c.rs": "pub(crate) fn h() {}\nfn k() { let _ = crate::a::f; }\n",
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("cycle: a -> b -> c -> a", out)
        self.assertIn("c.rs:2: crate::a::f", out)


class Size(unittest.TestCase):
    def tree(self, code_lines, extra=""):
        body = "".join(f"pub fn f{i}() {{}}\n" for i in range(code_lines - 1))
        return Tree({"lib.rs": "mod big;\n", "big.rs": "mod tail;\n" + body + extra,
                     "big/tail.rs": "pub fn t() {}\n"})

    def test_401_lines_fail(self):
        t = self.tree(401)
        try:
            rc, out = t.run()
        finally:
            t.close()
        self.assertEqual(rc, 1, out)
        self.assertIn("too big:", out)
        self.assertIn("big.rs: 401 lines of non-test code (limit 400)", out)

    def test_400_lines_pass(self):
        t = self.tree(400)
        try:
            rc, out = t.run()
        finally:
            t.close()
        self.assertEqual(rc, 0, out)
        self.assertIn("largest", out)
        self.assertIn("(400 lines of non-test code)", out)

    def test_comments_blank_lines_and_tests_do_not_count(self):
        extra = ("\n\n// a comment\n/* a block\n   comment */\n/// doc\n"
                 "#[cfg(test)]\nmod tests {\n" + "    fn t() {}\n" * 300 + "}\n")
        t = self.tree(400, extra)
        try:
            rc, out = t.run()
        finally:
            t.close()
        self.assertEqual(rc, 0, out)

    def test_out_of_line_test_module_is_left_out(self):
        t = Tree({"lib.rs": "mod a;\n",
                  "a.rs": "#[cfg(test)]\nmod tests;\npub(crate) fn f() {}\n",
                  "a/tests.rs": "use crate::a::f;\n" + "fn t() { f() }\n" * 500})
        try:
            rc, out = t.run()
            self.assertEqual(rc, 0, out)
            self.assertNotIn("a::tests", {t.graph().name(m) for m in t.graph().files})
        finally:
            t.close()

    def test_file_marked_test_inside_is_left_out(self):
        t = Tree({"lib.rs": "mod a;\nmod b;\npub use a::f;\n",
                  "a.rs": "pub fn f() {}\n",
                  "b.rs": "//! Tests only.\n#![cfg(test)]\nuse crate::a::f;\n"
                          + "fn t() { f() }\n" * 500})
        try:
            rc, out = t.run()
            self.assertEqual(rc, 0, out)
            self.assertNotIn("b", {t.graph().name(m) for m in t.graph().files})
        finally:
            t.close()

    def test_max_lines_option(self):
        t = self.tree(50)
        try:
            rc, out = t.run("--max-lines", "49")
        finally:
            t.close()
        self.assertEqual(rc, 1, out)


class Lexing(unittest.TestCase):
    def test_mask_keeps_lines_and_hides_text(self):
        src = ('let a = "crate::x\n::y"; // crate::z\n'
               'let b = \'"\'; let c: &\'static str = r#"a"b"#;\n'
               "/* /* crate::w */ */ let d = b'x';\n")
        m = modules.mask(src)
        self.assertEqual(m.count("\n"), src.count("\n"))
        self.assertNotIn("crate", m)
        self.assertIn("&'static str", m)
        self.assertIn("let d = b'.';", m)

    def test_use_trees(self):
        got = modules.use_paths("crate::{a::{self, X}, b::c::{D, e::*}, f as g}")
        self.assertEqual(got, [("crate", "a"), ("crate", "a", "X"), ("crate", "b", "c", "D"),
                               ("crate", "b", "c", "e"), ("crate", "f")])


if __name__ == "__main__":
    unittest.main()
