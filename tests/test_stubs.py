"""The shipped .pyi stubs must describe the modules they stand for.

A stub that drifts from its module is worse than none: editors and mypy would trust it. These checks read the
stubs with ``ast`` (no type checker needed) and compare them with the imported modules: the same public names,
the same parameters, the same message fields; and the generated codec stub must equal a fresh rendering of the
schema.
"""

import ast
import glob
import importlib
import inspect
import os
import types

import pytest

import kwire
from kwire import _impl
from kwire.codec import _schema, _stubgen
from tests._twins import IMPLS, codec_module

PKG = os.path.dirname(os.path.abspath(kwire.__file__))


def _module_name(path):
    rel = os.path.relpath(os.path.splitext(path)[0], os.path.dirname(PKG))
    name = rel.replace(os.sep, ".")
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


STUBS = sorted(glob.glob(os.path.join(PKG, "**", "*.pyi"), recursive=True))
STUB_MODULES = {_module_name(p): p for p in STUBS}


def _runtime(modname):
    if _impl.NO_EXTENSIONS and modname.endswith("_c"):
        pytest.skip("KWIRE_NO_EXTENSIONS=1: compiled modules are not built")
    try:
        return importlib.import_module(modname)
    except ImportError as exc:
        # A compiled module must load (conftest's rule); only a missing third-party dependency skips.
        if exc.name and not exc.name.startswith("kwire"):
            pytest.skip(f"{modname} needs {exc.name}")
        raise


def _stub_tree(modname):
    with open(STUB_MODULES[modname], encoding="utf-8") as fh:
        return ast.parse(fh.read())


def _stub_public_names(tree):
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            # In a stub only `import x as x` re-exports.
            names.update(a.asname for a in node.names if a.asname and a.asname == a.name.split(".")[-1])
    return {n for n in names if not n.startswith("_")}


def _runtime_public_names(mod):
    """What a user of ``mod`` is meant to see: ``__all__`` if it has one; otherwise every public object it
    defines (names a plain module merely imported from elsewhere are not its API, but a package ``__init__``
    exists to re-export)."""
    if hasattr(mod, "__all__"):
        return set(mod.__all__)
    is_package = hasattr(mod, "__path__")
    out = set()
    for name in dir(mod):
        if name.startswith("_"):
            continue
        value = getattr(mod, name)
        if isinstance(value, types.ModuleType):
            continue
        home = getattr(value, "__module__", None) if callable(value) else None
        if not is_package and home is not None and home != mod.__name__:
            continue
        out.add(name)
    return out


def test_every_compiled_module_has_a_stub():
    pyx = glob.glob(os.path.join(PKG, "**", "_*_c.pyx"), recursive=True)
    compiled = {_module_name(p) for p in pyx} | {"kwire.codec._codec_c"}  # the codec's .pyx exists only once built
    missing = sorted(m for m in compiled if m not in STUB_MODULES)
    assert not missing, f"compiled modules without a .pyi stub: {missing}"


def test_codec_stub_is_fresh():
    with open(os.path.join(PKG, "codec", "_codec_c.pyi"), encoding="utf-8") as fh:
        committed = fh.read()
    assert committed == _stubgen.render(_schema), "kwire/codec/_codec_c.pyi is stale: run `python kwire/codec/_stubgen.py`"


@pytest.mark.parametrize("modname", sorted(STUB_MODULES))
def test_stub_lists_the_runtime_public_names(modname):
    mod = _runtime(modname)
    stub = _stub_public_names(_stub_tree(modname))
    runtime = _runtime_public_names(mod)
    assert stub == runtime, f"only in the stub: {sorted(stub - runtime)}; only at run time: {sorted(runtime - stub)}"


def _params(args, drop_first):
    names = [(a.arg, "positional") for a in args.posonlyargs + args.args]
    if drop_first:
        names = names[1:]
    if args.vararg:
        names.append((args.vararg.arg, "*"))
    names += [(a.arg, "keyword") for a in args.kwonlyargs]
    if args.kwarg:
        names.append((args.kwarg.arg, "**"))
    return names


