"""The training DataLoader a Hugging Face `Trainer` builds itself (`transformers.Trainer`,
`Seq2SeqTrainer`, trl's trainers, or a class of the file deriving from one), with
`TrainingArguments.dataloader_num_workers` workers, 0 by default. It is recorded (kind
"transformers.Trainer", at the `TrainingArguments(...)` call, where the setting belongs,
or at the Trainer call when its arguments come from an HfArgumentParser parse, read at
their class's defaults by hf_arguments.py) when its `train_dataset` decodes images
at every access: `ds.set_transform(fn)` or `ds.with_transform(fn)` (run on each item
read, not cached as `map` is) with an `fn` that opens, converts or augments images
(`dataset.decodes` is its text). Over another dataset (text tokenised up front) it is
recorded only where the `TrainingArguments(...)` call names `dataloader_num_workers`,
with `dataset.decodes` None: the workers it starts count against the CPUs (EC504), while
a loader serving ids from memory needs none (EC501 does not judge it). Nothing here
judges.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Optional

from envcheck.scripts.index import code_at, keyword_arg, module_nodes
from envcheck.scripts.values import Value, resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

TRAINER_ROOTS = ("transformers.", "trl.")
# TrainingArguments and the subclasses a trainer takes (trl's configs derive from it)
ARGUMENT_CLASSES = ("TrainingArguments", "Seq2SeqTrainingArguments", "Config")
IMAGE_ROOTS = ("torchvision.transforms", "PIL.", "albumentations.", "timm.data.")
IMAGE_CALLS = ("Image.open", "imread", "read_image", "decode_image")
IMAGE_PROCESSORS = ("ImageProcessor", "FeatureExtractor")


def trainer_loaders(walker: Walker) -> list[dict[str, Any]]:
    """One loader per Trainer call of the file whose training dataset decodes images."""
    trainers = _trainer_classes(walker)
    found = []
    for node in module_nodes(walker.module):
        if isinstance(node, ast.Call) and (walker.qualname(node.func) or "") in trainers:
            loader = _loader(walker, node)
            if loader is not None:
                found.append(loader)
    return found


def _trainer_classes(walker: Walker) -> set[str]:
    """Qualified names of the library trainers called, and the file's classes deriving
    from one (`class MyTrainer(Trainer)`), whose DataLoader is the library's."""
    names = set()
    for node in module_nodes(walker.module):
        if isinstance(node, ast.Call):
            name = walker.qualname(node.func) or ""
            if name.startswith(TRAINER_ROOTS) and name.endswith("Trainer"):
                names.add(name)
        if isinstance(node, ast.ClassDef) and not _builds_its_own_loader(node):
            for base in node.bases:
                name = walker.qualname(base) or ""
                if name.startswith(TRAINER_ROOTS) and name.endswith("Trainer"):
                    names.add(walker.qualname(ast.Name(id=node.name)) or node.name)
    return names


def _builds_its_own_loader(cls: ast.ClassDef) -> bool:
    """A Trainer subclass overriding `get_train_dataloader` builds the DataLoader itself,
    out of `dataloader_num_workers`' reach: its loader is judged where it is built."""
    return any(
        isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == "get_train_dataloader"
        for f in cls.body
    )


def _argument(call: ast.Call, name: str, position: int) -> Optional[ast.expr]:
    """A Trainer argument given by keyword or at its place in `Trainer(model, args,
    data_collator, train_dataset, ...)`."""
    given = keyword_arg(call, name)
    if given is None and len(call.args) > position:
        return call.args[position]
    return given


def _loader(walker: Walker, trainer: ast.Call) -> Optional[dict[str, Any]]:
    dataset = _argument(trainer, "train_dataset", 3)
    given = _argument(trainer, "args", 1)
    arguments = _arguments_call(walker, given)
    parsed = _parsed_workers(walker, given) if arguments is None else None
    if dataset is None or (arguments is None and parsed is None):
        return None
    transform = _image_transform(walker, dataset)
    if transform is None and not (
        arguments is not None and keyword_arg(arguments, "dataloader_num_workers") is not None
    ):
        return None
    args, opaque = {}, []
    for keyword in arguments.keywords if arguments is not None else []:
        if keyword.arg == "dataloader_num_workers":
            args["num_workers"] = resolve(keyword.value, walker.scope()).to_json()
        elif keyword.arg is None:
            opaque.append(ast.unparse(keyword.value))
    if parsed is not None:
        args["num_workers"] = parsed
    at = arguments if arguments is not None else trainer
    return {
        "kind": "transformers.Trainer",
        "callee": walker.qualname(at.func),
        "path": walker.report.path,
        "line": at.lineno,
        "column": at.col_offset + 1,
        "code": code_at(walker.lines, at.lineno),
        "function": None,
        "module_level": True,
        "in_main_guard": False,
        "args": args,
        "names": {"num_workers": "dataloader_num_workers"},
        "dataset": {"text": ast.unparse(dataset), "decodes": transform},
        "endless": None,
        "opaque_kwargs": opaque,
    }


