"""Hugging Face datasets tokenised up front: `DataLoader(tokenized["train"])` where
`tokenized = raw.map(tokenize_function, batched=True)`, or where the map function has
another name but calls a tokenizer (`self.convert_to_features`, a lambda over a module's
`tok = AutoTokenizer.from_pretrained(...)`), the dataset kept on the object
(`self.dataset[split] = ...map(...)`) or handed to a loader helper by every call of it.
Such a dataset serves token ids from memory: batches of a few KB (EC501/EC502).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from envcheck.scripts.index import calls_of, keyword_arg, module_nodes

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

TOKENISING = ("tokeniz", "tokenis")


def tokenised_by_callers(walker: Walker, node: Optional[ast.expr]) -> Optional[str]:
    """`def get_data_loader(dataset, ...)` called with `train_data`, `valid_data`,
    `test_data`: a parameter every call of the file fills with text tokenised up front."""
    function = walker.functions[-1] if walker.functions else None
    if not isinstance(node, ast.Name) or not isinstance(function, ast.FunctionDef):
        return None
    positional = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    if node.id not in positional:
        return None
    index = positional.index(node.id)
    found: Optional[str] = None
    for caller, call in calls_of(walker.module, walker.index().function_nodes, function.name):
        if isinstance(call.func, ast.Name):
            given = call.args[index] if index < len(call.args) else keyword_arg(call, node.id)
            where = caller if caller is not None else walker.module
            tokenised = tokenised_map(walker, given, where)
            if tokenised is None:
                return None
            found = found or tokenised
    return found


def _mentions_tokenising(walker: Walker) -> bool:
    """Whether any line of the file mentions tokenising, read once per file: asked for
    every loader, scanning the file each time made N loaders take N² time."""
    found: Optional[bool] = walker.__dict__.get("_envcheck_tokenising")
    if found is None:
        found = any(word in line.lower() for line in walker.lines for word in TOKENISING)
        walker.__dict__["_envcheck_tokenising"] = found
    return found


def tokenised_map(
    walker: Walker, node: Optional[ast.expr], where: Optional[ast.AST] = None
) -> Optional[str]:
    """`DataLoader(tokenized["train"])` where `tokenized = raw.map(tokenize_function,
    ...)`: a text dataset tokenised up front (Hugging Face datasets keep it in memory as
    token ids). The map call's text, or None."""
    while isinstance(node, ast.Subscript):
        node = node.value
    own = (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )
    if node is None or not (isinstance(node, ast.Name) or own) or not _mentions_tokenising(walker):
        return None
    # `self.dataset[split] = self.dataset[split].map(...)` in setup(): the object's, read
    # in the whole file; a plain name, in the loader's function
    if where is None:
        where = walker.module if own or not walker.functions else walker.functions[-1]
    names: list[str] = [ast.unparse(node)]
    seen: set[str] = set()
    while names:
        name = names.pop()
        if name in seen or len(seen) > 8:
            continue
        seen.add(name)
        for statement in module_nodes(where):
            if not (
                isinstance(statement, ast.Assign)
                and any(_stored_name(t) == name for t in statement.targets)
            ):
                continue
            for inner in ast.walk(statement.value):
                if isinstance(inner, ast.Name):
                    names.append(inner.id)
                if (
                    isinstance(inner, ast.Call)
                    and isinstance(inner.func, ast.Attribute)
                    and inner.func.attr == "map"
                    and inner.args
                    and _tokenises(walker, inner.args[0])
                ):
                    return ast.unparse(inner.func) + f"({ast.unparse(inner.args[0])}, ...)"
    return None


def _stored_name(target: ast.expr) -> Optional[str]:
    """`x` for `x = ...` and `x[k] = ...`; `self.data` for `self.data[split] = ...`."""
    while isinstance(target, ast.Subscript):
        target = target.value
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return ast.unparse(target) if target.value.id == "self" else None
    return None


def _tokenises(walker: Walker, function: ast.expr) -> bool:
    """A map function that tokenises: named so, or a function of the file (or a lambda)
    calling a tokenizer (`self.tokenizer(...)`, `tok(...)` with `tok =
    AutoTokenizer.from_pretrained(...)`)."""
    text = ast.unparse(function).lower()
    if any(word in text for word in TOKENISING):
        return True
    body: Optional[ast.AST] = function if isinstance(function, ast.Lambda) else None
    if isinstance(function, ast.Name):
        body = walker.index().functions.get(function.id)
    elif isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
        body = walker.index().functions.get(function.attr) if function.value.id == "self" else None
    if body is None:
        return False
    return any(isinstance(n, ast.Call) and _tokenizer_call(walker, n.func) for n in ast.walk(body))


def _tokenizer_call(walker: Walker, func: ast.expr) -> bool:
    """`self.tokenizer(...)`, `tokenizer.batch_encode_plus(...)`, or a name the module
    binds to a tokenizer (`tok = AutoTokenizer.from_pretrained(...)`)."""
    if any(word in ast.unparse(func).lower() for word in TOKENISING):
        return True
    if isinstance(func, ast.Name):
        bound = walker.module_scope.lookup(func.id)
        return bound is not None and any(word in ast.unparse(bound).lower() for word in TOKENISING)
    return False
