"""The tree's architecture, checked statically: nothing here imports the code under test.

Five properties of the import graph of ``kwire/``, ``fuzz/`` and ``benches/``,
which keep the flow between the packages one-directional and readable (and, for
the packages in ONE_JOB_PACKAGES, short modules each named in
docs/ARCHITECTURE.md):

a. no import cycles, function-level imports included;
b. public modules (no leading underscore in their own name) only re-export;
c. a private module ``a.b._c`` is imported only from inside package ``a.b``;
d. no reaching into another module's private names (``from m import _x``,
   ``obj._x`` where ``obj`` is not ``self``/``cls``);
e. a compiled twin ``X/_name_c.pyx`` never imports its pure twin ``X/_name_py``.

An import is an ``import``/``from`` statement anywhere in a module, or a call
of kwire's one switch between twins, ``_impl.load("name", ..., package=...)``
(or a wrapper whose name says ``load``) with the name as a literal: that
imports ``package._name_c`` or ``package._name_py`` at run time, so it is an
edge to both.

Python files are read with :mod:`ast`.  Cython files (``.pyx``, the
``.pxi`` files they ``include`` and the ``.pxd`` files they ``cimport``) are
not Python, but they tokenize as Python:
their ``import``/``from``/``cimport`` lines and their ``a._b`` accesses are
read from the token stream, strings and comments excluded.

The checks take the tree's root as a parameter; ``KWIRE_ARCH_ROOT`` points
the test at another checkout (``KWIRE_ARCH_ROOT=/path/to/old/tree pytest
tests/test_architecture.py`` shows what an older tree breaks).  The last
tests build small trees that break each rule and check the rule notices.
"""

from __future__ import annotations

import ast
import io
import os
import re
import textwrap
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("KWIRE_ARCH_ROOT") or Path(__file__).resolve().parent.parent)
AREAS = ("kwire", "fuzz", "benches")
# Directories of scripts run with their own folder on sys.path (``import differential``
# in fuzz/ means fuzz/differential.py).
SCRIPT_AREAS = ("fuzz", "benches")

# b. Public modules that are more than re-exports, and why.
PUBLIC_MODULES_WITH_CODE = {
    "kwire.errors": "the error tree itself: its classes are what a user catches",
    "kwire.__main__": "the command line (python -m kwire)",
    "kwire.pipeline.__main__": "the pipeline as a script for spark-submit (python -m kwire.pipeline)",
    "kwire.contrib.kafka_python": "the adapter classes a user imports by name; importing the module imports "
                                  "kafka-python, so they cannot be re-exported from kwire.contrib",
    "kwire.contrib.aiokafka": "the adapter classes a user imports by name; importing the module imports aiokafka, "
                              "so they cannot be re-exported from kwire.contrib",
}
# b. Functions a re-exporting module may define, and why.
REEXPORT_FUNCTIONS = {
    ("kwire", "__getattr__"): "lazy re-export of the assignors (NumPy loads on first use, not with the codec)",
    ("kwire", "__dir__"): "lists the lazily re-exported names with the others",
}
# c. Private modules that other packages may cimport, and why.
SHARED_CIMPORTS = {
    "kwire.codec._bytes": "the byte primitives and the growable buffer every compiled part shares; a .pxd of inline "
                          "functions and a struct, cimported at compile time, with no module behind it at run time",
}
# d. Private-looking names that are public API of the object they are read from.
PUBLIC_UNDERSCORE_NAMES = {
    "_replace": "namedtuple's public API (the underscore only avoids clashing with field names)",
    "_asdict": "namedtuple's public API",
    "_fields": "namedtuple's public API",
    "_make": "namedtuple's public API",
    "_PyBytes_Resize": "CPython's documented C API for growing a bytes object that is still being built",
}

#: Private names of another library that a kwire module reads, each with why no public one does.
THIRD_PARTY_PRIVATE_REACHES = {
    ("kwire.pipeline._spark_stages", "df._jdf"):
        "PySpark has no public call that frees a local checkpoint's blocks; DataFrame._jdf is its own handle on "
        "the JVM Dataset (classic Spark, which the pipeline runs on), whose plan's RDD does",
}


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    # (line, target module name or external dotted name, imported names or None for ``import x``)
    imports: list = field(default_factory=list)
    # (line, text) of every ``obj._x`` / ``from m import _x`` that reaches into a private name
    private_reaches: list = field(default_factory=list)
    # (line, twin name, package or None) of each literal call of the twin switch
    twin_loads: list = field(default_factory=list)
    tree: ast.Module | None = None

    @property
    def package(self):
        return self.name if self.is_package else self.name.rpartition(".")[0]

    @property
    def area(self):
        return self.name.split(".")[0]