def _arguments_call(walker: Walker, given: Optional[ast.expr]) -> Optional[ast.Call]:
    """The `TrainingArguments(...)` call the Trainer is handed, directly or through the
    one name it is assigned to; None where it is parsed from the command line."""
    if isinstance(given, ast.Name):
        bound = [
            n.value
            for n in module_nodes(walker.module)
            if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == given.id for t in n.targets)
        ]
        given = bound[0] if len(bound) == 1 else None
    if not isinstance(given, ast.Call):
        return None
    name = walker.qualname(given.func) or ""
    if name.startswith(TRAINER_ROOTS) and name.endswith(ARGUMENT_CLASSES):
        return given
    return None


def _parsed_workers(walker: Walker, given: Optional[ast.expr]) -> Optional[dict[str, Any]]:
    """`dataloader_num_workers` of the TrainingArguments the Trainer is handed by name when
    an HfArgumentParser parse binds it (`model_args, training_args =
    parser.parse_args_into_dataclasses()`, hf_arguments.py): the field's default in the
    class parsed (a subclass of the file may declare it again), as a run without that
    option gets it. None when the name is not known to be such an object."""
    fields = walker.module_scope.hf_arguments
    if not isinstance(given, ast.Name) or fields is None:
        return None
    found = fields.field(given.id, "dataloader_num_workers")
    if found is None:
        return None
    text = f"{given.id}.dataloader_num_workers"
    return Value(found.known, found.value, text, found.source).to_json()


def _image_transform(walker: Walker, dataset: ast.expr) -> Optional[str]:
    """`ds.set_transform(fn)` / `ds.with_transform(fn)` shaping the training dataset,
    when fn decodes or augments images: its source text, else None."""
    for call in _lazy_transforms(walker, dataset):
        function = call.args[0] if call.args else keyword_arg(call, "transform")
        if function is not None and _decodes_images(walker, function):
            return ast.unparse(call)
    return None


def _lazy_transforms(walker: Walker, dataset: ast.expr) -> list[ast.Call]:
    """The calls that set a per-access transform on the dataset: `ds.set_transform(fn)` on
    it (or on the DatasetDict it is a split of), `ds.with_transform(fn)` as the dataset
    itself or bound to its name (`train_ds = ds.with_transform(fn)`)."""
    receivers = {ast.dump(dataset)}
    if isinstance(dataset, ast.Subscript):
        receivers.add(ast.dump(dataset.value))
    name = dataset.id if isinstance(dataset, ast.Name) else None
    bound = {
        id(n.value)
        for n in module_nodes(walker.module)
        if isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
    }
    found = []
    for node in module_nodes(walker.module):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        on_it = node.func.attr == "set_transform" and ast.dump(node.func.value) in receivers
        wrapped = node.func.attr == "with_transform" and (node is dataset or id(node) in bound)
        if on_it or wrapped:
            found.append(node)
    return found


def _decodes_images(walker: Walker, function: ast.expr) -> bool:
    """A lambda or a function of the file whose body opens, converts (`im.convert("RGB")`)
    or augments images (torchvision/albumentations transforms, an image processor)."""
    if isinstance(function, ast.Lambda):
        body: ast.AST = function.body
    elif isinstance(function, ast.Name) and function.id in walker.index().functions:
        body = walker.index().functions[function.id]
    else:
        return False
    imaging = _imaging_names(walker)
    for node in ast.walk(body):
        if not isinstance(node, ast.Call):
            continue
        name = walker.qualname(node.func) or ""
        if name.startswith(IMAGE_ROOTS) or ast.unparse(node.func).endswith(IMAGE_CALLS):
            return True
        if isinstance(node.func, ast.Name) and node.func.id in imaging:
            return True
        if _pil_convert(node):
            return True
    return False


def _pil_convert(call: ast.Call) -> bool:
    """`image.convert("RGB")`: PIL decoding an image to a mode."""
    return (
        isinstance(call.func, ast.Attribute)
        and call.func.attr == "convert"
        and len(call.args) == 1
        and isinstance(call.args[0], ast.Constant)
        and call.args[0].value in ("RGB", "RGBA", "L")
    )


def _imaging_names(walker: Walker) -> set[str]:
    """Names the file binds to an image transform (`tf = Compose([...])`) or an image
    processor (`image_processor = AutoImageProcessor.from_pretrained(...)`)."""
    names: set[str] = set()
    for node in module_nodes(walker.module):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        name = walker.qualname(node.value.func) or ""
        if name.startswith(IMAGE_ROOTS) or (
            name.startswith("transformers.") and any(p in name for p in IMAGE_PROCESSORS)
        ):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names
