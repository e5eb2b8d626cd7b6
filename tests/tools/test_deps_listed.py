#!/usr/bin/python3
"""Every program and Python module the tests use comes from a package `scripts/deps --test`
installs, so `.ci/run` passes on a fresh Debian 12 machine where only `scripts/test` has run.

A machine that once ran `scripts/deps --bench` (or anything else) hides a missing package: the
tests pass there and fail on a new machine. This check does not depend on what is installed
beyond the programs it finds: for each program the test sources name, it asks dpkg which package
ships it, and fails unless that package is listed by `scripts/deps --test --list` or is part of
every Debian system (Essential or Priority: required).

What counts as "named": a quoted word in a test source that is an executable on PATH, and the
first word of a command line in a shell script or a CMake add_test. In Python sources the
words are read from the string constants, leaving out those that are data keys (dict keys,
subscripts, .get() keys): a result field named after fio names no program, and counting it would
make the test's verdict depend on what else happens to be installed. A program named where it is
run (subprocess, shutil.which, spawn, add_test COMMAND) but absent from PATH is an error too:
its package is missing from the list.

Run: /usr/bin/python3 -m unittest -v test_deps_listed   (CTest sets LARDER_SOURCE_DIR).
"""

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import unittest

ROOT = os.environ.get("LARDER_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# Where the test suite's code lives: the tests, the bench smoke tests and what they run.
SOURCE_DIRS = ["tests", "bench/tests", "bench"]
SOURCE_FILES = ["scripts/test", "scripts/build", ".ci/run", "bench/driver/report.py"]
SUFFIXES = (".py", ".mjs", ".js", ".sh", ".cmake", ".txt", "run")

# Where a program is run: its name is the first quoted word of these calls.
RUN_CONTEXT = re.compile(
    r"""(?:subprocess\.\w+|Popen|shutil\.which|spawn|spawnSync|execFile|execFileSync)
        \(\s*\[?\s*["']([a-z][a-z0-9_.+-]*)["']|COMMAND\s+([a-z][a-z0-9_.+-]*)""", re.X)
QUOTED_WORD = re.compile(r"""["']([A-Za-z][A-Za-z0-9_.+-]{1,40})["']""")
# Our own executables (built into build/bin) and interpreters referred to by path.
OWN = {"larder-server", "larder-admin", "larder-bench", "larder-peers", "larder-trace",
       "resp-load", "larder-sizing"}


def own_targets():
    """Executables and libraries the build defines (add_executable / add_library)."""
    names = set(OWN)
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "build"]
        if "CMakeLists.txt" in filenames:
            with open(os.path.join(dirpath, "CMakeLists.txt"), encoding="utf-8") as f:
                names |= set(re.findall(r"add_(?:executable|library)\(\s*([\w.+-]+)", f.read()))
    return names


def source_files():
    for rel in SOURCE_FILES:
        path = os.path.join(ROOT, rel)
        if os.path.isfile(path):
            yield path
    for rel in SOURCE_DIRS:
        top = os.path.join(ROOT, rel)
        recurse = rel != "bench"  # bench/ itself: only its top-level scripts
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if recurse and d not in ("node_modules", "corpus")]
            for name in filenames:
                if name.endswith(SUFFIXES) or name == "CMakeLists.txt":
                    yield os.path.join(dirpath, name)
            if not recurse:
                break


def shell_builtin(word):
    r = subprocess.run(["bash", "-c", 'type -t -- "$1"', "_", word], capture_output=True,
                       text=True)
    return r.stdout.strip() in ("builtin", "keyword", "function", "alias")


def shell_first_words(text):
    """First words of the command lines of a shell script (builtins and keywords excluded)."""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        words = re.split(r"[\s;|&()]+", line)
        for w in words:
            if "=" in w and not w.startswith("="):
                continue  # VAR=value before the command
            if re.fullmatch(r"[A-Za-z][A-Za-z0-9_.+-]*", w) and not shell_builtin(w):
                yield w
            break


DATA_KEY_METHODS = ("get", "setdefault", "pop")


def python_words(text):
    """Quoted words of a Python source, from its string constants, data keys left out."""
    tree = ast.parse(text)
    keys = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys.update(id(k) for k in node.keys if k is not None)
        elif isinstance(node, ast.Subscript):
            keys.add(id(node.slice))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in DATA_KEY_METHODS and node.args):
            keys.add(id(node.args[0]))
    words = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in keys:
            words |= set(QUOTED_WORD.findall(repr(node.value)))
    return words


def programs_named():
    """{program: set of files naming it}, and {program: files running it} (run context)."""
    named, run = {}, {}
    for path in source_files():
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        rel = os.path.relpath(path, ROOT)
        words = python_words(text) if path.endswith(".py") else set(QUOTED_WORD.findall(text))
        run_words = {a or b for a, b in RUN_CONTEXT.findall(text)}
        if text.startswith("#!") and "sh" in text.splitlines()[0]:
            words |= set(shell_first_words(text))
        for w in words | run_words:
            named.setdefault(w, set()).add(rel)
        for w in run_words:
            run.setdefault(w, set()).add(rel)
    return named, run


