"""The package's shape, checked: file names, layers, import cycles, one home per derivative.

DESIGN.md's layers, bottom to top (each imports only from layers below it)::

    backend -> tensor -> autograd -> ops -> nn/optim/amp/io/data -> viz/debug -> course/cli

These tests read the source with ``ast`` (nothing is imported), so they name the file and line of
what breaks a rule:

* no file named ``*_more*`` or ``*misc*``, in gradlab/ or tests/ (a grab bag: a newcomer cannot find an op
  or its test in it by name);
* no import from a higher layer, at module level or inside a function (a deferred import hides
  the dependency from the reader, not from the rule; a lower layer that must reach up at call time
  does it through the slot the higher layer fills, as ``_tensor._ops``);
* no import of a private name (``_name``) from another layer: what a layer offers the ones above
  it is public;
* no import cycle between modules, counting the imports inside functions too. A submodule's
  ``from .. import ops as O`` (its own package, used late as ``O.name``) is not an edge: the package
  ``__init__`` imports its submodules, and the submodule only reads the package's attributes at
  call time;
* an op's derivative is written once: an op class does not define a ``vjp_arrays`` that is its
  ``vjp`` over again with ``np.``/``xp.`` for ``O.``, ``*_array`` helpers for ops, or ``as_weak``
  scalars (write it once: a row of ``ops/unary.py``'s
  table, ``ops/_util.OneRule``, or ``vjp_arrays = vjp``);
* no submodule is hidden by a package attribute of its name (``gradlab.ops.<file>`` is the module), and no
  two files share a name, but where an import path programs write fixes it (``PUBLIC_PATHS``);
* op classes (subclasses of ``Op``, however deep) are defined only under ``gradlab/ops/``: a student
  looking for a node's forward and rule finds it there, whichever layer records it.
"""
from __future__ import annotations

import ast
import copy
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1] / "gradlab"

#: package or top-level module -> layer number (DESIGN.md, "Layers inside gradlab/")
LAYERS = {
    "backend": 1, "errors": 1, "checks": 1,
    "_tensor": 2, "_interop": 2, "factories": 2, "sampling": 2,
    "autograd": 3,
    "ops": 4, "sparse": 4,
    "nn": 5, "distributions": 5, "optim": 5, "amp": 5, "io": 5, "data": 5, "func": 5, "torch_checkpoint": 5,
    "viz": 6, "debug": 6, "profiler": 6,
    "compile": 6,  # reads and rewrites finished graphs (as viz/debug read them) and draws them with viz
    "course": 7, "cli": 7, "lab": 7, "__main__": 7,
    "torch_compat": 7,  # PyTorch's module paths (torch.cuda, torch.utils.data...) over the library they re-export
    "__init__": 8,  # gradlab/__init__.py: the public face, above everything
}

