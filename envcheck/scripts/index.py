"""The public AST index of one file, shared by the walker and every observer: where
each function and class is, which functions are generators, which classes derive from
a framework base, and helpers to walk a node's own statements (not nested functions).
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
from collections.abc import Mapping
from typing import Iterator, Optional, Union

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


LINE_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> list[str]:
    """The lines of a source text as Python's parser counts them: split at `\n`, `\r\n`
    and `\r` only. `str.splitlines` also splits at a form feed, `\v`, `\x1c`-`\x1e`,
    U+0085, U+2028 and U+2029, and a finding then quoted a line other than the one its
    number names."""
    lines = LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()  # the text ends with a line break: no line after it
    return lines


# A quoted line is cut here: N findings on one generated line N statements long
# (`a = DataLoader(x); b = ...`, a chain of N maps) quoted it N times, N² bytes.
MAX_CODE_CHARS = 200


def code_at(lines: list[str], line: int) -> str:
    """The stripped source line (1-based), cut to MAX_CODE_CHARS characters (`...` at the
    end), or "" outside the file."""
    code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    return code if len(code) <= MAX_CODE_CHARS else code[: MAX_CODE_CHARS - 3] + "..."


def qualified_name(node: ast.AST, aliases: Mapping[str, str]) -> Optional[str]:
    """`nn.Linear` -> `torch.nn.Linear` with `from torch import nn`: a name or attribute
    chain with its first name read through the file's imports; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([aliases.get(node.id, node.id), *reversed(parts)])


def qualified_base(base: ast.expr, aliases: dict[str, str]) -> str:
    text = ast.unparse(base)
    head, _, rest = text.partition(".")
    return aliases.get(head, head) + (f".{rest}" if rest else "")


def keyword_arg(call: ast.Call, name: str) -> Optional[ast.expr]:
    """The expression a call passes as keyword `name`, or None."""
    for given in call.keywords:
        if given.arg == name:
            return given.value
    return None


def is_cpu(node: Optional[ast.expr]) -> bool:
    """`"cpu"` or `torch.device("cpu")`."""
    if isinstance(node, ast.Call) and node.args:
        node = node.args[0]
    return isinstance(node, ast.Constant) and node.value == "cpu"


def module_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of a tree in `ast.walk` order, listed once per tree: a dozen readers
    scan the whole module, and walking it anew for each took a fifth of the audit."""
    cached: Optional[list[ast.AST]] = tree.__dict__.get("_envcheck_nodes")
    if cached is None:
        cached = list(ast.walk(tree))
        setattr(tree, "_envcheck_nodes", cached)  # noqa: B010 - AST nodes have no slot
    return cached


def shadowed_definitions(module: ast.Module) -> list[ast.stmt]:
    """Module-level classes and functions defined again further down under the same name,
    with no statement between the two reading the name (no call, no subclass, no
    decorator): the first definition is never used, its methods never run. Only names
    defined twice are looked for, each statement walked once: scanning the rest of the
    file per definition took N² (1,000 functions, 37 s)."""
    body = module.body
    kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    places: dict[str, list[int]] = {}
    for index, statement in enumerate(body):
        if isinstance(statement, kinds):
            places.setdefault(statement.name, []).append(index)
    twice = {name for name, at in places.items() if len(at) > 1}
    if not twice:
        return []
    reads: dict[str, list[int]] = {}
    for index, statement in enumerate(body):
        for name in {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)} & twice:
            reads.setdefault(name, []).append(index)
    found: list[ast.stmt] = []
    for name in twice:
        at = places[name]
        for index, following in itertools.pairwise(at):
            # the first read after this definition comes only at or after the next one
            read = reads.get(name, [])
            first = bisect.bisect_right(read, index)
            if first == len(read) or read[first] >= following:
                found.append(body[index])
    return sorted(found, key=lambda d: d.lineno)


def function_owners(tree: ast.AST, functions: list[Function]) -> dict[int, ast.AST]:
    """id(node) -> the innermost function holding it (outer functions listed first), once
    per tree."""
    cached: Optional[dict[int, ast.AST]] = tree.__dict__.get("_envcheck_owners")
    if cached is None:
        cached = {}
        for function in functions:
            for node in ast.walk(function):
                cached[id(node)] = function
        setattr(tree, "_envcheck_owners", cached)  # noqa: B010 - AST nodes have no slot
    return cached


def own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Nodes under `node`, not descending into nested functions, classes or lambdas;
    depth first, each node before its children. A stack of iterators, not recursive
    generators: `yield from` passed each node up through every level above it, N² over
    an expression N levels deep (a chain of calls)."""
    stack = [ast.iter_child_nodes(node)]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
            continue
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.append(ast.iter_child_nodes(child))


BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers")


def header_nodes(statement: ast.stmt) -> Iterator[ast.AST]:
    """Nodes of a statement outside its nested blocks (a `for`'s iterable, an `if`'s
    test, a simple statement whole): blocks are read statement by statement."""
    for field, value in ast.iter_fields(statement):
        if field in BLOCK_FIELDS:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ast.AST):
                yield item
                if not isinstance(item, ast.Lambda):
                    yield from own_nodes(item)


