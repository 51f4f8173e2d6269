"""The package's layers (docs/architecture.md): imports only go down, no cycles, no pytest in core."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_forall"

#: Bottom to top; a module may import its own layer and the layers before it.
LAYERS = ("core", "isolation", "lang", "retrieval", "agents", "suites", "tools", "plugin", "cli")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every pytest_forall module ``path`` imports, at top level or deferred inside a function."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    type_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                 and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                 for n in ast.walk(block)}
    for node in ast.walk(tree):
        if id(node) in type_only:  # annotations only: never executed, so never part of a cycle
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    return {m for m in found if m in modules and m != name}


def layer_of(module: str) -> int:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else -1


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in PACKAGE.rglob("*.py")}


def test_every_module_belongs_to_a_layer() -> None:
    loose = sorted(m for m in graph() if layer_of(m) < 0 and m not in ("pytest_forall",))
    assert not loose, f"modules outside every layer: {loose}"


def test_imports_only_go_down() -> None:
    upward = sorted(f"{mod} -> {dep}" for mod, deps in graph().items() for dep in deps
                    if layer_of(dep) > layer_of(mod) >= 0)
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_no_import_cycle() -> None:
    edges = graph()
    # parent packages are imported implicitly; an edge to a package is an edge to its __init__ only
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in sorted(edges.get(node, ())):
            if state.get(dep) == 1:
                cycles.append([*stack[stack.index(dep):], dep])
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_core_never_imports_pytest() -> None:
    offenders = sorted(str(p.relative_to(PACKAGE)) for p in (PACKAGE / "core").rglob("*.py")
                       for node in ast.walk(ast.parse(p.read_text()))
                       if (isinstance(node, ast.Import) and any(a.name.split(".")[0] in ("pytest", "_pytest")
                                                                for a in node.names))
                       or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0]
                           in ("pytest", "_pytest")))
    assert not offenders, f"core modules importing pytest: {offenders}"


def test_core_and_static_verify_load_no_pytest(tmp_path: Path) -> None:
    template = tmp_path / "t.v"
    template.write_text("Theorem t : True.\nProof.\nAdmitted.\n")
    candidate = tmp_path / "c.v"
    candidate.write_text("Theorem t : True.\nProof.\n  exact I.\nQed.\n")
    code = (f"import sys, runpy; sys.argv = ['forall', 'verify', '--prover', 'rocq', '--template', {str(template)!r}, "
            f"'--candidate', {str(candidate)!r}, '--static-only', '--json']\n"
            "import pytest_forall.core.verify, pytest_forall.core.protocol, pytest_forall.core.registry\n"
            "from pytest_forall.cli import main\n"
            "status = main(sys.argv[1:])\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pytest', '_pytest'))\n"
            "print('LOADED', loaded, 'STATUS', status)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                            cwd=PACKAGE.parent)
    last = result.stdout.strip().splitlines()[-1]
    assert last == "LOADED [] STATUS 0", result.stdout + result.stderr


def test_prover_names_only_in_language_packs() -> None:
    """A prover's name as a string literal appears only inside its own language pack."""
    names = {"rocq", "lean"}  # (PutnamBench's track names "coq"/"lean4" are the suite's data, not provers)
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.is_relative_to(PACKAGE / "lang"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in names:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}")
    assert not offenders, "prover-name checks outside lang/:\n" + "\n".join(sorted(offenders))


def test_prover_name_constants_are_not_compared_outside_language_packs() -> None:
    """Nor a pack's constant holding a prover name (``ROCQ_PROVER``): comparing a task's prover with it outside lang/
    is the same name check by another spelling; the pack's ``Language`` says what differs (its ``project_splice`` …)."""
    from pytest_forall.core.language import language_names

    provers = {"rocq", "lean", *language_names()}
    constants = {target.id for path in (PACKAGE / "lang").rglob("*.py") for node in ast.parse(path.read_text()).body
                 if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                 and node.value.value in provers for target in node.targets if isinstance(target, ast.Name)}
    assert "ROCQ_PROVER" in constants  # the rule sees them
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.is_relative_to(PACKAGE / "lang"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                names = {n.id if isinstance(n, ast.Name) else n.attr for n in [node.left, *node.comparators]
                         if isinstance(n, (ast.Name, ast.Attribute))}
                offenders += [f"{path.relative_to(PACKAGE)}:{node.lineno}: {name}" for name in names & constants]
    assert not offenders, "prover-name constants compared outside lang/:\n" + "\n".join(sorted(offenders))


#: Prover implementations that live outside ``lang/`` today, each a benchmark's own scorer built around a language
#: pack's backend (their move into the Lean pack is a follow-up of issue 36; the lead decides). Nothing else may join.
PROVERS_OUTSIDE_LANG = {
    "pytest_forall.suites.verisoftbench.VeriSoftBenchProver",  # a VeriSoftBench repository's file, spliced
    "pytest_forall.suites.lean_eval.LeanEvalProver",  # Lean Eval's comparator on a submission
    "pytest_forall.cli.doctor._NoStatic",  # `forall doctor`'s probe: the Lean backend without its screen
}


def prover_implementations(package: Path) -> list[str]:
    """Every class of ``package`` that implements ``core.prover.Prover``: it has all of the protocol's methods, defined
    by itself or by a class it inherits from (bases resolved by name among the package's classes, so a subclass of a
    backend is one too). The protocol itself aside."""
    protocol = next(node for node in ast.walk(ast.parse((package / "core" / "prover.py").read_text()))
                    if isinstance(node, ast.ClassDef) and node.name == "Prover")
    required = {n.name for n in protocol.body if isinstance(n, ast.FunctionDef)}
    classes: dict[str, list[tuple[str, set[str], list[str]]]] = {}
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                methods = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
                bases = [ast.unparse(b).rpartition(".")[2] for b in node.bases]
                classes.setdefault(node.name, []).append((f"{module_name(path)}.{node.name}", methods, bases))

    def has(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        if name in seen:
            return set()
        return {m for _, methods, bases in classes.get(name, []) for m in
                methods.union(*(has(b, seen | {name}) for b in bases))}

    return sorted(qualified for name, found in classes.items() for qualified, methods, bases in found
                  if "Protocol" not in bases and required <= methods.union(*(has(b, frozenset({name})) for b in bases)))


def test_prover_implementations_only_in_language_packs() -> None:
    """A prover backend (a class implementing ``core.prover.Prover``) lives in its language pack: a reader looking
    for how a prover builds and judges finds it under ``lang/``, and a change to a judge is made in one pack."""
    found = prover_implementations(PACKAGE)
    assert any(name.startswith("pytest_forall.lang.rocq.backend.") for name in found), found  # the rule sees them
    outside = [name for name in found
               if not name.startswith("pytest_forall.lang.") and name not in PROVERS_OUTSIDE_LANG]
    assert not outside, "prover implementations outside lang/:\n" + "\n".join(outside)


def test_no_module_above_900_lines() -> None:
    """A module a reader can hold: none of the package's modules is longer than 900 lines."""
    long = sorted(f"{path.relative_to(PACKAGE)}: {count} lines" for path in PACKAGE.rglob("*.py")
                  if (count := len(path.read_text().splitlines())) > 900)
    assert not long, "modules above 900 lines:\n" + "\n".join(long)