def _module_name(root, path):
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_private(part):
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _is_dunder(name):
    return name.startswith("__") and name.endswith("__")


def load_tree(root=ROOT):
    """Every module of the areas under ``root``, with its imports and private reaches."""
    root = Path(root)
    modules = {}
    for area in AREAS:
        base = root / area
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if "__pycache__" in path.parts or "build" in path.relative_to(root).parts:
                continue
            if path.suffix not in (".py", ".pyx", ".pxd"):
                continue
            name = _module_name(root, path)
            modules[name] = Module(name, path, path.name == "__init__.py")
    for mod in modules.values():
        if mod.path.suffix == ".py":
            _read_python(mod)
        else:
            _read_cython(mod)
    return modules


# -- reading Python ------------------------------------------------------------------------------------------------

def _read_python(mod):
    tree = ast.parse(mod.path.read_text(encoding="utf-8"), str(mod.path))
    mod.tree = tree
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                mod.imports.append((node.lineno, alias.name, None, 0))
        elif isinstance(node, ast.ImportFrom):
            names = [a.name for a in node.names]
            mod.imports.append((node.lineno, node.module or "", names, node.level))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2 \
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str) \
                and _is_private(node.args[1].value) and not _is_own(node.args[0]):
            # The same reach, spelled so that no attribute access shows it.
            mod.private_reaches.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Call) and _is_twin_load(node):
            package = next((k.value.value for k in node.keywords if k.arg == "package"
                            and isinstance(k.value, ast.Constant)), None)
            if package is None and len(node.args) >= 3 and isinstance(node.args[2], ast.Constant):
                package = node.args[2].value
            mod.twin_loads.append((node.lineno, node.args[0].value, package))
        elif isinstance(node, ast.Attribute) and _is_private(node.attr) and node.attr not in PUBLIC_UNDERSCORE_NAMES:
            if not _is_own(node.value):
                mod.private_reaches.append((node.lineno, ast.unparse(node)))


def _is_twin_load(call):
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return ("load" in name and call.args and isinstance(call.args[0], ast.Constant)
            and isinstance(call.args[0].value, str))


