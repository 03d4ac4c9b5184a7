"""The public API is documented and typed: every name of tformer.__all__ and every public method and property
of its classes has a docstring, and python/tformer/__init__.pyi (the installed stub) declares each, with the
same parameters."""
import ast
import inspect
import os

import tformer


def stub():
    """{name: ast node} of the stub's top level, and {class: {member: ast node}}."""
    path = os.path.join(os.path.dirname(tformer.__file__), "__init__.pyi")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    top, members = {}, {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top[node.name] = node
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top[node.target.id] = node
        if isinstance(node, ast.ClassDef):
            members[node.name] = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
    return top, members


def public_members(cls):
    for name, value in vars(cls).items():
        if not name.startswith("_") and (inspect.isfunction(value) or isinstance(value, (property, classmethod))):
            yield name, value


def params(fn):
    return [p for p in inspect.signature(fn).parameters if p not in ("self", "cls")]


def test_every_public_name_is_documented_and_in_the_stub():
    top, members = stub()
    missing = []
    for name in tformer.__all__:
        obj = getattr(tformer, name)
        if (callable(obj) or inspect.isclass(obj)) and not (inspect.getdoc(obj) or "").strip():
            missing.append(f"{name}: no docstring")
        if name not in top:
            missing.append(f"{name}: not in the stub")
        if not inspect.isclass(obj) or issubclass(obj, Exception):
            continue
        for m, value in public_members(obj):
            fn = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
            if not (inspect.getdoc(fn) or "").strip():
                missing.append(f"{name}.{m}: no docstring")
            if m not in members.get(name, {}):
                missing.append(f"{name}.{m}: not in the stub")
                continue
            node = members[name][m]
            want = [a.arg for a in node.args.args + node.args.kwonlyargs if a.arg not in ("self", "cls")]
            want += [a.arg for a in (node.args.vararg, node.args.kwarg) if a]
            if not isinstance(value, property) and params(fn) != want:
                missing.append(f"{name}.{m}: parameters {params(fn)}, the stub's {want}")
    assert not missing, "\n".join(missing)
