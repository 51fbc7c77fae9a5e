"""Whether a statement or call runs in a default run: the `if` branches around it read
at the values a run without options gets (argparse defaults, a parameter's callers or
its default). Shared by the loader reader (a DataLoader built only under `if
args.naflex_loader:` is not the run's) and the file-level settings (`if args.test_only:
torch.backends.cudnn.benchmark = False` does not undo the training run's True)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional, Union

from envcheck.scripts.parameters import handed_value
from envcheck.scripts.values import Value, resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker


def off_by_default(
    walker: Walker, node: Union[ast.stmt, ast.expr], choices_taken: bool = False
) -> bool:
    """The statement or call sits in a branch a default run does not take (`if args.naflex_loader:`,
    a flag off by default, or its `else` when the test is settled true).

    `choices_taken`: a branch picked by comparing a value with a string (`if args.dataset
    == 'cifar10':` ... `elif args.dataset == 'imagenet':`, `args.arch.startswith('vit')`)
    counts as taken, either way: its alternatives are configurations of the same script
    that a run chooses on its command line, not a feature left off, so the loaders
    each builds are judged (lightning-bolts SimCLR's stl10 and imagenet branches, CutMix's
    cifar branches); a flag (`if load_targets:`) still decides."""
    where: ast.AST = walker.functions[-1] if walker.functions else walker.module
    for branch in _branches(where):
        in_body = any(_inside(node, s) for s in branch.body)
        in_else = any(_inside(node, s) for s in branch.orelse)
        if not (in_body or in_else):
            continue
        if choices_taken and _choice(branch.test):
            continue
        if in_body and _trains(branch):
            continue  # `if args.do_train:` holding the training loop: the script's mode
        taken = _branch_test(walker, branch.test)
        if taken.known and bool(taken.value) != in_body:
            return True
    return False


def _trains(branch: ast.If) -> bool:
    """The branch's body holds a training loop: a `for`/`while` whose body calls
    `.backward()` (`if args.do_train: ... for step, batch in enumerate(train_dataloader):
    ... loss.backward()`). Such a flag (do_train, do_eval, do_predict) picks a mode the
    script exists for, not a feature left off: what the mode builds is judged, as the loop
    in it is (torch_loops.py reads the loop whatever the `if` around it)."""
    cached: Optional[bool] = branch.__dict__.get("_envcheck_trains")
    if cached is None:
        cached = any(
            isinstance(loop, (ast.For, ast.While))
            and any(
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "backward"
                for call in ast.walk(loop)
            )
            for statement in branch.body
            for loop in ast.walk(statement)
        )
        setattr(branch, "_envcheck_trains", cached)  # noqa: B010 - AST nodes have no slot
    return cached


def _choice(test: ast.expr) -> bool:
    """`x == 'cifar10'`, `x in ('a', 'b')`, `x != 'imagenet'`, `x.startswith('vit')`: a
    test of which named configuration a run chose."""
    if isinstance(test, ast.Compare):
        named = [test.left, *test.comparators]
        return all(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in test.ops) and (
            any(_strings(side) for side in named)
        )
    return (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Attribute)
        and test.func.attr in ("startswith", "endswith")
        and len(test.args) == 1
        and _strings(test.args[0])
    )


def _strings(node: ast.expr) -> bool:
    """A name written out, or a list, tuple or set of them; not the empty string, whose
    test (`if args.save_test_dir != '':`) asks whether an option is set, a flag."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return bool(node.elts) and all(_strings(e) for e in node.elts)
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value != ""


def _branches(where: ast.AST) -> list[ast.If]:
    """The `if` statements under `where` in `ast.walk` order, listed once per scope: each
    call and statement asks, and walking the scope anew for each made a file of N
    loaders take N² time."""
    cached: Optional[list[ast.If]] = where.__dict__.get("_envcheck_branches")
    if cached is None:
        cached = [n for n in ast.walk(where) if isinstance(n, ast.If)]
        setattr(where, "_envcheck_branches", cached)  # noqa: B010 - AST nodes have no slot
    return cached


def _branch_test(walker: Walker, test: ast.expr) -> Value:
    """An `if` test's value in a default run: `if load_train_targets:` (or `if not ...`)
    on a parameter of the enclosing function or method reads its callers' value or its
    default."""
    found = resolve(test, walker.scope())
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    name = test.operand if negated else test  # type: ignore[attr-defined]
    if found.known or not isinstance(name, ast.Name):
        return found
    handed = handed_value(walker, walker.functions[-1] if walker.functions else None, name)
    if handed is None or not handed.known:
        return found
    return Value(True, (not handed.value) if negated else handed.value, found.text, handed.source)


def _inside(node: Union[ast.stmt, ast.expr], statement: ast.stmt) -> bool:
    end = statement.end_lineno or statement.lineno
    return statement.lineno <= node.lineno <= end