def _runtime_params(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    kinds = {
        inspect.Parameter.POSITIONAL_ONLY: "positional", inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
        inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.KEYWORD_ONLY: "keyword",
        inspect.Parameter.VAR_KEYWORD: "**",
    }
    out = [(p.name, kinds[p.kind]) for p in sig.parameters.values()]
    # cdef classes report __init__ as (self, *args, **kwargs): nothing to compare.
    return None if [k for _, k in out][-2:] == ["*", "**"] else out


def _callables(tree):
    """(qualified name, ast function, is a method) for every def in the stub, one level of classes deep."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node.name, node, False
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef) and not (sub.name.startswith("__") and sub.name != "__init__"):
                    yield f"{node.name}.{sub.name}", sub, True


# Stubs that define functions or methods (kwire/__init__.pyi only re-exports).
WITH_CALLABLES = sorted(m for m in STUB_MODULES if any(True for _ in _callables(_stub_tree(m))))


@pytest.mark.parametrize("modname", WITH_CALLABLES)
def test_stub_parameters_match_the_runtime(modname):
    mod = _runtime(modname)
    compared, total = 0, 0
    for qualname, fn, is_method in _callables(_stub_tree(modname)):
        if any(isinstance(d, ast.Name) and d.id == "overload" for d in fn.decorator_list):
            continue
        if any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list):
            continue
        total += 1
        obj = mod
        for part in qualname.split("."):
            obj = getattr(obj, part)
        # Through the class, classmethods come bound (no cls) and plain methods unbound (with self).
        is_classmethod = any(isinstance(d, ast.Name) and d.id == "classmethod" for d in fn.decorator_list)
        runtime = _runtime_params(obj)
        if runtime is None:
            continue
        stub = _params(fn.args, drop_first=is_method and is_classmethod)
        assert stub == runtime, f"{modname}.{qualname}: stub {stub} != runtime {runtime}"
        compared += 1
    # Some must be comparable, or the test would pass on any stub.
    assert compared, f"none of the {total} signatures of {modname} could be compared"


def _stub_fields(cls_node):
    out = []
    for node in cls_node.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            ann = ast.unparse(node.annotation)
            if not ann.startswith(("ClassVar", "TypeAlias")):
                out.append(node.target.id)
    return out


def _codec_classes():
    return [n for n in _stub_tree("kwire.codec._codec_c").body if isinstance(n, ast.ClassDef)]


@pytest.mark.parametrize("impl", IMPLS)
def test_codec_stub_fields_are_the_runtime_fields(impl):
    mod = codec_module(impl)
    for node in _codec_classes():
        cls = getattr(mod, node.name)
        if impl == "python":
            runtime = list(cls.__slots__)
        else:
            # `cdef public object x` becomes a getset descriptor, in declaration order.
            runtime = [n for n, v in vars(cls).items() if type(v).__name__ == "getset_descriptor"]
        assert _stub_fields(node) == runtime, node.name
        obj = cls()
        assert all(hasattr(obj, f) for f in _stub_fields(node))


def test_codec_stub_class_attributes_match_the_runtime():
    for node in _codec_classes():
        cls = getattr(kwire.codec, node.name)
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and ast.unparse(item.annotation).startswith("TypeAlias"):
                # Nested struct aliases: the same class object at run time.
                target = ast.unparse(item.value).lstrip("_")
                assert getattr(cls, item.target.id) is getattr(kwire.codec, target), f"{node.name}.{item.target.id}"
            elif isinstance(item, ast.AnnAssign) and ast.unparse(item.annotation).startswith("ClassVar[Literal"):
                literal = ast.literal_eval(item.annotation.slice.slice)
                assert getattr(cls, item.target.id) == literal, f"{node.name}.{item.target.id}"


def test_framing_overloads_name_the_class_message_class_returns():
    from kwire.codec._framing import message_class

    seen = 0
    for node in _stub_tree("kwire.codec._framing").body:
        if isinstance(node, ast.FunctionDef) and node.name == "decode_response":
            ann = ast.unparse(node.args.args[1].annotation)
            if ann.startswith("Literal["):
                key = ast.literal_eval(ann[len("Literal["):-1])
                returned = ast.unparse(node.returns)  # tuple[ResponseHeader, X]
                assert returned == f"tuple[ResponseHeader, {message_class(key, 'response').__name__}]"
                seen += 1
    assert seen == len([m for m in _schema.API_MESSAGES if m.kind == "response"])