def _is_own(node):
    """``self``, ``cls``, ``super()`` and ``type(self)``: an object's own private names."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "super":
            return True
        if node.func.id == "type" and len(node.args) == 1:
            return _is_own(node.args[0])
    return False


# -- reading Cython ------------------------------------------------------------------------------------------------

_INCLUDE = re.compile(r"""^\s*include\s+["']([^"']+)["']""")


def _logical_lines(path):
    """``(line, tokens)`` of each logical line of a Cython file, comments dropped."""
    text = path.read_text(encoding="utf-8")
    out, current, start = [], [], None
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            if current:
                out.append((start, current))
            current, start = [], None
        elif tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT):
            continue
        else:
            if start is None:
                start = tok.start[0]
            current.append(tok)
    return out


def _read_cython(mod, path=None, seen=None):
    path = path or mod.path
    seen = seen if seen is not None else set()
    if path in seen:
        return
    seen.add(path)
    for line, toks in _logical_lines(path):
        words = [t.string for t in toks]
        if words[0] == "include" and len(toks) > 1 and toks[1].type == tokenize.STRING:
            # An included file's code is this module's code.
            _read_cython(mod, path.parent / ast.literal_eval(toks[1].string), seen)
            continue
        if words[0] in ("import", "from", "cimport"):
            source = " ".join("import" if w == "cimport" else w for w in words)
            try:
                stmt = ast.parse(source).body[0]
            except SyntaxError:
                stmt = None
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    mod.imports.append((line, alias.name, None, 0))
            elif isinstance(stmt, ast.ImportFrom):
                mod.imports.append((line, stmt.module or "", [a.name for a in stmt.names], stmt.level))
            if isinstance(stmt, ast.ImportFrom):
                continue
        for i, tok in enumerate(toks):
            if tok.type != tokenize.NAME or not _is_private(tok.string) or i < 2 or toks[i - 1].string != ".":
                continue
            if tok.string in PUBLIC_UNDERSCORE_NAMES:
                continue
            before = toks[i - 2]
            own = before.string in ("self", "cls") and (i < 3 or toks[i - 3].string != ".")
            if not own:
                mod.private_reaches.append((tok.start[0], f"{before.string}.{tok.string}"))


# -- resolving imports ---------------------------------------------------------------------------------------------

def resolve(modules, importer, target, names, level):
    """The modules of the tree an import statement imports, as ``(module, name)`` pairs.

    ``name`` is the imported name when it is not a module of its own (``from m
    import x`` where ``m.x`` is no module), else None.  Imports of modules
    outside the tree resolve to nothing."""
    if level:
        base = importer.package.split(".")
        base = base[:len(base) - (level - 1)]
        target = ".".join(base + ([target] if target else []))
    elif importer.area in SCRIPT_AREAS:
        folder = importer.name.rpartition(".")[0] or importer.name
        first = target.split(".")[0]
        if first not in modules and f"{folder}.{first}" in modules:
            target = f"{folder}.{target}"
    out = []
    if names is None:
        # ``import a.b.c``: a and a.b are parents, imported implicitly; the edge is to a.b.c.
        parts = target.split(".")
        while parts and ".".join(parts) not in modules:
            parts.pop()
        if parts:
            out.append((".".join(parts), None))
        return out
    for name in names:
        sub = f"{target}.{name}"
        if sub in modules:
            out.append((sub, None))
        elif target in modules:
            out.append((target, name))
    return out


def edges(modules):
    """``{importer: {imported: first line}}`` over the tree's modules."""
    graph = {}
    for mod in modules.values():
        out = graph.setdefault(mod.name, {})
        for line, target, names, level in mod.imports:
            for dest, _name in resolve(modules, mod, target, names, level):
                if dest != mod.name:
                    out.setdefault(dest, line)
        for line, name, package in mod.twin_loads:
            for suffix in ("_c", "_py"):
                dest = f"{package or mod.package}._{name}{suffix}"
                if dest in modules and dest != mod.name:
                    out.setdefault(dest, line)
    return graph


# -- the five checks -----------------------------------------------------------------------------------------------

def import_cycles(modules):
    """a. Each strongly connected component of more than one module, as a sorted list of names."""
    graph = edges(modules)
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        # Iterative Tarjan: the graph is small, but recursion depth should not depend on it.
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def cycle_text(modules, comp):
    """The imports that tie a component together, each with its line, for the failure message."""
    graph = edges(modules)
    members = set(comp)
    hops = [f"{a}:{graph[a][b]} -> {b}" for a in comp for b in sorted(graph[a]) if b in members]
    return "{" + ", ".join(comp) + "}: " + "; ".join(hops)


def _bound_by_import(stmt):
    if isinstance(stmt, ast.Import):
        return [(a.asname or a.name.split(".")[0]) for a in stmt.names]
    return [(a.asname or a.name) for a in stmt.names]


def _chain_root(node):
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_name_list(node):
    return isinstance(node, (ast.Tuple, ast.List)) and all(
        (isinstance(e, ast.Constant) and isinstance(e.value, str))
        or (isinstance(e, ast.Starred) and isinstance(e.value, ast.Name)) for e in node.elts)


def reexport_violations(modules):
    """b. ``(module, line, what)`` for each statement of a public kwire module that is not a re-export."""
    out = []
    for mod in modules.values():
        own = mod.name.rpartition(".")[2] if not mod.is_package else "__init__"
        if mod.area != "kwire" or mod.tree is None or (own != "__main__" and _is_private(own)):
            continue
        if mod.name in PUBLIC_MODULES_WITH_CODE:
            continue
        imported = set()
        for i, stmt in enumerate(mod.tree.body):
            if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, str):
                continue  # the docstring
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                imported.update(_bound_by_import(stmt))
                continue
            if isinstance(stmt, ast.FunctionDef) and (mod.name, stmt.name) in REEXPORT_FUNCTIONS:
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                target, value = stmt.targets[0].id, stmt.value
                if target == "__all__" or (_is_name_list(value) and _is_private(target)):
                    continue  # the export list, or a list of names it is built from
                if _is_dunder(target) and isinstance(value, ast.Constant):
                    continue  # __version__ and the like
                if isinstance(value, (ast.Name, ast.Attribute)) and _chain_root(value) in imported:
                    imported.add(target)  # a name bound to an imported name (or an attribute of one)
                    continue
            out.append((mod.name, stmt.lineno, ast.unparse(stmt).splitlines()[0][:100]))
    return sorted(out)


