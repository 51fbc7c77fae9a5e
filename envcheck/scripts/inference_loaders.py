"""Loaders of an inference method the file offers and never runs itself.

A library class that trains in one method (`fit_svi`) may also offer `evaluate()`,
`embed()` or `ite()`: each builds a DataLoader over the caller's data and reads it under
`torch.no_grad()` to score or embed it. Nothing in the file calls those methods, so
their loaders are no part of the training the file runs: `inference_only` says so, and
EC501/EC502 leave them alone. The conditions, all of them:

- the loader is built in a function (not `__dunder__`) whose name nothing in the file
  reads: no call, no reference (`callbacks=[self.evaluate]`);
- the file trains elsewhere (a backward pass or an optimizer step outside that function)
  and that function holds no step of its own;
- the loader is held in a local name, read only by `for` loops (bare or through
  `enumerate`, `tqdm`...), `len(...)`, or handed to a function of the file that reads
  its parameter the same way; each loop runs under `torch.no_grad()` /
  `torch.inference_mode()` (a `with` around it or a decorator on its function), or
  stops after its first batch (`break` ending its body), and takes no step.

A validation loader a training loop reads every epoch fails the first condition: its
function is called from the training code. Marks only; the rules judge.
"""

from __future__ import annotations

import ast
from typing import Any, Optional, Union

from envcheck.scripts.index import FileIndex, function_owners, module_nodes, own_nodes

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
NO_GRAD = ("no_grad", "inference_mode")
STEPS = ("backward", "manual_backward", "step")
LOOP_WRAPPERS = ("enumerate", "iter", "tqdm", "track", "zip")
MAX_DEPTH = 2  # functions followed that a loader is handed to


def mark_inference_only(
    module: ast.Module, index: FileIndex, loaders: list[dict[str, Any]]
) -> None:
    """Set `inference_only` (why, or None) on every loader (see the module docstring)."""
    for loader in loaders:
        loader["inference_only"] = None
    if not loaders or not _trains(list(module_nodes(module))):
        return
    owners = function_owners(module, index.function_nodes)
    calls = {
        (n.lineno, n.col_offset + 1): n for n in module_nodes(module) if isinstance(n, ast.Call)
    }
    methods = {
        id(f) for c in module_nodes(module) if isinstance(c, ast.ClassDef) for f in c.body
    }  # once per file: looked up per loader, N loaders took N² work
    run = _run_functions(module, index, methods)
    for loader in loaders:
        call = calls.get((loader["line"], loader["column"]))
        function = owners.get(id(call)) if call is not None else None
        if call is None or not isinstance(function, FUNCTIONS) or function.name.startswith("__"):
            continue
        if id(function) in run or _trains(list(own_nodes(function))):
            continue  # reached from the file's code, or a training function itself
        name = _held_in(function, call)
        if name is None:
            continue
        loops = _inference_loops(index, function, name, 0)
        if loops:
            lines = sorted({loop.lineno for loop in loops})
            where = (
                f"the loop at line {lines[0]}"
                if len(lines) == 1
                else f"the loops at lines {', '.join(map(str, lines))}"
            )
            loader["inference_only"] = (
                f"it is built in {function.name}(), which nothing this file runs calls, and "
                f"read only for inference ({where}, without a training step): no part of "
                "the training this file runs"
            )