#: Known breaks of these rules, each to be deleted by the change that fixes it (empty is the goal;
#: ``test_the_known_breaks_still_exist`` fails on an entry that no longer applies).
KNOWN_GRAB_BAGS: set[str] = set()
#: Imports from a higher layer, all inside functions (1):
KNOWN_UPWARD: set[tuple[str, str]] = {
    ("gradlab.autograd.functional", "gradlab.func"),  # torch.autograd.functional's API, built on func's transforms
}
#: Private names imported from another layer (2):
KNOWN_PRIVATE: set[tuple[str, str]] = {
    ("gradlab.autograd.saved", "gradlab._tensor._Version"),  # the version counter SavedTensor checks
    ("gradlab.torch_compat.cuda", "gradlab.backend.random._seed_cupy"),  # gradlab.cuda.manual_seed seeds CuPy's generator
}
#: twins kept on purpose, each with why (the rule is "pass dY back": no array work to share, and
#: OneRule's dispatch measured ~0.7 us a node, twice the node's whole backward)
KNOWN_RESTATED: dict[str, str] = {
    "gradlab/ops/arithmetic.py:Add": "speed: the commonest node, dY passed back",
    "gradlab/ops/arithmetic.py:Sub": "speed: as Add, dY passed back (negated)",
}
#: Imports inside functions that close an import cycle (11 imports, 7 cycles): the importer (left)
#: imports the other module inside a function, and the other imports the importer, directly or
#: through others, at module level. A new deferred import that closes a cycle fails the test.
KNOWN_CYCLE_EDGES: set[tuple[str, str]] = {
    ("gradlab._tensor", "gradlab.factories"),  # Tensor(data) converts with factories._to_array
    ("gradlab.autograd.saved", "gradlab.autograd.function"),  # an unpacked leaf gets its accumulator (edge_of)
    ("gradlab.autograd.functional", "gradlab.func"),  # (as KNOWN_UPWARD); func imports autograd
    ("gradlab.viz.torch_record", "gradlab.viz.record"),
    ("gradlab.viz.model", "gradlab.viz.foreign_graph"),
    ("gradlab.viz.show", "gradlab.viz.grad_diff_view"),
    ("gradlab.debug.explain", "gradlab.debug.torch_debug"),
    ("gradlab.debug.memory", "gradlab.debug.torch_debug"),
    ("gradlab.debug.torch_debug", "gradlab.debug.explain"),
    ("gradlab.debug.torch_debug", "gradlab.debug.memory"),
    ("gradlab.io", "gradlab.torch_checkpoint"),
}



