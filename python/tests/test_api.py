"""The public API is documented and typed: every name of tformer.__all__ and every public method and property
of its classes has a docstring, and python/tformer/__init__.pyi (the installed stub) declares each, with the
same parameters in the same order (the module's functions and the constructors too)."""
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
        if (not name.startswith("_") or name == "__init__") and \
                (inspect.isfunction(value) or isinstance(value, (property, classmethod))):
            yield name, value


def stub_params(node):
    """A stub function's parameter names, as inspect.signature lists them (self and cls left out)."""
    args = node.args
    want = [a.arg for a in args.posonlyargs + args.args if a.arg not in ("self", "cls")]
    want += [args.vararg.arg] if args.vararg else []
    want += [a.arg for a in args.kwonlyargs] + ([args.kwarg.arg] if args.kwarg else [])
    return want


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
        elif inspect.isfunction(obj) and params(obj) != stub_params(top[name]):
            missing.append(f"{name}: parameters {params(obj)}, the stub's {stub_params(top[name])}")
        if not inspect.isclass(obj) or issubclass(obj, Exception):
            continue
        for m, value in public_members(obj):
            fn = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
            if m != "__init__" and not (inspect.getdoc(fn) or "").strip():
                missing.append(f"{name}.{m}: no docstring")
            if m not in members.get(name, {}):
                missing.append(f"{name}.{m}: not in the stub")
                continue
            want = stub_params(members[name][m])
            if not isinstance(value, property) and params(fn) != want:
                missing.append(f"{name}.{m}: parameters {params(fn)}, the stub's {want}")
    assert not missing, "\n".join(missing)


# Issue 56's signatures, literally: the defaults a user of the API reads there (embed normalises, translate searches
# a beam of 5; sentence-transformers' encode keeps its own default of no normalisation).
ISSUE_DEFAULTS = {
    ("load", None): {"threads": None},
    ("Model", "embed"): {"batch_size": 32, "normalize": True, "pooling": None},
    ("Model", "translate"): {"beam": 5},
    ("Model", "fill_mask"): {"top_k": 5},
    ("SentenceTransformer", "encode"): {"batch_size": 32, "normalize_embeddings": False, "convert_to_numpy": True},
}


def stub_defaults(node):
    """A stub function's {parameter: default value} (the literals of the stub)."""
    args = node.args
    pos = args.posonlyargs + args.args
    out = {a.arg: ast.literal_eval(d) for a, d in zip(pos[len(pos) - len(args.defaults):], args.defaults)}
    out.update({a.arg: ast.literal_eval(d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    return out


def test_the_issues_defaults_in_the_package_and_the_stub():
    top, members = stub()
    for (owner, name), want in ISSUE_DEFAULTS.items():
        fn = getattr(tformer, owner) if name is None else getattr(getattr(tformer, owner), name)
        node = top[owner] if name is None else members[owner][name]
        got = {p: v.default for p, v in inspect.signature(fn).parameters.items() if p in want}
        assert got == want, f"{owner}.{name}: defaults {got}, the issue's {want}"
        got = {p: v for p, v in stub_defaults(node).items() if p in want}
        assert got == want, f"{owner}.{name}: the stub's defaults {got}, the issue's {want}"