def private_import_violations(modules):
    """c. ``(importer, line, module)`` for each import of a private module from outside its package."""
    out = []
    for mod in modules.values():
        if mod.area != "kwire":
            continue  # tests, fuzz and benches may reach inside
        for line, target, names, level in mod.imports:
            for dest, _name in resolve(modules, mod, target, names, level):
                if dest in SHARED_CIMPORTS and mod.path.suffix == ".pyx":
                    continue
                parts = dest.split(".")
                for k, part in enumerate(parts):
                    owner = ".".join(parts[:k])
                    if _is_private(part) and not (mod.name == owner or mod.name.startswith(owner + ".")):
                        out.append((mod.name, line, dest))
                        break
    return sorted(set(out))


def private_name_violations(modules):
    """d. ``(module, line, what)`` for each reach into another module's (or object's) private name in
    kwire/, fuzz/ or benches/ (the scripts share code too: what a sibling needs is public in its module)."""
    out = []
    for mod in modules.values():
        for line, target, names, level in mod.imports:
            if names is None:
                continue
            for name in names:
                if not _is_private(name) or name in PUBLIC_UNDERSCORE_NAMES:
                    continue
                if any(n is None for _d, n in resolve(modules, mod, target, [name], level)):
                    continue  # a private module, not a private name: rule c's business
                out.append((mod.name, line, f"from {'.' * level}{target} import {name}"))
        for line, text in mod.private_reaches:
            if (mod.name, text) not in THIRD_PARTY_PRIVATE_REACHES:
                out.append((mod.name, line, text))
    return sorted(set(out))


def twin_violations(modules):
    """e. ``(compiled module, line, pure twin)`` for each import of a pure twin by its compiled twin."""
    out = []
    for mod in modules.values():
        if mod.path.suffix != ".pyx" or not mod.name.endswith("_c"):
            continue
        twin = mod.name[:-2] + "_py"
        if twin not in modules:
            continue
        for line, target, names, level in mod.imports:
            for dest, _name in resolve(modules, mod, target, names, level):
                if dest == twin:
                    out.append((mod.name, line, twin))
    return sorted(set(out))


# -- the tests -----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tree():
    modules = load_tree(ROOT)
    assert "kwire" in modules, f"no kwire package under {ROOT}"
    return modules


def _report(rows):
    return "\n".join(f"  {a}:{b}: {c}" for a, b, c in rows)


def test_no_import_cycles(tree):
    cycles = import_cycles(tree)
    assert not cycles, "import cycles:\n" + "\n".join("  " + cycle_text(tree, c) for c in cycles)


@pytest.mark.parametrize("check, what", [
    (reexport_violations, "public modules doing more than re-exporting"),
    (private_import_violations, "private modules imported from outside their package"),
    (private_name_violations, "reaches into another module's or object's private names"),
    (twin_violations, "compiled modules importing their pure twins"),
], ids=["public-modules-only-reexport", "private-modules-imported-from-their-package", "no-private-names",
        "compiled-twins-do-not-import-pure-twins"])
def test_rule(tree, check, what):
    rows = check(tree)
    assert not rows, f"{what}:\n" + _report(rows)


def test_the_tree_has_twins_and_cython_imports(tree):
    # The Cython reader must see something: every compiled module imports at
    # least one module, and each checked twin pair exists.
    compiled = [m for m in tree.values() if m.path.suffix == ".pyx"]
    assert compiled, "no .pyx files found"
    for mod in compiled:
        assert mod.imports, f"no imports read from {mod.path}"


# Packages whose every module is one job: each hand-written module is at most MAX_LINES lines and is named in
# docs/ARCHITECTURE.md (the map a newcomer reads first).  A package joins the list once it is split so.
ONE_JOB_PACKAGES = ("kwire/group", "kwire/testing")
MAX_LINES = 800