def _run_functions(module: ast.Module, index: FileIndex, methods: set[int]) -> set[int]:
    """id() of the functions the file runs: those its module-level code reads by name (a
    method through an attribute, `model.evaluate(...)`; any other function as a name or
    an attribute), dunders, decorated functions (a framework may call them), those that
    train (a step, `trainer.train()`), those that read their own name (recursion, or
    TorchDrug's `Engine.evaluate` calling `model.evaluate(pred, target)`: a name other
    objects of the project share and call, as before), and those the functions so
    reached read, transitively. A function read only by functions the file never runs
    is not run: Chronos2Pipeline.predict(), called by predict_quantiles(), itself called
    only by predict_df() and predict_fev(), offered to the caller and never called by
    fit()."""
    by_name: dict[str, list[ast.AST]] = {}
    for function in index.function_nodes:
        by_name.setdefault(function.name, []).append(function)
    reads = {id(f): _names_read(f) for f in index.function_nodes}
    run: set[int] = set()
    queue: list[ast.AST] = []
    names_seen: set[str] = set()
    attributes_seen: set[str] = set()

    def reach(function: ast.AST) -> None:
        if id(function) not in run:
            run.add(id(function))
            queue.append(function)

    def absorb(read: tuple[set[str], set[str]]) -> None:
        names, attributes = read
        for name in names - names_seen:
            names_seen.add(name)
            for function in by_name.get(name, []):
                if id(function) not in methods:
                    reach(function)
        for attribute in attributes - attributes_seen:
            attributes_seen.add(attribute)
            for function in by_name.get(attribute, []):
                reach(function)

    for function in index.function_nodes:
        name = getattr(function, "name", "")
        names, attributes = reads[id(function)]
        itself = name in attributes or (id(function) not in methods and name in names)
        framework = name.startswith("__") or _framework_decorated(function)
        if itself or framework or _trains(list(own_nodes(function))):
            reach(function)
    absorb(_names_read(module))
    while queue:
        absorb(reads[id(queue.pop())])
    return run


# decorators that leave the function to be called by name
PLAIN_DECORATORS = ("staticmethod", "classmethod", "property", "no_grad", "inference_mode")


def _framework_decorated(function: ast.AST) -> bool:
    decorators = getattr(function, "decorator_list", [])
    return any(
        ast.unparse(d.func if isinstance(d, ast.Call) else d).rsplit(".", 1)[-1]
        not in PLAIN_DECORATORS
        for d in decorators
    )


def _names_read(scope: ast.AST) -> tuple[set[str], set[str]]:
    """The names `scope` (the module, or a function) loads, and the attributes it reads
    or calls, not counting the bodies of the functions defined in it (their decorators
    and defaults are read where they are defined)."""
    names: set[str] = set()
    attributes: set[str] = set()
    stack: list[ast.AST] = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(node.decorator_list)
            stack.extend(node.args.defaults)
            stack.extend(d for d in node.args.kw_defaults if d is not None)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            attributes.add(node.attr)
        stack.extend(ast.iter_child_nodes(node))
    return names, attributes


def _trains(nodes: list[ast.AST]) -> bool:
    """A step among the nodes (_steps), or `trainer.train()` on a name bound to a
    `...Trainer(...)` there (a Hugging Face Trainer's loop, run from a library's fit())."""
    if _steps(nodes):
        return True
    trainers = {
        t.id
        for n in nodes
        if isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Call)
        and ast.unparse(n.value.func).rsplit(".", 1)[-1].endswith("Trainer")
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "train"
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id in trainers
        for n in nodes
    )


def _steps(nodes: list[ast.AST]) -> bool:
    """A backward pass or an optimizer step (`.step()` on anything) among the nodes."""
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in STEPS
        for n in nodes
    )


def _held_in(function: ast.AST, call: ast.Call) -> Optional[str]:
    """The local name the loader is assigned to (`loader = DataLoader(...)`, or one branch
    of `[x] if batch_size is None else DataLoader(x, ...)`), assigned nowhere else."""
    names: list[str] = []
    for node in own_nodes(function):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        value = node.value
        branches = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
        target = node.targets[0]
        if any(b is call for b in branches) and isinstance(target, ast.Name):
            names.append(target.id)
    if len(names) != 1:
        return None
    stores = [
        n
        for n in own_nodes(function)
        if isinstance(n, ast.Name) and n.id == names[0] and isinstance(n.ctx, ast.Store)
    ]
    return names[0] if len(stores) == 1 else None


