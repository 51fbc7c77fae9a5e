"""Batch samplers that re-read their inner sampler until a set number of batches.

maskrcnn-benchmark's `IterationBasedBatchSampler(batch_sampler, num_iterations)`, copied
into many detection and segmentation projects, wraps a `BatchSampler`: its `__iter__`
runs `for batch in self.batch_sampler: ... yield batch` inside a `while` loop counting
the batches, so one pass over the DataLoader spans the whole training, however many
passes over the data that is. The training loop reads that loader once; its workers are
never restarted between epochs, and `persistent_workers` buys nothing (EC503).

Such a sampler is often chosen under a test: `if max_iter is not None: batch_sampler =
IterationBasedBatchSampler(batch_sampler, max_iter)` in a maker function. A call of a
maker (of the file, or of another file of the run) binds the maker's parameters to what
the call hands it: a parameter left at its default `None` turns the wrapping off (the
validation loader of the same maker restarts its workers each epoch), a value handed
turns it on. A test the source does not settle leaves the loader's passes unknown.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from envcheck.scripts.assignments import guarded_assignments, simple_assignments

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

# names bound to names, followed no further than this
MAX_DEPTH = 8
SURE = "sure"
MAYBE = "maybe"


@dataclass
class _Place:
    """Where a sampler expression is read: the function it is bound in (None: the
    module), its file's classes by name, and the parameters a call binds (name -> the
    expression handed; a parameter absent is at its default)."""

    function: Optional[ast.AST]
    classes: dict[str, ast.ClassDef]
    bound: Optional[dict[str, Optional[ast.expr]]] = None
    top: dict[str, ast.FunctionDef] = field(default_factory=dict)


def iteration_sampler(walker: Walker, call: ast.Call) -> tuple[Optional[str], Optional[str]]:
    """(why one pass of the loader built by `call` spans the training, why it may):
    its `batch_sampler=` (or `sampler=`) is, surely or under a test the source does not
    settle, an instance of a class that re-reads an inner sampler until a count."""
    sampler = next((k.value for k in call.keywords if k.arg in ("batch_sampler", "sampler")), None)
    if sampler is None:
        return None, None
    index = walker.index()
    place = _Place(
        walker.functions[-1] if walker.functions else None,
        dict(index.classes),
        top={f.name: f for f in walker.module.body if isinstance(f, ast.FunctionDef)},
    )
    found = _judge(walker, sampler, place, depth=0)
    if found is None:
        return None, None
    how, why = found
    return (why, None) if how == SURE else (None, why)


def _judge(walker: Walker, expr: ast.expr, place: _Place, depth: int) -> Optional[tuple[str, str]]:
    if depth > MAX_DEPTH:
        return None
    if isinstance(expr, ast.Name):
        return _judge_name(walker, expr.id, place, depth)
    if not isinstance(expr, ast.Call):
        return None
    cls = _class_of(walker, expr.func, place)
    if cls is not None:
        if _re_reads(cls):
            return SURE, (
                f"its batch sampler {cls.name}(...) re-reads its inner sampler until a set "
                "count of batches: one pass over the loader spans the training"
            )
        return None
    if place.bound is not None:
        return None  # a maker's own calls are not followed further
    return _judge_maker(walker, expr, place)


def _judge_name(walker: Walker, name: str, place: _Place, depth: int) -> Optional[tuple[str, str]]:
    body = _body(place.function) if place.function is not None else walker.module.body
    single = simple_assignments(body)
    if name in single:
        return _judge(walker, single[name], place, depth + 1)
    candidates = guarded_assignments(body).get(name)
    if not candidates:
        return None
    maybe: Optional[tuple[str, str]] = None
    last_sure: Optional[tuple[str, str]] = None
    for expr, guards in candidates:
        holds = _guards_hold(guards, place)
        if holds is False:
            continue
        found = _judge(walker, expr, place, depth + 1)
        if found is None:
            last_sure = None if holds else last_sure
            continue
        if holds and found[0] == SURE:
            last_sure = found
        else:
            maybe = (MAYBE, found[1] + _under(guards))
    if last_sure is not None:
        return last_sure
    return maybe


def _under(guards: list[tuple[Optional[ast.expr], bool]]) -> str:
    tests = [
        ast.unparse(test) if polarity else f"not ({ast.unparse(test)})"
        for test, polarity in guards
        if test is not None
    ]
    return f", when {' and '.join(tests)}" if tests else ""


def _guards_hold(guards: list[tuple[Optional[ast.expr], bool]], place: _Place) -> Optional[bool]:
    """Whether every test holds for the parameters the call binds: False when one does not,
    True when all do, None when one is not settled."""
    result: Optional[bool] = True
    for test, polarity in guards:
        held = _holds(test, place) if test is not None else None
        if held is not None and not polarity:
            held = not held
        if held is False:
            return False
        if held is None:
            result = None
    return result


def _holds(test: ast.expr, place: _Place) -> Optional[bool]:
    """`param is not None`, `param is None` or `param` for a parameter the call binds."""
    if place.bound is None:
        return None
    negate = False
    name: Optional[str] = None
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.left, ast.Name)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
    ):
        name, negate = test.left.id, isinstance(test.ops[0], ast.Is)
        handed = place.bound.get(name, _MISSING)
        if handed is _MISSING:
            return None
        is_none = _is_none(handed)
        if is_none is None:
            return None
        return is_none if negate else not is_none
    return None


_MISSING: ast.expr = ast.Constant(value=...)


def _is_none(handed: Optional[ast.expr]) -> Optional[bool]:
    """Whether the expression handed (None: the parameter's default is None) is None:
    a constant says; a name, attribute or call handed is taken for a value (a maker's
    caller hands `args.max_iters` to turn the option on)."""
    if handed is None:
        return True
    if isinstance(handed, ast.Constant):
        return handed.value is None
    if isinstance(handed, (ast.Name, ast.Attribute, ast.BinOp, ast.Call)):
        return False
    return None


def _judge_maker(walker: Walker, call: ast.Call, place: _Place) -> Optional[tuple[str, str]]:
    """A call of a function (of the file, or of another file of the run) that returns a
    batch sampler, its parameters bound to what the call hands."""
    function: Optional[ast.FunctionDef] = None
    classes = place.classes
    if isinstance(call.func, ast.Name) and call.func.id in place.top:
        function = place.top[call.func.id]
    elif walker.function_elsewhere is not None:
        qualname = walker.qualname(call.func) or ast.unparse(call.func)
        foreign = walker.function_elsewhere(qualname)
        if foreign is not None and isinstance(foreign.function, ast.FunctionDef):
            function = foreign.function
            if walker.classes_of_file is None:
                return None
            classes = walker.classes_of_file(foreign.shown)
    if function is None:
        return None
    bound = _bind(function, call)
    if bound is None:
        return None
    inner = _Place(function, classes, bound)
    results = []
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and node.value is not None:
            results.append(_judge(walker, node.value, inner, depth=1))
    if not results or all(r is None for r in results):
        return None
    name = ast.unparse(call.func)
    if all(r is not None and r[0] == SURE for r in results):
        return SURE, f"{results[0][1]} ({name}(...) builds it for this call)"  # type: ignore[index]
    why = next(r[1] for r in results if r is not None)
    return MAYBE, f"{why} ({name}(...) may build it)"


def _bind(function: ast.FunctionDef, call: ast.Call) -> Optional[dict[str, Optional[ast.expr]]]:
    """Parameter -> the expression the call hands it, or None for one left at a default
    of None; a parameter whose default is anything else is left out (not settled). None
    when the call spreads `*args` or `**kwargs`."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return None
    params = [*function.args.posonlyargs, *function.args.args]
    names = [p.arg for p in params]
    defaults = dict(
        zip(names[len(names) - len(function.args.defaults) :], function.args.defaults, strict=True)
    )
    bound: dict[str, Optional[ast.expr]] = {}
    for name, default in defaults.items():
        if isinstance(default, ast.Constant) and default.value is None:
            bound[name] = None
    for position, arg in enumerate(call.args[: len(names)]):
        bound[names[position]] = arg
    for keyword in call.keywords:
        if keyword.arg in names:
            bound[keyword.arg] = keyword.value
    return bound


def _class_of(walker: Walker, func: ast.expr, place: _Place) -> Optional[ast.ClassDef]:
    if isinstance(func, ast.Name) and func.id in place.classes:
        return place.classes[func.id]
    if place.bound is not None:
        return None  # a class another file of the maker's file imports: out of sight
    if walker.class_elsewhere is None:
        return None
    qualname = walker.qualname(func) or ""
    found = walker.class_elsewhere(qualname) if "." in qualname else None
    return found[0] if found is not None else None


def _re_reads(cls: ast.ClassDef) -> bool:
    """Whether the class's `__iter__` yields inside a `for` over one of its own attributes
    (`self.batch_sampler`) that a `while` loop runs again and again."""
    method = next(
        (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__iter__"), None
    )
    if method is None:
        return False
    for loop in ast.walk(method):
        if not isinstance(loop, ast.While):
            continue
        for inner in ast.walk(loop):
            if (
                isinstance(inner, ast.For)
                and isinstance(inner.iter, ast.Attribute)
                and isinstance(inner.iter.value, ast.Name)
                and inner.iter.value.id == "self"
                and any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(inner))
            ):
                return True
    return False


def _body(function: ast.AST) -> list[ast.stmt]:
    body = getattr(function, "body", [])
    return body if isinstance(body, list) else []