def one_job_violations(root=ROOT):
    """``(module, lines, what)`` for each module of ONE_JOB_PACKAGES that is too long or not on the map."""
    root = Path(root)
    doc = (root / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    out = []
    for package in ONE_JOB_PACKAGES:
        for path in sorted((root / package).glob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            rel = path.relative_to(root).as_posix()
            if lines > MAX_LINES:
                out.append((rel, lines, f"over {MAX_LINES} lines"))
            if path.name != "__init__.py" and rel not in doc:
                out.append((rel, lines, "not named in docs/ARCHITECTURE.md"))
    return out


def test_one_job_packages_have_short_modules_on_the_map():
    rows = one_job_violations()
    assert not rows, "modules too long or missing from docs/ARCHITECTURE.md:\n" + _report(rows)


def test_a_long_or_unmapped_module_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ARCHITECTURE.md").write_text("`kwire/group/_named.py` does one thing", encoding="utf-8")
    (tmp_path / "kwire" / "group").mkdir(parents=True)
    (tmp_path / "kwire" / "group" / "_named.py").write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    (tmp_path / "kwire" / "group" / "_unnamed.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "kwire" / "testing").mkdir()
    assert [(m, what) for m, _, what in one_job_violations(tmp_path)] == [
        ("kwire/group/_named.py", f"over {MAX_LINES} lines"),
        ("kwire/group/_unnamed.py", "not named in docs/ARCHITECTURE.md")]


# -- the map in docs/ARCHITECTURE.md ------------------------------------------------------------------------------

#: Packages whose every module the map in docs/ARCHITECTURE.md names, in its diagram or in its "where a change
#: goes" table, so that a file added or renamed there shows in the map too.
MAPPED_PACKAGES = ("kwire/pipeline",)


@pytest.mark.parametrize("package", MAPPED_PACKAGES)
def test_the_architecture_map_names_each_module(package):
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    modules = [p for p in sorted((ROOT / package).iterdir())
               if p.suffix in (".py", ".pyx") and _is_private(p.stem) and not _is_dunder(p.stem)]
    assert modules, f"no modules in {package}"
    unnamed = [p.name for p in modules if not re.search(r"(?<![\w.])%s(?!\w)" % re.escape(p.name), doc)]
    assert not unnamed, f"modules of {package} that docs/ARCHITECTURE.md does not name: {unnamed}"
    named = sorted(set(re.findall(r"`(%s/[\w/]+\.pyx?)`" % re.escape(package), doc)))
    gone = [path for path in named if not (ROOT / path).exists()]
    assert not gone, f"docs/ARCHITECTURE.md names files that are not in the tree: {gone}"


# -- the checks catch what they claim to catch ---------------------------------------------------------------------

def _write(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_tree(root)


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    mods = _write(tmp_path, {
        "kwire/__init__.py": "from kwire.a import f\n",
        "kwire/a.py": "def f():\n    from kwire import b\n    return b\n",
        "kwire/b.py": "import kwire.a\n",
        "kwire/c.py": "from kwire import a\n",  # into the cycle, not part of it
    })
    assert import_cycles(mods) == [["kwire.a", "kwire.b"]]
    assert cycle_text(mods, ["kwire.a", "kwire.b"]) == "{kwire.a, kwire.b}: kwire.a:2 -> kwire.b; kwire.b:1 -> kwire.a"


def test_parents_are_not_edges_but_a_package_face_is(tmp_path):
    mods = _write(tmp_path, {
        "kwire/__init__.py": "from kwire.codec._framing import f\n",
        "kwire/codec/__init__.py": "",
        "kwire/codec/_framing.py": "from kwire.codec import _schema\nf = 1\n",
        "kwire/codec/_schema.py": "",
    })
    assert import_cycles(mods) == []
    (tmp_path / "kwire/codec/_framing.py").write_text("import kwire\nf = kwire.x\n")
    assert import_cycles(load_tree(tmp_path)) == [["kwire", "kwire.codec._framing"]]


def test_script_imports_and_cython_imports_are_edges(tmp_path):
    mods = _write(tmp_path, {
        "kwire/__init__.py": "",
        "kwire/k/__init__.py": "",
        "kwire/k/_x_c.pyx": '''\
            # cython: language_level=3
            """import kwire.k._x_py would be a docstring, not an import."""
            cimport numpy as cnp
            include "_rt.pxi"
            cdef int f(int a) noexcept nogil:
                return a
            ''',
        "kwire/k/_rt.pxi": "from kwire.k._x_py import (A,\n    B)\n",
        "kwire/k/_x_py.py": "A = B = 1\n",
        "fuzz/one.py": "import two\n",
        "fuzz/two.py": "def g():\n    from one import h\n",
    })
    assert import_cycles(mods) == [["fuzz.one", "fuzz.two"]]
    assert edges(mods)["kwire.k._x_c"] == {"kwire.k._x_py": 1}
    assert twin_violations(mods) == [("kwire.k._x_c", 1, "kwire.k._x_py")]


def test_public_module_code_is_found(tmp_path):
    mods = _write(tmp_path, {
        "kwire/__init__.py": '''\
            """Doc."""
            from kwire.p import _impl as _i, g
            _names = ("h", "g")
            __all__ = [*_names, "h"]
            __version__ = "1"
            h = _i.h
            def helper():
                return 1
            ''',
        "kwire/p/__init__.py": "from kwire.p._impl import g\n",
        "kwire/p/_impl.py": "def g():\n    pass\nh = g\n",
    })
    assert reexport_violations(mods) == [("kwire", 7, "def helper():")]


def test_private_imports_from_outside_are_found(tmp_path):
    mods = _write(tmp_path, {
        "kwire/__init__.py": "",
        "kwire/a/__init__.py": "from kwire.a._x import f\n",
        "kwire/a/_x.py": "from kwire.b import _y\nf = 1\n",
        "kwire/b/__init__.py": "",
        "kwire/b/_y.py": "from kwire.a._x import f\nimport kwire.b._z\n",
        "kwire/b/_z.py": "",
        "tests/t.py": "from kwire.a._x import f\n",
        "benches/x.py": "from kwire.b._z import f\n",
    })
    assert private_import_violations(mods) == [("kwire.a._x", 1, "kwire.b._y"), ("kwire.b._y", 1, "kwire.a._x")]


def test_reaching_into_private_names_is_found(tmp_path):
    mods = _write(tmp_path, {
        "kwire/__init__.py": "",
        "kwire/_m.py": '''\
            from kwire import _n
            from kwire._n import _helper, public
            class C:
                def f(self, other, row):
                    self._own = other._theirs
                    super().__init__()
                    type(self)._cache = {}
                    row = row._replace(a=1)
                    getattr(other, "_table", {}).get(1) or getattr(self, "_cache")
                    return _n._secret + self._own.__len__()
            ''',
        "kwire/_n.py": "_secret = 1\npublic = 2\ndef _helper():\n    pass\n",
        "kwire/_k_c.pyx": "import kwire\nx = kwire._m._secret + self._own\n",
    })
    assert private_name_violations(mods) == sorted([
        ("kwire._k_c", 2, "kwire._m"), ("kwire._k_c", 2, "_m._secret"),
        ("kwire._m", 2, "from kwire._n import _helper"),
        ("kwire._m", 5, "other._theirs"), ("kwire._m", 9, "getattr(other, '_table', {})"),
        ("kwire._m", 10, "_n._secret"),
    ])


def test_the_twin_switch_is_an_import(tmp_path):
    mods = _write(tmp_path, {
        "kwire/__init__.py": "",
        "kwire/_impl.py": "def load(name, implementation, package):\n    pass\n",
        "kwire/a/__init__.py": "",
        "kwire/a/_arrays.py": """\
            from kwire import _impl
            def load_kernels(name, implementation=None):
                return _impl.load(name, implementation, package="kwire.a")
            def hashes(names):
                return load_kernels("k").hashes(names)
            """,
        "kwire/a/_k_py.py": "def hashes(names):\n    from kwire.a._arrays import load_kernels\n",
        "kwire/a/_k_c.pyx": "def hashes(names):\n    return names\n",
    })
    assert edges(mods)["kwire.a._arrays"] == {"kwire._impl": 1, "kwire.a._k_c": 5, "kwire.a._k_py": 5}
    assert import_cycles(mods) == [["kwire.a._arrays", "kwire.a._k_py"]]