def _inference_loops(index: FileIndex, function: ast.AST, name: str, depth: int) -> list[ast.For]:
    """The loops that read `name` in `function` (and in the functions it is handed to),
    when every read is one that only infers (see the module docstring); [] otherwise."""
    parents = _parents(function)
    loops: list[ast.For] = []
    for node in own_nodes(function):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        found = _read_by(index, function, parents, node, depth)
        if found is None:
            return []
        loops += found
    return loops


def _read_by(
    index: FileIndex,
    function: ast.AST,
    parents: dict[int, ast.AST],
    node: ast.Name,
    depth: int,
) -> Optional[list[ast.For]]:
    """The loops one read of the loader's name leads to, [] for `len(name)`, None for a
    read that may train or hand the loader on out of sight."""
    holder = parents.get(id(node))
    read: ast.expr = node
    while (
        isinstance(holder, ast.Call)
        and _called(holder) in LOOP_WRAPPERS
        and any(a is read for a in holder.args)
    ):
        read, holder = holder, parents.get(id(holder))
    if isinstance(holder, ast.For) and holder.iter is read:
        return [holder] if _only_infers(function, parents, holder) else None
    if isinstance(holder, ast.Call) and _called(holder) == "len":
        return []
    if isinstance(holder, ast.Call) and read is node and depth < MAX_DEPTH:
        callee = _callee(index, function, holder)
        if callee is None:
            return None
        parameters = [a.arg for a in [*callee.args.posonlyargs, *callee.args.args]]
        if parameters[:1] in (["self"], ["cls"]) and isinstance(holder.func, ast.Attribute):
            parameters = parameters[1:]
        position = next((i for i, a in enumerate(holder.args) if a is node), len(parameters))
        if position >= len(parameters) or _steps(list(own_nodes(callee))):
            return None
        loops = _inference_loops(index, callee, parameters[position], depth + 1)
        return loops or None
    return None


def _callee(
    index: FileIndex, function: ast.AST, call: ast.Call
) -> Optional[Union[ast.FunctionDef, ast.AsyncFunctionDef]]:
    """The function of the file a call runs: `self.m(...)` the method `m` of the class
    holding `function`, `f(...)` the file's one function `f`."""
    name = _called(call) or ""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if func.value.id == "self":
            owner = next((c for c in index.class_nodes if function in c.body), None)
            methods = [m for m in (owner.body if owner else []) if isinstance(m, FUNCTIONS)]
            return next((m for m in methods if m.name == name), None)
        return None
    return index.functions.get(name) if isinstance(func, ast.Name) else None


def _called(call: ast.Call) -> Optional[str]:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def _only_infers(function: ast.AST, parents: dict[int, ast.AST], loop: ast.For) -> bool:
    """A loop without a step that runs with gradients off, or reads one batch only."""
    if _steps(list(ast.walk(loop))):
        return False
    if loop.body and isinstance(loop.body[-1], ast.Break):
        return True
    decorators = getattr(function, "decorator_list", [])
    if any(_no_grad(d) for d in decorators):
        return True
    holder = parents.get(id(loop))
    while holder is not None and holder is not function:
        if isinstance(holder, (ast.With, ast.AsyncWith)) and any(
            _no_grad(item.context_expr) for item in holder.items
        ):
            return True
        holder = parents.get(id(holder))
    return False


def _no_grad(node: ast.expr) -> bool:
    """`torch.no_grad()`, `torch.inference_mode()` (called or bare, as a decorator)."""
    target = node.func if isinstance(node, ast.Call) else node
    return ast.unparse(target).rsplit(".", 1)[-1] in NO_GRAD


def _parents(function: ast.AST) -> dict[int, ast.AST]:
    """id(node) -> its parent, for the function's own nodes."""
    found: dict[int, ast.AST] = {}
    for node in [function, *own_nodes(function)]:
        for child in ast.iter_child_nodes(node):
            found[id(child)] = node
    return found
