"""The shape of envcheck/scripts/: one observer module per family behind one protocol, a
public index, no private names imported across modules, no import cycles at run time."""

from __future__ import annotations

import ast
from pathlib import Path

from envcheck.scripts import analyze
from envcheck.scripts.observer import Observer

PACKAGE = Path(analyze.__file__).parent


def runtime_imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) imported at run time (not under `if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text())
    checking = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for n in ast.walk(node)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and id(node) not in checking:
            found.append((node.module, [a.name for a in node.names]))
    return found


def test_one_observer_per_family() -> None:
    families = {type(o).__module__.rsplit(".", 1)[-1] for o in analyze.OBSERVERS}
    assert families == {"dataloaders", "keras", "tf_data", "torch_loops", "tf_loops"}
    for observer in analyze.OBSERVERS:
        assert isinstance(observer, Observer)


def test_no_private_names_across_modules_and_no_cycles() -> None:
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = "envcheck.scripts." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        graph[module] = set()
        for imported, names in runtime_imports(path):
            if not imported.startswith("envcheck"):
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            assert not private, f"{module} imports {private} from {imported}"
            graph[module].add(imported)
            graph[module] |= {f"{imported}.{n}" for n in names}

    def visit(module: str, path: list[str]) -> None:
        assert module not in path, " -> ".join([*path, module])
        for target in graph.get(module, ()):
            if target in graph:
                visit(target, [*path, module])

    for module in graph:
        visit(module, [])
