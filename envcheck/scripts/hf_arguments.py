"""Settings of a Hugging Face `TrainingArguments` object read in the script's own loops.

A script with its own DataLoaders often takes their settings from the `TrainingArguments`
the command line gives (`model_args, data_args, training_args = HfArgumentParser((
ModelArguments, DataTrainingArguments, TrainingArguments)).parse_args_into_dataclasses()`,
then `DataLoader(ds, num_workers=training_args.dataloader_num_workers)`). Those fields are
dataclass fields of transformers, with the defaults its reference documents
(https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments:
`dataloader_num_workers` "defaults to 0", `dataloader_pin_memory` "defaults to True",
`dataloader_persistent_workers` "defaults to False", `dataloader_drop_last` "defaults to
False"): a default run of the script gets them, as it gets argparse defaults.

A name is read so only when every binding of it in the file is such an object: unpacked
from an `HfArgumentParser`'s parse at the position of a TrainingArguments class
(`parse_args_into_dataclasses`, and `parse_json_file` / `parse_yaml_file` / `parse_dict`,
whose files leave unset fields at their defaults too), or built by a call of one
(`TrainingArguments(output_dir=..., dataloader_num_workers=4)`: a constant keyword is that
value, another expression or `**kwargs` leaves it unknown). The class is
transformers' `TrainingArguments` or `Seq2SeqTrainingArguments`, or a subclass of one the
file, or a file of the run it imports it from (run_options.py), defines: a field the
subclass declares again gives its own default (a constant), else the library's. Other
libraries' subclasses (trl's configs) may change defaults and are not read.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

from envcheck.scripts.index import module_nodes
from envcheck.scripts.module_constants import module_aliases

LIBRARY_CLASSES = (
    "transformers.TrainingArguments",
    "transformers.Seq2SeqTrainingArguments",
    "transformers.training_args.TrainingArguments",
    "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
)
PARSERS = ("transformers.HfArgumentParser", "transformers.hf_argparser.HfArgumentParser")
PARSES = ("parse_args_into_dataclasses", "parse_json_file", "parse_yaml_file", "parse_dict")
# TrainingArguments' DataLoader fields and their documented defaults (see above)
DEFAULTS: dict[str, Any] = {
    "dataloader_num_workers": 0,
    "dataloader_pin_memory": True,
    "dataloader_persistent_workers": False,
    "dataloader_drop_last": False,
}
MAX_BASES = 4  # subclasses of subclasses followed

# a class name the file imports -> (its definition, the defining file's aliases), found
# in the file of the run that defines it (run_options.RunOptions.class_definition)
ClassElsewhere = Callable[[str], Optional[tuple[ast.ClassDef, dict[str, str]]]]


@dataclass(frozen=True)
class Field:
    """What `name.attr` reads: known (value), or not (why), and where from."""

    known: bool
    value: Any
    source: str


class HfArguments:
    """The file's names bound to TrainingArguments objects, read once when first asked."""

    def __init__(self, module: ast.Module) -> None:
        self.module = module
        self.elsewhere: Optional[ClassElsewhere] = None
        self._bound: Optional[dict[str, tuple[ast.expr, Optional[ast.Call]]]] = None

    def field(self, name: str, attr: str) -> Optional[Field]:
        """`name.attr` for a DataLoader field of TrainingArguments, or None when `name`
        is not (only) a TrainingArguments object or `attr` is no such field."""
        if attr not in DEFAULTS:
            return None
        if self._bound is None:
            self._bound = _bound_names(self.module)
        bound = self._bound.get(name)
        if bound is None:
            return None
        cls, call = bound
        aliases = module_aliases(self.module)
        declared = _class_field(cls, attr, aliases, self._classes(), self.elsewhere, 0)
        if declared is None:
            return None
        if call is not None:
            if any(k.arg is None for k in call.keywords):
                return Field(False, None, f"{ast.unparse(call.func)}(**...) may set {attr}")
            given = next((k.value for k in call.keywords if k.arg == attr), None)
            if given is not None:
                if isinstance(given, ast.Constant):
                    return Field(True, given.value, f"{attr}={given.value!r} given")
                return Field(False, None, f"{attr}={ast.unparse(given)}")
        return declared

    def _classes(self) -> dict[str, ast.ClassDef]:
        return {n.name: n for n in self.module.body if isinstance(n, ast.ClassDef)}


def _bound_names(module: ast.Module) -> dict[str, tuple[ast.expr, Optional[ast.Call]]]:
    """name -> (the class expression, the constructing call or None for a parse) for the
    names every assignment of the file binds to a TrainingArguments-like object: an
    HfArgumentParser's parse unpacked, or a direct construction. Which class is
    TrainingArguments is decided when a field is read."""
    aliases = module_aliases(module)
    parsers: dict[str, list[ast.expr]] = {}
    for node in module_nodes(module):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and _qualified(node.value.func, aliases) in PARSERS
            and node.value.args
        ):
            classes = node.value.args[0]
            listed = classes.elts if isinstance(classes, (ast.Tuple, ast.List)) else [classes]
            for target in node.targets:
                if isinstance(target, ast.Name):
                    parsers.setdefault(target.id, []).append(ast.Tuple(listed, ast.Load()))
    found: dict[str, list[tuple[ast.expr, Optional[ast.Call]]]] = {}
    others: set[str] = set()
    for node in module_nodes(module):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets: list[ast.expr] = (
                list(node.targets) if isinstance(node, ast.Assign) else [node.target]
            )
            for name, bound in _bindings(targets, node.value, parsers):
                if bound is None:
                    others.add(name)
                else:
                    found.setdefault(name, []).append(bound)
        elif isinstance(node, (ast.For, ast.With, ast.NamedExpr)):
            others.update(_stored(node))
    result = {}
    for name, bindings in found.items():
        if name not in others and len({ast.dump(c) for c, _ in bindings}) == 1:
            constructions = [call for _, call in bindings]
            if all(call is None for call in constructions) or len(constructions) == 1:
                result[name] = bindings[0]
    return result


