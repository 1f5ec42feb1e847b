"""The package's import graph, read from the source (ast): modules form layers,
so no module imports, directly or not, one that imports it; and an import
inside a function is reserved for what must stay off the start-up path.

An import inside a function hides an edge of that graph (the cycles the
issue-29 layering removed all ran through one), so each is allowed only for
- the heavy optional stacks: torch (and functorch), transformers, ray,
  matplotlib, Megatron-Core (an extra), vLLM (in its own Python), which
  `charon-opt` and `charon --help` must not load, and the project's modules
  that import one at their top (HEAVY_MODULES, read from the source: the
  frontend's tracing and IR builder, profile/runner.py); and lark (START_UP),
  kept off `charon-opt`'s start-up;
- the lazy entries that keep them off that path: the package's `simulate` and
  `serve` (`charon_ir/__init__.py`), the registry's dialect, pass and target
  factories (xDSL's lazy registration, `charon-opt`'s start-up) and the cost
  engines' (`engines.base.ENGINES`); `charon`'s commands load by name
  (`cli.COMMANDS`), which ast does not see.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path

PACKAGES = ("charon_ir", "charon_ir.dialects", "charon_ir.passes", "charon_ir.lowering", "charon_ir.tools")
"""The package and the folders setuptools maps into it (pyproject's package-dir)."""

HEAVY = {"torch", "functorch", "transformers", "ray", "matplotlib", "megatron", "vllm"}
START_UP = {"lark"}
"""Light enough to install, not to load on every start-up: lark, the cluster
language's parser (~55 ms of `charon-opt --help`'s ~0.6 s CPU, which loads
set-target and so target/cluster.py), is imported when a cluster file is read."""

LAZY_ENTRIES = {
    "charon_ir": {"charon_ir.api", "charon_ir.serving.api"},
    "charon_ir.registry": None,  # every factory: dialects, passes, targets
    "charon_ir.engines.base": None,  # ENGINES: an engine loads when a run names it
}



def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, package
        root = Path(next(iter(spec.submodule_search_locations)))
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[0] in {"dialects", "passes", "lowering", "tools"} and package == "charon_ir":
                continue  # only where they are mapped
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The modules an import statement loads (a name imported from a package
    that is a submodule counts as that submodule)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        package = module.split(".")
        if MODULES[module].name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join(package + ([node.module] if node.module else []))
    for alias in node.names:
        yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base


def _imports(module: str) -> Iterator[tuple[str, bool]]:
    """(imported module, whether inside a function) of every runtime import."""
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))

    def walk(node: ast.AST, in_function: bool) -> Iterator[tuple[str, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # never runs
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield from ((t, in_function) for t in _targets(module, child))
            else:
                inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                yield from walk(child, inside)

    yield from walk(tree, False)


def _own(target: str) -> str | None:
    """The project module an import loads, or None for another package's."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def _loaded(target: str) -> Iterator[str]:
    """The project modules an import of `target` runs: its own and the
    `__init__` of each package above it (importing `a.b.c` runs `a.b` first)."""
    own = _own(target)
    while own:
        yield own
        own = own.rpartition(".")[0]
        if own not in MODULES:
            return


def _heavy_modules() -> set[str]:
    """Project modules that import a heavy stack at their top, directly or through
    another such module: importing one is importing torch (profile/runner.py)."""
    heavy: set[str] = set()
    while True:
        more = {m for m in MODULES if m not in heavy and any(
            not in_function and (t.split(".")[0] in HEAVY or _own(t) in heavy) for t, in_function in _imports(m))}
        if not more:
            return heavy
        heavy |= more


def _lazy_allowed(module: str, target: str) -> bool:
    if target.split(".")[0] in HEAVY | START_UP or _own(target) in HEAVY_MODULES:
        return True
    allowed = LAZY_ENTRIES.get(module, set())
    return allowed is None or target in allowed


HEAVY_MODULES = _heavy_modules()


def _function_level() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module in MODULES:
        for target, in_function in _imports(module):
            if in_function and not _lazy_allowed(module, target):
                out.setdefault(module, set()).add(target)
    return out


def _cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def _graph(include_function_level: bool) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        for target, in_function in _imports(module):
            if in_function and not include_function_level:
                continue
            if in_function and _lazy_allowed(module, target):
                continue  # a lazy entry loads what lies above it
            edges[module].update(own for own in _loaded(target) if own != module
                                 and not module.startswith(own + "."))  # a package's own __init__ runs first
    return edges


def test_the_graph_is_read():
    assert "charon_ir.runtime.interpreter" in MODULES and "charon_ir.passes.pipeline" in MODULES
    edges = _graph(include_function_level=False)
    assert "charon_ir.runtime.program" in edges["charon_ir.runtime.interpreter"]
    assert "charon_ir.runtime.timeline" in edges["charon_ir.report.summary"]


def test_no_cycle_among_top_level_imports():
    assert _cycles(_graph(include_function_level=False)) == []


def test_no_cycle_through_function_level_imports():
    """The cycles issue 29 named (runtime/flatten <-> report/summary <->
    runtime/interpreter, engines/calibration <-> validation, memory/states <->
    parallel/mesh, sweep/evaluate <-> sweep/serving) and those the function-level
    imports hid (serving/requests <-> serving/stages, memory <->
    parallel/backward_split) stay gone: none is left."""
    assert _cycles(_graph(include_function_level=True)) == []
    assert not any(m.startswith("charon_ir.engines.") and "charon_ir.validation" in n
                   for m, ns in _graph(include_function_level=True).items() for n in ns)


def test_no_function_level_import_but_the_allowed():
    found = {m: sorted(t) for m, t in _function_level().items()}
    assert not found, f"imports inside functions (move them to the top of the module): {found}"


def test_the_lazy_entries_keep_torch_off_the_start_up_path():
    """What the lazy entries load lies above every module charon-opt imports."""
    edges = _graph(include_function_level=False)
    # `charon` loads every command module (by name, which ast does not see)
    seen, todo = set(), ["charon_ir.tools.charon_opt", "charon_ir.cli",
                         *(m for m in MODULES if m.startswith("charon_ir.commands."))]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += edges[module]
    assert "charon_ir.registry" in seen
    assert {"charon_ir.frontend.tracing", "charon_ir.profile.runner"} <= HEAVY_MODULES
    assert not seen & HEAVY_MODULES



RUNTIME_LAYERS = ("program", "timeline", "interpreter", "fold", "flatten", "simulate_target", "tiers")
"""The runtime's layers, lowest first: each imports only those below it. The
first five are the simulator proper and import no pass, lowering or report;
`simulate_target` (`charon-opt -t simulate`) and `tiers` drive it: they finish a
module's pipeline (cost-annotate, lower-to-events) and summarise its run."""

SIMULATOR = RUNTIME_LAYERS[:5]


def test_passes_share_code_through_the_library_not_each_other():
    """A pass imports no other pass: what two passes share (a module query, a
    layout rule) lives in parallel/, memory/ or the dialects, where a new pass
    finds it too."""
    edges = _graph(include_function_level=True)
    crossing = {m: sorted(n for n in ns if n.startswith("charon_ir.passes.") and n != m)
                for m, ns in edges.items() if m.startswith("charon_ir.passes.")}
    assert not {m: ns for m, ns in crossing.items() if ns}


def test_the_runtime_is_layered_and_the_leaves_stay_leaves():
    edges = _graph(include_function_level=True)
    for i, layer in enumerate(RUNTIME_LAYERS):
        above = {f"charon_ir.runtime.{higher}" for higher in RUNTIME_LAYERS[i + 1:]}
        assert not edges[f"charon_ir.runtime.{layer}"] & above, layer
    upper = ("charon_ir.passes", "charon_ir.lowering", "charon_ir.report", "charon_ir.sweep",
             "charon_ir.validation", "charon_ir.api")
    for module, targets in edges.items():
        if module.rpartition(".")[2] in SIMULATOR and module.startswith("charon_ir.runtime."):
            assert not [t for t in targets if t.startswith(upper)], module
        if module.startswith("charon_ir.engines."):
            # a cost engine prices an op; it knows no pass, runtime, report or validation
            assert not [t for t in targets if t.startswith(upper + ("charon_ir.runtime", "charon_ir.memory",
                                                                    "charon_ir.parallel"))], module
        if module.startswith("charon_ir.report."):
            # the report only reads a simulation's results
            assert not [t for t in targets if t.startswith(upper[:2] + ("charon_ir.sweep", "charon_ir.validation"))
                        or t.startswith("charon_ir.runtime.") and t.rpartition(".")[2] not in
                        ("program", "timeline")], module