class FileIndex:
    """The functions (unique names), generators and classes defined in one file."""

    def __init__(self, module: ast.Module, aliases: dict[str, str]):
        self.aliases = aliases
        self.function_nodes: list[Function] = [
            n
            for n in module_nodes(module)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        by_name: dict[str, list[Function]] = {}
        for function in self.function_nodes:
            by_name.setdefault(function.name, []).append(function)
        self.functions = {k: v[0] for k, v in by_name.items() if len(v) == 1}
        self.generators = {
            name
            for name, f in self.functions.items()
            if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own_nodes(f))
        }
        self.class_nodes = [n for n in module_nodes(module) if isinstance(n, ast.ClassDef)]
        self.classes = {c.name: c for c in self.class_nodes}
        self._derived: dict[frozenset[str], set[str]] = {}
        # calls whose result is thrown away (`show_config(num_workers=4)` as a statement)
        self.discarded_calls = {
            id(n.value)
            for n in module_nodes(module)
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
        }

    def derived_from(self, bases: set[str]) -> set[str]:
        """Names of the file's classes deriving from `bases` (qualified names), directly
        or through other classes of the file."""
        key = frozenset(bases)
        if key not in self._derived:
            self._derived[key] = derived(self.class_nodes, self.aliases, bases)
        return self._derived[key]


def derived(classes: list[ast.ClassDef], aliases: dict[str, str], bases: set[str]) -> set[str]:
    """Classes deriving from `bases`, directly or through other classes of the file."""
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name in found:
                continue
            for base in cls.bases:
                qualified = qualified_base(base, aliases)
                if qualified in bases or (isinstance(base, ast.Name) and base.id in found):
                    found.add(cls.name)
                    changed = True
                    break
    return found


def parameter_defaults(function: Optional[ast.AST]) -> list[tuple[ast.arg, Optional[ast.expr]]]:
    """(parameter, default) of a function's parameters that have a default slot (a
    keyword-only one without a default pairs with None)."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    return [
        *zip(
            positional[len(positional) - len(arguments.defaults) :],
            arguments.defaults,
            strict=True,
        ),
        *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True),
    ]


def filled_by_decorator(function: Optional[ast.AST]) -> Optional[str]:
    """The decorator that fills the function's parameters from a config its callers pass
    (detectron2's `@configurable(from_config=...)`: `build_loader(cfg, name)` runs with
    `num_workers=cfg.DATALOADER.NUM_WORKERS`, whatever the signature's default), or None.
    The signature's defaults then say nothing about a run. Gin's `@gin.configurable` is
    not one: gin binds only the parameters a config names, the others keep their
    defaults, as argparse options do when the command line leaves them out."""
    for decorator in getattr(function, "decorator_list", []):
        called = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = ast.unparse(called)
        if name.rsplit(".", 1)[-1] == "configurable" and name != "gin.configurable":
            return f"@{ast.unparse(decorator)}"
    return None


def none_parameters(function: Optional[ast.AST]) -> set[str]:
    """Parameters of `function` that default to None."""
    return {
        a.arg
        for a, d in parameter_defaults(function)
        if isinstance(d, ast.Constant) and d.value is None
    }


def own_calls(module: ast.Module, caller: Optional[ast.AST]) -> list[ast.Call]:
    """Calls made by `caller`'s own statements (the module's outside functions for None),
    listed once per caller: every loader of a file asks for every caller's."""
    holder = module if caller is None else caller
    cached: Optional[list[ast.Call]] = holder.__dict__.get("_envcheck_own_calls")
    if cached is not None:
        return cached
    body = module.body if caller is None else getattr(caller, "body", [])
    found: list[ast.Call] = []
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        found.extend(n for n in ast.walk(statement) if isinstance(n, ast.Call))
    setattr(holder, "_envcheck_own_calls", found)  # noqa: B010 - AST nodes have no slot
    return found


def calls_of(
    module: ast.Module, functions: list[Function], name: Optional[str]
) -> list[tuple[Optional[Function], ast.Call]]:
    """(caller, call) of every call by `name` (`f(...)` or `obj.f(...)`) that the module's
    own statements (caller None) and each function's make, in that order: indexed once
    per file, where scanning every caller for each loader took N² time."""
    cached: Optional[dict[str, list[tuple[Optional[Function], ast.Call]]]] = module.__dict__.get(
        "_envcheck_calls_of"
    )
    if cached is None:
        cached = {}
        for caller in [None, *functions]:
            for call in own_calls(module, caller):
                func = call.func
                called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if isinstance(called, str):
                    cached.setdefault(called, []).append((caller, call))
        setattr(module, "_envcheck_calls_of", cached)  # noqa: B010 - AST nodes have no slot
    return cached.get(name, []) if name is not None else []
