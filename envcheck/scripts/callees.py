"""Which function of the file a call runs, read from the source: `f(...)`, `self.f(...)`,
`this.f(...)` where the module names itself (`d2l = sys.modules[__name__]`), and
`obj.method(...)` where `obj = SomeClass(...)` is an instance of a class of the file.
Training code hides its per-step work in such helpers (`metric.add(loss)`,
`d2l.accuracy(pred, y)`), so the step loop must follow them.
"""

from __future__ import annotations

import ast
from typing import Optional, Union

from envcheck.scripts.index import FileIndex
from envcheck.scripts.tensors import dotted

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


class Callees:
    """Calls of one file resolved to the file's own functions and methods."""

    def __init__(
        self,
        module: ast.Module,
        files: FileIndex,
        assignments: list[tuple[ast.expr, ast.expr]],
        calls: list[ast.Call],
    ):
        """`assignments` and `calls`: every `target = value` and call of the file."""
        self.files = files
        # `f(...)` and `this.f(...)` run the module's own f, whatever methods share its name
        self.top_level = {
            n.name: n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self.itself = {  # d2l = sys.modules[__name__]
            target.id
            for node in module.body
            if isinstance(node, ast.Assign) and _names_itself(node.value)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        found: dict[str, set[str]] = {}
        for target, value in assignments:
            cls = self._class_of(value.func) if isinstance(value, ast.Call) else None
            key = dotted(target)
            if cls is not None and key is not None:
                found.setdefault(key, set()).add(cls)
        # names always holding an instance of one class of the file
        self.instances = {k: next(iter(v)) for k, v in found.items() if len(v) == 1}
        self.calls = calls
        self._counts: Optional[dict[int, int]] = None

    def calls_of(self, function: Function) -> int:
        """How many calls in the file run `function`."""
        if self._counts is None:
            self._counts = {}
            for node in self.calls:
                found = self.function(node)
                if found is not None:
                    self._counts[id(found)] = self._counts.get(id(found), 0) + 1
        return self._counts.get(id(function), 0)

    def _class_of(self, func: ast.expr) -> Optional[str]:
        if isinstance(func, ast.Name) and func.id in self.files.classes:
            return func.id
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in self.itself
            and func.attr in self.files.classes
        ):
            return func.attr
        return None

    def function(self, call: ast.Call) -> Optional[Function]:
        """The function or method of the file `call` runs, or None."""
        func = call.func
        if isinstance(func, ast.Name):
            return self.files.functions.get(func.id) or self.top_level.get(func.id)
        if not isinstance(func, ast.Attribute):
            return None
        base = func.value
        if isinstance(base, ast.Name) and base.id in self.itself:
            return self.top_level.get(func.attr)
        if isinstance(base, ast.Name) and base.id in ("self", "cls"):
            return self.files.functions.get(func.attr)
        cls = self.instances.get(dotted(base) or "")
        if cls is not None:
            return self.method(cls, func.attr)
        return None

    def method(self, cls: str, name: str, depth: int = 0) -> Optional[Function]:
        """`name` defined in class `cls` of the file or in one of its bases of the file
        (`class RNN(d2l.Module)` where `d2l` is the module itself)."""
        node = self.files.classes.get(cls)
        if node is None or depth > 4:
            return None
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name:
                return item
        for base in node.bases:
            found = None
            if isinstance(base, ast.Name):
                found = self.method(base.id, name, depth + 1)
            elif (
                isinstance(base, ast.Attribute)
                and isinstance(base.value, ast.Name)
                and base.value.id in self.itself
            ):
                found = self.method(base.attr, name, depth + 1)
            if found is not None:
                return found
        return None


def _names_itself(value: ast.expr) -> bool:
    """`sys.modules[__name__]`: the module itself."""
    return (
        isinstance(value, ast.Subscript)
        and ast.unparse(value.value) == "sys.modules"
        and isinstance(value.slice, ast.Name)
        and value.slice.id == "__name__"
    )