def _modname(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _files():
    return sorted(p for p in ROOT.rglob("*.py") if "csrc" not in p.parts)


def _is_package(path):
    return path.name == "__init__.py"


def _imports(path):
    """``(line, imported name, deferred)`` for every import of gradlab in the file: at module level
    and inside functions and classes (``deferred`` is True inside a function), not under
    ``if TYPE_CHECKING`` (never run). ``from m import a`` gives ``m`` and ``m.a`` (``a`` may be a
    submodule, or a name whose privacy counts)."""
    tree = ast.parse(path.read_text(), str(path))
    me = _modname(path)
    pkg = me if _is_package(path) else me.rpartition(".")[0]
    out = []

    def visit(node, deferred):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            inner = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                out.extend((child.lineno, a.name, inner) for a in child.names if a.name.startswith("gradlab"))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = pkg.split(".")
                    base = base[: len(base) - (child.level - 1)]
                    mod = ".".join(base + ([child.module] if child.module else []))
                else:
                    mod = child.module or ""
                if mod.startswith("gradlab"):
                    out.append((child.lineno, mod, inner))
                    out.extend((child.lineno, f"{mod}.{a.name}", inner) for a in child.names)
            visit(child, inner)

    visit(tree, False)
    return out


def _known_modules():
    return {_modname(p): p for p in _files()}


def _resolve(name, known):
    """The module file an imported name is: ``gradlab.ops.reduce.sum`` -> ``gradlab.ops.reduce``."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _layer(mod):
    parts = mod.split(".")
    return LAYERS["__init__"] if len(parts) == 1 else LAYERS.get(parts[1])


def _graph():
    """``known`` (module -> file) and ``edges`` (module -> {imported module: (line, deferred)}), every
    import counted; a module-level import of a module wins over a deferred one."""
    known = _known_modules()
    edges = {}
    for mod, path in known.items():
        deps = {}
        for line, name, deferred in _imports(path):
            target = _resolve(name, known)
            if target is None or target == mod:
                continue
            if mod.startswith(target + "."):  # a submodule reading its own (ancestor) package: not an edge
                continue
            if target not in deps or deps[target][1] and not deferred:
                deps[target] = (line, deferred)
        edges[mod] = deps
    return known, edges


def _where(known, mod, line, deferred):
    return f"{known[mod].relative_to(ROOT.parent)}:{line}" + (" (inside a function)" if deferred else "")


def test_no_grab_bag_file_names():
    tests = sorted((ROOT.parent / "tests").rglob("*.py"))   # test files too: a test is found by its file's name
    bad = [str(p.relative_to(ROOT.parent)) for p in [*_files(), *tests] if re.search(r"_more|misc", p.stem)
           and str(p.relative_to(ROOT.parent)) not in KNOWN_GRAB_BAGS]
    assert not bad, f"files named *_more*/*misc* hold a grab bag; name them by what they hold: {bad}"


def test_every_package_has_a_layer():
    known = _known_modules()
    missing = sorted({m.split(".")[1] for m in known if "." in m and _layer(m) is None})
    assert not missing, f"add these to LAYERS in tests/test_layout.py (DESIGN.md's layers): {missing}"


def test_no_import_from_a_higher_layer():
    known, edges = _graph()
    bad = []
    for mod, deps in edges.items():
        for target, (line, deferred) in deps.items():
            lo, hi = _layer(mod), _layer(target)
            if lo is not None and hi is not None and hi > lo and (mod, target) not in KNOWN_UPWARD:
                bad.append(f"{_where(known, mod, line, deferred)} imports {target} (layer {hi} > {lo})")
    assert not bad, "imports from a higher layer (move what is needed down, or reach it through a slot the " \
                    "higher layer fills, as _tensor._ops):\n" + "\n".join(sorted(bad))


def _private_imports(known):
    """``(importer, target.name, line, deferred)`` for each private name imported from another layer."""
    for mod, path in known.items():
        for line, name, deferred in _imports(path):
            target = _resolve(name, known)
            short = name.rpartition(".")[2]
            if target is None or target == name or name != f"{target}.{short}":
                continue  # a module (or a name of a module's module), not a name in it
            if short.startswith("_") and not short.startswith("__") and _layer(mod) != _layer(target):
                yield mod, name, line, deferred


def test_no_private_name_imported_from_another_layer():
    known = _known_modules()
    bad = [f"{_where(known, mod, line, deferred)} imports {name}"
           for mod, name, line, deferred in _private_imports(known) if (mod, name) not in KNOWN_PRIVATE]
    assert not bad, "private names imported from another layer (make the name public where it lives, " \
                    "if the layers above need it):\n" + "\n".join(sorted(bad))


def _cycles(edges):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(frozenset(comp))

    import sys
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in list(edges):
        if v not in index:
            strong(v)
    return out


def test_no_import_cycles():
    known, edges = _graph()
    kept = {mod: {t for t in deps if (mod, t) not in KNOWN_CYCLE_EDGES} for mod, deps in edges.items()}
    cycles = _cycles(kept)
    lines = []
    for c in cycles:
        lines.append(" <-> ".join(sorted(c)))
        lines += [f"    {_where(known, m, *edges[m][t])} imports {t}" for m in sorted(c) for t in edges[m] if t in c]
    assert not cycles, "import cycles between modules (imports inside functions count):\n" + "\n".join(lines)


def test_the_known_breaks_still_exist():
    """An allow-list entry whose import is gone is deleted, so the lists only shrink."""
    known, edges = _graph()
    private = {(mod, name) for mod, name, _, _ in _private_imports(known)}
    gone = [e for e in sorted(KNOWN_UPWARD | KNOWN_CYCLE_EDGES) if e[1] not in edges.get(e[0], {})]
    gone += [e for e in sorted(KNOWN_PRIVATE) if e not in private]
    assert not gone, f"fixed: delete these from the known lists in tests/test_layout.py: {gone}"


def test_no_noqa_e402_in_ops():
    bad = [f"{p.relative_to(ROOT.parent)}:{i}" for p in (ROOT / "ops").glob("*.py")
           for i, line in enumerate(p.read_text().splitlines(), 1) if "noqa: E402" in line or "noqa: E402," in line]
    assert not bad, f"imports after code (noqa: E402) in the ops layer: {bad}"


_NAMESPACES = {"O", "np", "xp", "_np", "numpy"}


class _OneSpelling(ast.NodeTransformer):
    """Rewrites a VJP's AST so that spellings which differ only by namespace read alike: ``O.f``,
    ``np.f``, ``xp.f``, ``xp_of(x).f`` -> ``f``; an ``*_array`` helper -> its tensor name
    (``sum_to_array`` -> ``sum_to``); ``as_weak(v, like)`` (the arrays' cached scalar) -> ``v``;
    ``neg(x)`` -> ``-x``; ``saved_tensors`` -> ``saved_arrays``; ``with np.errstate(...)`` blocks
    unwrapped."""

    def visit_Attribute(self, node):
        self.generic_visit(node)
        v = node.value
        if (isinstance(v, ast.Name) and v.id in _NAMESPACES) or (
                isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "xp_of"):
            return ast.Name(id=node.attr, ctx=node.ctx)
        if node.attr == "saved_tensors":
            node.attr = "saved_arrays"
        return node

    def visit_Name(self, node):
        if node.id.endswith("_array") and node.id != "_array":
            node.id = node.id[:-len("_array")]
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "as_weak" and node.args:
            return node.args[0]
        if isinstance(node.func, ast.Name) and node.func.id == "neg" and len(node.args) == 1:
            return ast.UnaryOp(op=ast.USub(), operand=node.args[0])
        return node

    def visit_With(self, node):
        self.generic_visit(node)
        if all(isinstance(i.context_expr, ast.Call) and isinstance(i.context_expr.func, ast.Name)
               and i.context_expr.func.id == "errstate" for i in node.items):
            return node.body
        return node


def _normalised(fn_node, src):
    """A method's body (its AST, so parentheses and line breaks do not count) with the namespace
    written one way (see ``_OneSpelling``): what is left is the rule itself."""
    body = copy.deepcopy(fn_node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    module = _OneSpelling().visit(ast.Module(body=body, type_ignores=[]))
    return ast.dump(module)


def _op_classes():
    for path in _files():
        src = path.read_text()
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.ClassDef):
                methods = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
                yield path, node, methods, src


def test_each_derivative_is_written_once():
    """A ``vjp_arrays`` that is its class's ``vjp`` again (after ``O.``/``np.``/``xp.`` -> one name)
    restates the derivative: write it once against a namespace (see ``ops/unary.py``'s table)."""
    bad = []
    for path, cls, methods, src in _op_classes():
        if "vjp" in methods and "vjp_arrays" in methods:
            if _normalised(methods["vjp"], src) == _normalised(methods["vjp_arrays"], src) \
                    and f"{path.relative_to(ROOT.parent)}:{cls.name}" not in KNOWN_RESTATED:
                bad.append(f"{path.relative_to(ROOT.parent)}:{cls.lineno} {cls.name}")
    assert not bad, f"op classes whose vjp_arrays restates vjp: {bad}"


def _dotted(expr):
    """``a.b.c`` (a Name or a chain of Attributes) as a string, else None."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        head = _dotted(expr.value)
        return head and f"{head}.{expr.attr}"
    return None


def _classes_and_names():
    """``classes``: ``module.Class`` -> (file, line, its bases as full names), read with ``ast``; ``names``:
    module -> {name bound by an import: the full name it stands for} (``from ..autograd.function import Op``
    binds ``Op`` to ``gradlab.autograd.function.Op``), to resolve a base spelled through an import."""
    classes, names = {}, {}
    for path in _files():
        me = _modname(path)
        pkg = me if _is_package(path) else me.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        bound = names.setdefault(me, {})
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else []))
                bound.update({a.asname or a.name: f"{mod}.{a.name}" for a in node.names})
            elif isinstance(node, ast.Import):
                bound.update({a.asname: a.name for a in node.names if a.asname})
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = []
                for b in node.bases:
                    d = _dotted(b)
                    if d:
                        head, _, rest = d.partition(".")
                        full = bound.get(head, f"{me}.{head}")
                        bases.append(f"{full}.{rest}" if rest else full)
                classes[f"{me}.{node.name}"] = (path, node.lineno, bases)
    return classes, names


def _op_class_names():
    """Every class that subclasses ``gradlab.autograd.function.Op``, however deep, as ``module.Class``."""
    classes, names = _classes_and_names()

    def definition(full, seen=()):
        """Follow re-exports (``from .x import Y`` in a package) to the module that defines the class."""
        if full in classes or full in seen:
            return full
        mod, _, name = full.rpartition(".")
        target = names.get(mod, {}).get(name)
        return definition(target, (*seen, full)) if target else full

    ops = {"gradlab.autograd.function.Op"}
    grew = True
    while grew:
        more = {c for c, (_, _, bases) in classes.items() if c not in ops and any(definition(b) in ops for b in bases)}
        ops |= more
        grew = bool(more)
    return {c: classes[c] for c in ops if c in classes and c != "gradlab.autograd.function.Op"}


def test_op_classes_are_defined_only_under_ops():
    """An op class (``Op``'s subclass, however deep: ``Tanh(Elementwise)``) lives under ``gradlab/ops/``, even
    one that a lower layer records (``x[i] = v``'s ``SetItem``, forward mode's ``Alias``: autograd reaches
    them through ``_tensor._ops``) or a higher one serves (the sparse and gamma-sampling ops)."""
    found = _op_class_names()
    assert len(found) >= 100 and "gradlab.ops.unary.Tanh" in found and "gradlab.ops.assignment.SetItem" in found
    outside = sorted(f"{path.relative_to(ROOT.parent)}:{line} {c.rpartition('.')[2]}"
                     for c, (path, line, _) in found.items() if not c.startswith("gradlab.ops."))
    assert not outside, f"op classes outside gradlab/ops/ (move each to the ops file of its kind): {outside}"


def test_no_public_top_level_name_is_a_stray_module():
    """``from .ops import *`` once exported the ops *files*: ``gradlab.select(x, 0, 1)`` raised
    "'module' object is not callable". A public name that is a module must be one of gradlab's own
    subpackages/modules (``gradlab.nn``, ``gradlab.optim``...) or an intended namespace."""
    import types

    import gradlab
    import gradlab.ops
    own = {p.stem if p.suffix == ".py" else p.name for p in ROOT.iterdir()
           if (p.suffix == ".py" or (p / "__init__.py").exists()) and not p.name.startswith("_")}
    import gradlab.torch_compat
    # gradlab.linalg is torch.linalg's namespace (gradlab/ops/linalg.py); gradlab.cuda, gradlab.utils... are
    # PyTorch's paths, fenced in gradlab/torch_compat/
    intended = own | {"linalg"} | set(gradlab.torch_compat.PATHS)
    for where, names in ((gradlab, dir(gradlab)), (gradlab.ops, gradlab.ops.__all__)):
        stray = [n for n in names if not n.startswith("_") and isinstance(getattr(where, n), types.ModuleType)
                 and n not in intended]
        assert not stray, f"{where.__name__} exports modules as public names: {stray}"
    for name in gradlab.__all__:
        assert not isinstance(getattr(gradlab, name), types.ModuleType) or name in intended, name
    x = gradlab.arange(6.0).reshape(2, 3)
    assert gradlab.select(x, 0, 1).tolist() == [3.0, 4.0, 5.0]
    assert gradlab.select(x, 1, -1).tolist() == [2.0, 5.0]


# --- names: a module's name says what it holds, and no other module or attribute takes it ---

#: A package attribute that hides the submodule of the same name, each with why it stays (1). Everywhere
#: else ``gradlab.<package>.<file>`` is the module, so a student can type ``gradlab.ops.products.Linear``.
KNOWN_HIDDEN: dict[str, str] = {
    "gradlab.autograd.gradcheck": "PyTorch's layout: torch.autograd.gradcheck is the function too, its module "
                                  "torch.autograd.gradcheck",
}

#: Files whose dotted path is an import path that programs outside gradlab write, so their name is not
#: gradlab's to choose: file -> the module it answers (PyTorch's, at ``gradlab.<the rest>``; or one the
#: course's notebooks import). Two files may share a name only when all but one of them are here.
PUBLIC_PATHS: dict[str, str] = {
    "gradlab/autograd/functional.py": "torch.autograd.functional",
    "gradlab/nn/functional.py": "torch.nn.functional",
    "gradlab/nn/modules/conv.py": "torch.nn.modules.conv",
    "gradlab/nn/modules/dropout.py": "torch.nn.modules.dropout",
    "gradlab/nn/modules/module.py": "torch.nn.modules.module",
    "gradlab/nn/modules/utils.py": "torch.nn.modules.utils",
    "gradlab/nn/utils.py": "torch.nn.utils",
    "gradlab/torch_compat/distributed.py": "torch.distributed",
    "gradlab/torch_compat/utils/data/dataloader.py": "torch.utils.data.dataloader",
    "gradlab/torch_compat/utils/data/distributed.py": "torch.utils.data.distributed",
    "gradlab/torch_compat/utils/data/sampler.py": "torch.utils.data.sampler",
    "gradlab/course/checks.py": "gradlab.course.checks",  # every graded exercise's set-up cell imports check from it
}


def _packages():
    return sorted(_modname(p) for p in _files() if _is_package(p))


def test_no_submodule_is_hidden_by_an_attribute():
    """``gradlab.ops.softmax`` was the function, so ``gradlab.ops.softmax.SoftmaxBackward`` (the module's class)
    raised AttributeError though the file was ``gradlab/ops/softmax.py``. Every package's submodules are
    reached by name: a file is named for the kind of thing it holds (``softmax_ops.py``), not for one of
    the functions its package exports."""
    import importlib
    import pkgutil
    import types

    hidden = {}
    for name in _packages():
        pkg = importlib.import_module(name)
        for sub in pkgutil.iter_modules(pkg.__path__):
            attr = getattr(pkg, sub.name, None)
            if attr is not None and not isinstance(attr, types.ModuleType):
                hidden[f"{name}.{sub.name}"] = type(attr).__name__
    new = {k: v for k, v in hidden.items() if k not in KNOWN_HIDDEN}
    assert not new, ("submodules hidden by a package attribute of the same name (a file named as one of the "
                     f"functions it holds; name the file for its kind): {new}")
    gone = sorted(set(KNOWN_HIDDEN) - set(hidden))
    assert not gone, f"fixed: delete these from KNOWN_HIDDEN in tests/test_layout.py: {gone}"


def test_no_two_modules_share_a_file_name():
    """Five ``normalization.py`` and four ``loss.py`` once lived in gradlab: a newcomer could not tell from a
    traceback or a search which was meant. A file name is used once, but where PyTorch's import path
    (or the course's) fixes it: then the one file gradlab names itself may share it."""
    by_name = {}
    for p in _files():
        if p.name != "__init__.py":
            by_name.setdefault(p.name, []).append(str(p.relative_to(ROOT.parent)))
    bad = {n: ps for n, ps in sorted(by_name.items()) if len([p for p in ps if p not in PUBLIC_PATHS]) > 1}
    assert not bad, f"module file names used more than once (name each for what it holds): {bad}"
    missing = sorted(p for p in PUBLIC_PATHS if not (ROOT.parent / p).is_file())
    assert not missing, f"PUBLIC_PATHS names files that are gone: {missing}"


def test_the_pytorch_public_paths_are_pytorchs(torch):
    """Each PyTorch entry of PUBLIC_PATHS earns its place: PyTorch has that module and
    ``gradlab.<the same path>`` imports this very file (needs the oracle, for PyTorch's module list)."""
    import importlib
    import importlib.util

    for path, name in PUBLIC_PATHS.items():
        if name.startswith("torch."):
            assert importlib.util.find_spec(name) is not None, f"{path}: PyTorch has no module {name}"
            mod = importlib.import_module("gradlab" + name[len("torch"):])
            assert pathlib.Path(mod.__file__).resolve() == (ROOT.parent / path).resolve(), (path, mod.__file__)


def test_the_course_public_paths_are_imported_by_the_exercises():
    """Each course entry of PUBLIC_PATHS earns its place: the exercises import it by that name."""
    notebooks = "".join(p.read_text() for p in sorted((ROOT.parent / "exercises").glob("*.ipynb")))
    for path, name in PUBLIC_PATHS.items():
        if not name.startswith("torch."):
            assert f"from {name} import" in notebooks, f"{path}: no exercise imports {name}"