def _bindings(
    targets: list[ast.expr], value: Optional[ast.expr], parsers: dict[str, list[ast.expr]]
) -> list[tuple[str, Optional[tuple[ast.expr, Optional[ast.Call]]]]]:
    """(name, (class, construction) or None) for each name an assignment binds."""
    found: list[tuple[str, Optional[tuple[ast.expr, Optional[ast.Call]]]]] = []
    parsed = _parsed_classes(value, parsers)
    for target in targets:
        if isinstance(target, ast.Name):
            if isinstance(value, ast.Call) and parsed is None:
                found.append((target.id, (value.func, value)))
            else:
                found.append((target.id, None))
        elif isinstance(target, (ast.Tuple, ast.List)):
            starred = any(isinstance(e, ast.Starred) for e in target.elts)
            for position, element in enumerate(target.elts):
                names = [n.id for n in ast.walk(element) if isinstance(n, ast.Name)]
                if (
                    parsed is not None
                    and not starred
                    and isinstance(element, ast.Name)
                    and position < len(parsed)
                ):
                    found.append((element.id, (parsed[position], None)))
                else:
                    found += [(n, None) for n in names]
    return found


def _parsed_classes(
    value: Optional[ast.expr], parsers: dict[str, list[ast.expr]]
) -> Optional[list[ast.expr]]:
    """The dataclasses `parser.parse_args_into_dataclasses()` returns, in order, when
    `parser` is bound to one HfArgumentParser call."""
    if not (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in PARSES
        and isinstance(value.func.value, ast.Name)
    ):
        return None
    built = parsers.get(value.func.value.id, [])
    if len({ast.dump(b) for b in built}) != 1:
        return None
    listed = built[0]
    return list(listed.elts) if isinstance(listed, ast.Tuple) else None


def _stored(node: ast.AST) -> set[str]:
    """Names a `for`, `with ... as` or `:=` binds."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.For):
        targets = [node.target]
    elif isinstance(node, ast.With):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    elif isinstance(node, ast.NamedExpr):
        targets = [node.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _class_field(
    cls: ast.expr,
    attr: str,
    aliases: dict[str, str],
    classes: dict[str, ast.ClassDef],
    elsewhere: Optional[ClassElsewhere],
    depth: int,
) -> Optional[Field]:
    """The default of `attr` in the class `cls` names when it is TrainingArguments or a
    subclass of it (see the module's docstring); None when it is not known to be."""
    name = _qualified(cls, aliases)
    if name in LIBRARY_CLASSES:
        short = name.rpartition(".")[2]
        return Field(True, DEFAULTS[attr], f"transformers {short}.{attr} default")
    if depth >= MAX_BASES or not isinstance(cls, ast.Name):
        return None
    definition: Optional[ast.ClassDef] = classes.get(cls.id)
    there_aliases, there_classes = aliases, classes
    if definition is None and elsewhere is not None and cls.id in aliases:
        found = elsewhere(aliases[cls.id])
        if found is None:
            return None
        definition, there_aliases = found
        there_classes = {}
    if definition is None:
        return None
    for statement in definition.body:
        target: Optional[ast.expr] = (
            statement.target if isinstance(statement, ast.AnnAssign) else None
        )
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
        if isinstance(target, ast.Name) and target.id == attr:
            return _declared(definition.name, attr, getattr(statement, "value", None))
    inherited = [
        _class_field(base, attr, there_aliases, there_classes, elsewhere, depth + 1)
        for base in definition.bases
    ]
    known = [f for f in inherited if f is not None]
    if not known:
        return None
    return Field(known[0].known, known[0].value, f"{known[0].source} ({definition.name})")


def _declared(cls: str, attr: str, value: Optional[ast.expr]) -> Field:
    """A field a subclass declares again: its constant default, else unknown."""
    if isinstance(value, ast.Call) and ast.unparse(value.func).endswith("field"):
        value = next((k.value for k in value.keywords if k.arg == "default"), None)
    if isinstance(value, ast.Constant):
        return Field(True, value.value, f"{cls}.{attr} = {value.value!r}")
    shown = ast.unparse(value) if value is not None else "no default"
    return Field(False, None, f"{cls}.{attr}: {shown}")


def _qualified(node: ast.expr, aliases: dict[str, str]) -> str:
    """`HfArgumentParser` with `from transformers import HfArgumentParser` -> its dotted
    name."""
    head, _, rest = ast.unparse(node).partition(".")
    return aliases.get(head, head) + (f".{rest}" if rest else "")