def listed_packages():
    out = subprocess.run([os.path.join(ROOT, "scripts", "deps"), "--test", "--list"],
                         check=True, capture_output=True, text=True).stdout
    return set(out.split())


def packages_of(paths):
    """{path: the Debian package shipping it (following symlinks), or None}, from one
    dpkg-query for all of them."""
    candidates = {}
    for path in paths:
        candidates[path] = [path, os.path.realpath(path)]
        if path.startswith("/usr/"):  # merged /usr: dpkg may know the file as /bin/... instead
            candidates[path].append(path[len("/usr"):])
    wanted = sorted({c for cs in candidates.values() for c in cs})
    out = subprocess.run(["dpkg-query", "-S", *wanted], capture_output=True, text=True).stdout
    shipped = {}
    for line in out.splitlines():
        if line.startswith("diversion ") or ": " not in line:
            continue
        pkgs, path = line.split(": ", 1)
        shipped.setdefault(path, pkgs.split(",")[0].split(":")[0].strip())
    return {path: next((shipped[c] for c in cs if c in shipped), None)
            for path, cs in candidates.items()}


# Where a program comes from a Debian package (elsewhere, e.g. a pyenv shim: nothing to install).
SYSTEM_DIRS = ("/usr/", "/bin/", "/sbin/")

# installed_packages()'s entry for a package that is not installed.
NOT_INSTALLED = (False, ())


def installed_packages():
    """{package: (on every Debian system, [the packages it depends on])} for every installed
    package, from one dpkg-query (one per package took most of this test's time)."""
    out = subprocess.run(["dpkg-query", "-W",
                          "-f=${Package}\t${Essential} ${Priority}\t${Depends},${Pre-Depends}\n"],
                         check=True, capture_output=True, text=True).stdout
    packages = {}
    for line in out.splitlines():
        name, priority, depends = line.split("\t")
        fields = priority.split()
        needs = [alt.strip().split(" ")[0].split(":")[0].split("|")[0]
                 for alt in depends.split(",") if alt.strip()]
        packages[name] = ("yes" in fields or "required" in fields, needs)
    return packages


def depends_closure(pkgs, installed):
    """The listed packages and everything they depend on (installed ones only)."""
    seen, todo = set(), list(pkgs)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        todo.extend(installed.get(p, NOT_INSTALLED)[1])
    return seen


class DepsListedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.listed = listed_packages()
        cls.installed = installed_packages()
        cls.closure = depends_closure(cls.listed, cls.installed)

    def ok_package(self, pkg):
        return pkg in self.closure or self.installed.get(pkg, NOT_INSTALLED)[0]

    def test_every_program_the_tests_run_is_installed_by_scripts_deps(self):
        named, run = programs_named()
        own = own_targets()
        problems = []
        paths = {prog: shutil.which(prog) for prog in sorted(named) if prog not in own}
        packages = packages_of(p for p in paths.values() if p and p.startswith(SYSTEM_DIRS))
        for prog, path in paths.items():
            if path is None:
                if prog in run:
                    problems.append(f"{prog} (run by {', '.join(sorted(run[prog]))}) is not "
                                    "installed: add the package that ships it to scripts/deps")
                continue
            if not path.startswith(SYSTEM_DIRS):
                continue  # not a system program: nothing to install
            pkg = packages[path]
            if pkg is None:
                if prog in run:
                    problems.append(f"{prog} ({path}, run by {', '.join(sorted(run[prog]))}) "
                                    "comes from no Debian package")
                continue
            if not self.ok_package(pkg):
                problems.append(f"{prog} ({path}, package {pkg}) is used by "
                                f"{', '.join(sorted(named[prog]))} but scripts/deps --test "
                                "does not install it")
        self.assertEqual(problems, [], "\n".join(problems))

    def test_every_python_module_the_tests_import_is_installed_by_scripts_deps(self):
        problems, imports = [], []  # imports: (file, module, where it loads from)
        for path in source_files():
            if not path.endswith(".py"):
                continue
            with open(path, encoding="utf-8") as f:
                try:
                    tree = ast.parse(f.read())
                except SyntaxError as e:
                    problems.append(f"{path}: {e}")
                    continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    spec = importlib.util.find_spec(top) if top not in sys.modules else None
                    origin = getattr(spec, "origin", None) or ""
                    if "dist-packages" not in origin:
                        continue  # standard library, ours, or not installed (guarded imports)
                    imports.append((os.path.relpath(path, ROOT), top, origin))
        packages = packages_of({origin for _, _, origin in imports})
        for rel, top, origin in imports:
            pkg = packages[origin]
            if pkg and not self.ok_package(pkg):
                problems.append(f"{rel} imports {top} from {pkg}, which scripts/deps --test "
                                "does not install")
        self.assertEqual(sorted(set(problems)), [], "\n".join(sorted(set(problems))))


if __name__ == "__main__":
    unittest.main()
