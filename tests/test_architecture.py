"""The architecture holds: the import contracts of pyproject.toml (``lint-imports``), no import
cycle, and no package importing another package's ``_base`` (docs/architecture.md).

Pure logic on the source files: import-linter and grimp run in this process and import
nothing of nictune, so these tests are in the unit layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "nictune"
#: Directories of .py files that are not packages on purpose: Alembic loads its scripts by path.
NOT_PACKAGES = {PACKAGE / "db" / "migrations", PACKAGE / "db" / "migrations" / "versions"}


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    # Imports under TYPE_CHECKING count: a type-only import is still an arrow between modules.
    return grimp.build_graph("nictune", cache_dir=None)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _source_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if not any(parent in NOT_PACKAGES for parent in (p.parent, *p.parents)))


def test_the_import_contracts_are_kept(capsys: pytest.CaptureFixture[str]) -> None:
    """What ``lint-imports`` checks (layers, private modules, acyclic siblings), in process."""
    from importlinter import configuration
    from importlinter.application import use_cases

    configuration.configure()
    kept = use_cases.lint_imports(config_filename=str(ROOT / "pyproject.toml"), cache_dir=None, no_logo=True)
    assert kept, capsys.readouterr().out


def test_every_module_is_in_the_import_graph(graph: grimp.ImportGraph) -> None:
    """A directory without ``__init__.py`` is a namespace package that grimp (and so every
    contract) does not see."""
    missing = sorted(name for name in map(_module_name, _source_files()) if name not in graph.modules)
    assert not missing, f"not in the import graph (a directory without __init__.py?): {missing}"


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
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
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle(graph: grimp.ImportGraph) -> None:
    cycles = _cycles(graph)
    described = []
    for component in cycles:
        members = set(component)
        arrows = [f"{a} -> {b}" for a in component
                  for b in sorted(graph.find_modules_directly_imported_by(a) & members)]
        described.append("; ".join(arrows))
    assert not cycles, "import cycles:\n" + "\n".join(described)


def test_the_cycle_finder_finds_a_cycle() -> None:
    g = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c"):
        g.add_module(name)
    g.add_import(importer="p.a", imported="p.b")
    g.add_import(importer="p.b", imported="p.a")
    g.add_import(importer="p.c", imported="p.a")
    assert _cycles(g) == [["p.a", "p.b"]]


def _imported(module: str, tree: ast.AST, is_package: bool) -> list[tuple[str, int]]:
    """Every module name an import statement of ``module`` may load, with its line: ``import X``
    gives X; ``from X import a`` gives X and X.a (``a`` may be a submodule). Relative imports
    are resolved; imports inside functions and ``TYPE_CHECKING`` blocks count."""
    out: list[tuple[str, int]] = []
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            out.append((source, node.lineno))
            out += [(f"{source}.{alias.name}", node.lineno) for alias in node.names]
    return out


def _base_imports_from_outside() -> list[str]:
    bad = []
    for path in _source_files():
        module = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name, line in _imported(module, tree, path.name == "__init__.py"):
            parts = name.split(".")
            if "_base" not in parts:
                continue
            owner = ".".join(parts[: parts.index("_base")])
            if not (module == owner or module.startswith(owner + ".")):
                bad.append(f"{path.relative_to(ROOT)}:{line}: imports {owner}._base")
    return sorted(set(bad))


def test_no_package_imports_another_packages_base() -> None:
    """A package's interfaces live in its ``_base``; other packages import them from the package."""
    bad = _base_imports_from_outside()
    assert not bad, "import the names from the package (its __init__ re-exports them):\n" + "\n".join(bad)


@pytest.mark.parametrize(("module", "is_package", "statement", "loaded"), [
    ("nictune.jobs.runner", False, "from nictune.measure._base import Testbed", "nictune.measure._base"),
    ("nictune.jobs.runner", False, "import nictune.optimizer._base", "nictune.optimizer._base"),
    ("nictune.jobs.runner", False, "from nictune.search_spaces import _base", "nictune.search_spaces._base"),
    ("nictune.measure.sim.model", False, "from .._base import Workload", "nictune.measure._base"),
    ("nictune.measure", True, "from ._base import Workload", "nictune.measure._base"),
    ("nictune.jobs.runner", False, "if TYPE_CHECKING:\n    from nictune.db._json import x", "nictune.db._json"),
])
def test_the_base_check_reads_every_form_of_import(module: str, is_package: bool, statement: str, loaded: str) -> None:
    assert loaded in [name for name, _ in _imported(module, ast.parse(statement), is_package)]
