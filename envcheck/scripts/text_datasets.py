"""Datasets built from text and a tokenizer: `load_hf_dataset(df, self.tokenizer, args)`,
`self.load_and_cache_examples(examples)` whose body hands its examples to a tokenizer.

Such a dataset yields token ids: a batch is a few KB of integers, so pinning it gains
little (EC502). It is tokenised up front (no workers needed, EC501) only when a function
returns it (`load_hf_dataset(...)`, or a method of the file handing its examples to a
`convert_examples_to_features(..., tokenizer)`-style function); a Dataset class given the
tokenizer (`SetFitDataset(x, y, tokenizer=...)`) may tokenise per sample, in the training
process. Every assignment of the loader's dataset in its function must be such a call;
one that is not (a dataset of images, a caller's dataset) leaves it undecided, and so
does a Dataset class of the file that opens images as well (DreamBooth's prompt ids with
512px `pixel_values`): its batches are images, not a few KB of ids. A loader over
`self.train_dataset` is judged by every value the methods of its class assign that
attribute (a Lightning data module's `setup()` building `TextDataset(df, self.tokenizer)`).
"""

from __future__ import annotations

import ast
from typing import Optional, Union

from envcheck.scripts.index import own_nodes

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
TOKENIZER = "tokeniz"
# calls that read an image file: a dataset making them serves pixels, whatever else it holds
IMAGE_READS = ("Image.open", "imread", "read_image", "decode_image", "load_img")


def tokenised_text(
    node: Optional[ast.expr],
    function: Optional[ast.AST],
    functions: list[Function],
    classes: Optional[list[ast.ClassDef]] = None,
) -> Optional[tuple[str, Optional[bool]]]:
    """The call that builds the dataset `node` (a name assigned in `function`) from text
    and a tokenizer, and whether such calls tokenise up front: True for all, False for
    none, None when the branches differ; None when not every assignment is one.
    `functions` are the file's, for `self.method(...)` and `helper(...)` calls whose own
    body tokenises."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    if isinstance(node, ast.Name):
        built = assigned_calls(function, node.id)
    else:
        built = _attribute_calls(node, function, classes or [])
    if any(_reads_images(call, classes or []) for call in built):
        return None
    kinds = [_tokenises(call, functions) for call in built]
    if not kinds or None in kinds:
        return None
    up_front = all(kinds) or (False if not any(kinds) else None)
    return ast.unparse(built[0]), up_front


def _attribute_calls(
    node: Optional[ast.expr], function: Function, classes: list[ast.ClassDef]
) -> list[ast.Call]:
    """Every value the methods of `function`'s class assign to `self.x` (`node`): a
    Lightning data module's `train_dataloader()` reading `self.train_dataset`, which its
    `setup()` builds; an empty list when one is not a call, or `node` no such attribute."""
    if not (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return []
    owner = next((c for c in classes if any(item is function for item in c.body)), None)
    if owner is None:
        return []
    values: list[ast.Call] = []
    for method in owner.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for statement in own_nodes(method):
            if not isinstance(statement, (ast.Assign, ast.AnnAssign)):
                continue
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if not any(
                isinstance(t, ast.Attribute)
                and t.attr == node.attr
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
                for target in targets
                for t in ast.walk(target)
            ):
                continue
            if not isinstance(statement.value, ast.Call) or not all(
                isinstance(t, ast.Attribute) for t in targets
            ):
                return []
            values.append(statement.value)
    return values


def assigned_calls(function: Function, name: str) -> list[ast.Call]:
    """Every value assigned to `name` in the function (`x = f(...)`, `x, n = f(...)`); an
    empty list when one is not a call."""
    values = _assigned_calls_by_name(function).get(name, [])
    return list(values) if values is not None else []


def _assigned_calls_by_name(function: Function) -> dict[str, Optional[list[ast.Call]]]:
    """`assigned_calls` for every name of the function (None: one value is not a call),
    listed once per function or module: N loaders on one line read the module N times."""
    cached: Optional[dict[str, Optional[list[ast.Call]]]] = function.__dict__.get(
        "_envcheck_assigned_calls"
    )
    if cached is not None:
        return cached
    cached = {}
    for statement in own_nodes(function):
        if not isinstance(statement, ast.Assign):
            continue
        names = [
            t.id
            for target in statement.targets
            for t in ([target] if isinstance(target, ast.Name) else getattr(target, "elts", []))
            if isinstance(t, ast.Name)
        ]
        for name in dict.fromkeys(names):
            calls = cached.setdefault(name, [])
            if calls is None:
                continue  # an earlier value is not a call
            if isinstance(statement.value, ast.Call):
                calls.append(statement.value)
            else:
                cached[name] = None
    setattr(function, "_envcheck_assigned_calls", cached)  # noqa: B010 - AST nodes have no slot
    return cached


def _is_function(call: ast.Call) -> bool:
    """A lower-case callee (`load_hf_dataset`, `convert_examples_to_features`) is a function
    returning processed data; a CapWords one is a Dataset class."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return bool(name) and name[0].islower()


def _reads_images(call: ast.Call, classes: list[ast.ClassDef]) -> bool:
    """`call` builds a Dataset class of the file whose code opens image files."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return any(
        cls.name == name
        and any(
            isinstance(n, ast.Call) and ast.unparse(n.func).endswith(IMAGE_READS)
            for n in ast.walk(cls)
        )
        for cls in classes
    )


def _passes_tokenizer(call: ast.Call) -> bool:
    given = [*call.args, *(k.value for k in call.keywords)]
    return any(
        isinstance(g, (ast.Name, ast.Attribute)) and TOKENIZER in ast.unparse(g).lower()
        for g in given
    )


def _tokenises(call: ast.Call, functions: list[Function]) -> Optional[bool]:
    """Whether the call tokenises up front (True) or hands a tokenizer to a Dataset class
    (False); None when it does neither. A function of the file counts when it returns
    and hands a tokenizer to a function (`self.load_and_cache_examples(...)`)."""
    if _passes_tokenizer(call):
        return _is_function(call)
    func = call.func
    name = None
    if isinstance(func, ast.Name):
        name = func.id
    elif (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
    ):
        name = func.attr
    own = [f for f in functions if f.name == name]
    if len(own) != 1:
        return None
    returns = any(isinstance(n, ast.Return) and n.value is not None for n in own_nodes(own[0]))
    converts = any(
        isinstance(n, ast.Call) and _passes_tokenizer(n) and _is_function(n)
        for n in own_nodes(own[0])
    )
    return True if returns and converts else None
