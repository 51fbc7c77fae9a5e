"""PyTorch rules on training scripts, from `--script` observations: DataLoader settings
(EC501-EC505) and what the training-step loop does every step (EC509, EC510).

Each finding points at the file, line and column of the call and quotes it. A value
the source does not determine (a command-line option without a default, a config
object) makes the rule *unknown* for that loader, never a guess.

Size: seven rules whose docstrings are their reference documentation; one family stays in
one module.
"""

from __future__ import annotations

import ast
import contextlib
import re
from typing import Any, Callable, Optional, Union

from envcheck.checks.facts_helpers import (
    Clear,
    Verdict,
    linked_files,
    outcome_over,
    requested_section,
)
from envcheck.checks.gpu_facts import devices
from envcheck.checks.script_facts import trains_on_gpu
from envcheck.engine.python_rules import check
from envcheck.engine.rule import Hit, Outcome
from envcheck.model import Location, Severity
from envcheck.scripts.cpu_expressions import GPU_COUNT
from envcheck.scripts.cpu_expressions import evaluate as evaluate_over_cpus
from envcheck.scripts.values import CPU_COUNT, GPU_RUN
from envcheck.snapshot import Facts, Missing

TUNING_GUIDE = "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html"
PYTORCH_DATALOADER_DOCS = (
    "https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader (num_workers: "
    "'0 means that the data will be loaded in the main process. (default: 0)')"
)

HF_TRAINING_ARGUMENTS_DOCS = (
    "https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments"
    " (dataloader_num_workers, defaults to 0: 'Number of subprocesses to use for data loading "
    "(PyTorch only). 0 means that the data will be loaded in the main process.')"
)
# the training loader a Hugging Face Trainer builds itself (scripts/hf_trainers.py)
HF_TRAINER = "transformers.Trainer"


def scripts_section(facts: Facts) -> Union[dict[str, Any], Outcome]:
    """The `scripts` section, or the Outcome when absent: skipped without --script."""
    return requested_section(facts, "scripts", "--script PATH")


LoaderTest = Callable[[dict[str, Any], dict[str, Any]], Verdict]


def per_loader(
    facts: Facts, test: LoaderTest, none_found: str, kinds: tuple[str, ...] = ("torch.DataLoader",)
) -> Outcome:
    """Run `test(loader, file_facts)` on every DataLoader of `kinds`: Hit fails, str is
    unknown, Clear passes with its own reason."""
    section = scripts_section(facts)
    if isinstance(section, Outcome):
        return section
    loaders = [x for x in section.get("loaders") or [] if x.get("kind") in kinds]
    files = section.get("file_facts") or []
    # training loops over loaders another module builds: their settings are not in sight
    elsewhere = [
        f"{f.get('path')}: the training loop iterates {', '.join(f['loaders_elsewhere'])}, "
        "built out of this file: its DataLoader settings are not known"
        for f in files
        if f.get("loaders_elsewhere") and not any(x.get("path") == f.get("path") for x in loaders)
    ]
    if not loaders:
        if elsewhere:
            return Outcome.unknown("; ".join(elsewhere))
        return Outcome.passed("no torch DataLoader in the audited scripts")
    by_path = {f.get("path"): f for f in files}
    outcome = outcome_over(
        loaders,
        lambda loader: (
            Clear(f"{loader.get('code')}: {loader.get('unused') or loader['self_test']}")
            if loader.get("unused") or loader.get("self_test")
            else _contained(test, loader, by_path.get(loader.get("path"), {}))
        ),
        where,
        none_found,
        "DataLoader(s)",
    )
    if outcome.status.value == "pass" and elsewhere:
        return Outcome.unknown("; ".join(elsewhere))
    return outcome


def _contained(test: LoaderTest, loader: dict[str, Any], file_facts: dict[str, Any]) -> Verdict:
    """One loader's verdict; a failure of the rule on one loader (facts of a shape it did
    not expect) makes that loader unknown, saying why, not the whole run's."""
    try:
        return test(loader, file_facts)
    except Exception as exc:
        return f"the rule could not judge this loader ({type(exc).__name__}: {exc})"


# A loader returned by these is consumed by Lightning, which copies each batch to the
# trainer's device itself (non_blocking on CUDA): the target machine decides.


def where(loader: dict[str, Any]) -> str:
    return f"{loader.get('path')}:{loader.get('line')}"


def argument(loader: dict[str, Any], name: str, default: Any) -> tuple[bool, Any, str]:
    """(known, value, how) of a DataLoader argument; absent means its documented default,
    unless a `**kwargs` that could not be expanded may carry it."""
    arg = (loader.get("args") or {}).get(name)
    name = (loader.get("names") or {}).get(name, name)  # `dataloader_num_workers`
    if arg is None and loader.get("built_by"):
        return False, None, f"{name} is left to {loader['built_by']}"
    if arg is None:
        if loader.get("opaque_kwargs"):
            opaque = ", ".join(f"**{o}" for o in loader["opaque_kwargs"])
            return False, None, f"{name} may be set through {opaque}"
        how = f"{name} not given (default {default!r})"
        if loader.get("caller_kwargs"):
            # the function's own **kwargs, which no call in the run fills: the
            # library's value is judged at DataLoader's default
            forwarded = ", ".join(f"**{o}" for o in loader["caller_kwargs"])
            how += f" unless the caller passes it through {forwarded}"
        return True, default, how
    how = f"{name}={arg.get('text')}"
    if arg.get("source") not in ("literal", None):
        how += f" ({arg.get('source')})"
    elif arg.get("known") and str(arg.get("text")) != repr(arg.get("value")):
        how += f" (= {arg.get('value')!r})"  # `num_workers=num_workers`, assigned 4
    if loader.get("built_by"):
        how += f", handed to {loader['built_by']}"
    if not arg.get("known"):
        return False, None, f"{how}: value not determined from the source"
    return True, arg.get("value"), how


def workers_on_target(loader: dict[str, Any], facts: Facts) -> tuple[bool, Any, str]:
    """`argument(loader, "num_workers", 0)`, with a count written over the CPU count
    (`multiprocessing.cpu_count() // 2`) evaluated on the training machine's logical CPUs
    (the --target snapshot's), where os.cpu_count() will be called."""
    known, value, how = argument(loader, "num_workers", 0)
    if known and value is None:
        # DataLoader(num_workers=None) raises: the None is a placeholder the run's
        # configuration fills (a config dataclass field loaded from YAML)
        return False, None, f"{how}: a placeholder (DataLoader rejects None), set at run time"
    if known and isinstance(value, str) and value[:1] in "[(" and len(value) < 200:
        with contextlib.suppress(ValueError, SyntaxError, MemoryError, RecursionError):
            value = ast.literal_eval(value)  # a list the facts carry as its text
    if known and isinstance(value, (list, tuple)) and value:
        # a loader maker's one count per loader (BLIP's `create_loader(...,
        # num_workers=[4, 4, 4])`): each loader asks for its own, the largest decides
        counts = [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
        if len(counts) == len(value):
            return True, max(counts), f"{how}: one per loader, at most {max(counts)}"
    if known and not (
        (isinstance(value, int) and not isinstance(value, bool)) or value == CPU_COUNT
    ):
        return False, None, f"{how}: {value!r} is no worker count this audit can judge"
    arg = (loader.get("args") or {}).get("num_workers") or {}
    expression = arg.get("value")
    logical = facts.lookup("cpu.logical")
    if known or not isinstance(expression, str) or not isinstance(logical, int):
        return known, value, how
    found = devices(facts)
    gpus = len(found) if isinstance(found, list) else None
    count = evaluate_over_cpus(expression, logical, gpus)
    if count is None:
        return known, value, how
    how = how.removesuffix(": value not determined from the source")
    written = expression[1:-1] if expression.startswith("(") else expression
    machine = f"{logical} CPUs" + (f" and {gpus} GPUs" if GPU_COUNT in expression else "")
    return True, count, f"{how}: {written} = {count} with the training machine's {machine}"


def loader_hit(loader: dict[str, Any], **values: Any) -> Hit:
    return Hit(
        values={"where": where(loader), "code": loader.get("code"), **values},
        evidence={
            "facts": {
                "loader": {
                    k: loader.get(k)
                    for k in ("path", "line", "column", "code", "args", "opaque_kwargs", "function")
                }
            }
        },
        location=Location(
            str(loader.get("path")), loader.get("line"), loader.get("column"), loader.get("code")
        ),
    )


def in_memory_dataset(loader: dict[str, Any]) -> Optional[str]:
    """Why the loader's dataset is already in memory ("the dataset is a TensorDataset"), or
    None when it is not known to be."""
    dataset = loader.get("dataset") or {}
    if dataset.get("class") == "TensorDataset":
        return f"the dataset is a TensorDataset ({dataset.get('text')})"
    if dataset.get("class") == "pre-tokenised":
        return f"the dataset is text tokenised up front ({dataset.get('text')})"
    if dataset.get("class") == "tokenised-text" and dataset.get("up_front"):
        return f"the dataset is text tokenised up front ({dataset.get('text')})"
    if dataset.get("in_memory"):
        return f"the dataset is in memory: {dataset['in_memory']}"
    return None


def raw_records(loader: dict[str, Any]) -> Optional[str]:
    """Why the loader's batches are raw records the loop turns into tensors itself
    (`collate_fn=list` over a dataset out of sight: prompt records tokenised in the loop),
    or None. A dataset in sight (a Dataset class decoding images, a torchvision one) is
    judged on what it does per item."""
    raw = loader.get("raw_items")
    if not raw or loader.get("dataset"):
        return None
    return (
        f"{raw} hands the loop each batch of the dataset's items as they are, a Python "
        "list it takes apart itself"
    )


def gpu_run_settings_on_the_cpu(
    loader: dict[str, Any], facts: Facts, file_facts: dict[str, Any]
) -> Optional[str]:
    """Why the loader's worker count is not the run's, or None: it comes from settings
    only a GPU run gets (`**kwargs` with `kwargs = {'num_workers': 1} if use_cuda else
    {}`), and the file trains on the CPU."""
    source = str(((loader.get("args") or {}).get("num_workers") or {}).get("source") or "")
    if GPU_RUN not in source:
        return None
    gpu = trains_on_gpu(facts, file_facts)
    if gpu.trains is not False:
        return None
    return f"the file trains on the CPU ({gpu.reason}), which does not get those settings"


def data_module(file_facts: dict[str, Any]) -> Optional[str]:
    """Why the file is a data module whose consumer is out of sight (it neither trains
    nor chooses a device), or None. A device the file only passes on (the `device`
    argument of Lightning's `transfer_batch_to_device` hook handed to `super()`) is
    chosen by the consumer, so it does not make the file a GPU trainer."""
    gpu = file_facts.get("gpu")
    if (
        file_facts.get("trains") is False
        and isinstance(gpu, dict)
        and gpu.get("trains") == "unknown"
    ):
        if gpu.get("line"):
            return (
                f"a data module (the file does not train, and the device it uses is "
                f"handed in: {gpu.get('reason')}): whether its batches are copied to a "
                "GPU, and how, is decided by the code that imports it"
            )
        return (
            "a data module (the file neither trains nor names a device): whether its "
            "batches are copied to a GPU, and how, is decided by the code that imports it"
        )
    return None


# A dataset class named for images (a project's `ImageNet`, `CocoDetection`, `ImageDataset`)
IMAGE_DATASET_NAME = re.compile(r"Image|CIFAR|Cifar|COCO|Coco|VOC|CelebA|Cityscapes")


def _image_dataset(loader: dict[str, Any]) -> bool:
    """A torchvision dataset (`ImageFolder`, `CIFAR10`): images decoded and transformed
    per item into batches of megabytes, which pinning speeds to the GPU. A data module's
    other datasets (token ids, rows of a table held in memory) may be a few KB a batch."""
    dataset = loader.get("dataset") or {}
    if str(dataset.get("qualname") or "").startswith("torchvision.datasets."):
        return True
    return bool(IMAGE_DATASET_NAME.search(str(dataset.get("class") or "")))


def _gpu_importer(facts: Facts, file_facts: dict[str, Any]) -> Optional[str]:
    """A file of the run linked to this data module by an import that trains on a GPU
    itself (a Lightning Trainer on accelerator="gpu" fitting the module): where its
    batches go is in sight after all. An entry point read as context that imports it
    and trains on a GPU counts too (`gpu_importer`: tools/train.py importing the
    data/build.py named). None when no such file is in sight."""
    if file_facts.get("gpu_importer"):
        return str(file_facts["gpu_importer"])
    section = scripts_section(facts)
    if isinstance(section, Outcome):
        return None
    run = section.get("file_facts") or []
    for other in linked_files(file_facts, run):
        gpu = other.get("gpu")
        if other.get("trains") and isinstance(gpu, dict) and gpu.get("trains") == "yes":
            return str(other.get("path"))
    return None


def suggested_workers(facts: Facts) -> str:
    """A worker count for the fix: one less than the usable CPUs (Lightning's heuristic),
    or the expression that computes it where the count is unknown."""
    usable = facts.lookup("cpu.usable")
    if isinstance(usable, int) and usable > 0:
        return str(max(1, usable - 1))
    return "max(1, len(os.sched_getaffinity(0)) - 1)"


@check(
    id="EC501",
    name="dataloader-without-workers",
    severity=Severity.HIGH,
    category="scripts",
    summary="A DataLoader loads batches in the training process (num_workers=0)",
    message="{where}: {how}: every batch is read, decoded and collated in the training "
    "process, one at a time, while the GPU waits — `{code}`",
    fix="{fix}",
    evidence=(
        PYTORCH_DATALOADER_DOCS,
        HF_TRAINING_ARGUMENTS_DOCS,
        "https://github.com/open-edge-platform/geti/pull/5958 (GPU idle 70-92 % waiting "
        "for data; 3 -> 13 it/s after raising num_workers)",
        "Lightning's own check: warn when num_workers < 2 and max(1, cpus // world_size - 1) "
        "> 1 (lightning/pytorch/trainer/connectors/data_connector.py)",
    ),
)
def dataloader_without_workers(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** `DataLoader(dataset, batch_size=...)` without `num_workers`, or
    with `num_workers=0` (the default), in a script that trains on a GPU. Every batch is
    then produced in the training process itself: files read, images decoded and
    augmented, samples collated, while the GPU idles. In open-edge-platform/geti#5958 the
    GPU sat idle 70-92 % of the time, and more workers took training from 3 to 13 it/s.

    Whether the script trains on a GPU is the answer every script rule shares: from the
    code (a CUDA device reaching the model or data, Accelerate, Lightning, DDP), else
    from the training machine (`--target`, `[target]`, or the machine `doctor` runs on);
    when neither tells, the rule is unknown. A GPU behind a command-line flag counts
    (`'cuda' if args.cuda else 'cpu'`); a test fixed in code does not (`conf = Config()`,
    built with no arguments, whose `no_cuda` defaults to True: the run is on the CPU).
    A loader over an in-memory `TensorDataset`, text tokenised up front
    (`DataLoader(tokenized["train"])` after `raw.map(tokenize_function)`) or a Dataset class of the
    file (or of a file of the same run it is imported from) whose `__getitem__` only indexes data it
    holds (`return self.centers[i], self.contexts[i]`, numpy's shuffles and random shifts of
    the sample included, directly or in a function of its file; not one that memory-maps its
    data or reads a file per item) or is
    memoised without bound (`@functools.cache`: each sample stays in the training process, a cache
    worker processes would discard every epoch; so is a helper's loader over the caller's dataset
    when every Dataset class of the file without a loader of its own is memoised), or a
    class out of sight handed one file `torch.save` wrote and otherwise only numbers
    (`ExpertDataset("trajs_halfcheetah.pt", num_trajectories=4)`: torch.load reads it
    whole), or a
    public one known to hold its data in memory (Lightning's demo `WikiText2`, one tensor of token
    ids; also the parts `random_split` makes of it; Lit-GPT's `PackedDataset`/`CombinedDataset` of
    pre-tokenised token shards), is not flagged: its batches come from memory, and workers add
    little (the probe measures whether a loader keeps up); nor is a loader built to read
    a single batch, `next(iter(DataLoader(...)))`, or a list of one item written in the call
    (`test_dl([item], num_workers=0)` in a `predict(item)`), or a few (a local loader whose one
    loop stops itself: `if ii == 1: break`, a preview), nor one whose batches stay on the
    CPU (one loop that only reduces them with torch/numpy functions and tensor methods:
    the normalisation statistics computed before training), nor one of an inference method
    that nothing in the file calls (a library class that trains in `fit()` and offers
    `evaluate()` or `embed()`, building a loader over the caller's data and reading it
    under `torch.no_grad()` only): no part of the training the file runs; nor one of a
    data module's `if __name__ == "__main__":` self-test (a file that never trains, whose
    one loop over the loader only prints what it reads). DGL's
    `dgl.dataloading.DataLoader(..., use_uva=True)` samples on the GPU and requires
    `num_workers=0` (DGL raises "num_workers must be 0 if UVA sampling is enabled"): not
    flagged, and unknown when `use_uva` is not settled by the source. MONAI's and PyG's
    DataLoader (`monai.data.DataLoader`, `torch_geometric.loader.DataLoader`) are torch's
    with the same defaults, read with their own positional parameters
    (`monai.data.DataLoader(ds, 4)` has 4 workers). Values are
    read on the path a Linux
    training node takes: `if _IS_WINDOWS: num_workers = 0` does not apply there; a name
    assigned in several places takes the assignment the run at the defaults ends with
    (`if args.distributed and 'tfds' in args.dataset:` is false when --dataset is ''),
    and so does an attribute a constructor assigns in several places
    (`self.num_val_workers = self.num_workers`, replaced only `if num_val_workers is not
    None:`, is `num_workers` at the defaults).
    A worker count that defaults to None (a config field filled from YAML) is a
    placeholder, since DataLoader rejects None: the rules are unknown for it; so is a
    default of 0 that the function building the loader divides by, untested
    (`num_train_examples / (global_batch_size * num_workers)`, a WebDataset pipeline sized
    per worker): at 0 the run stops with ZeroDivisionError, so a run passes its own. A helper
    of the file that builds the loader is judged with what the file's one call of it
    passes (`_create_data_loader(path, 64, args.n_cpu)`), unless a decorator fills its
    parameters from a config (detectron2's `@configurable(from_config=...)`: unknown,
    its signature's `num_workers=0` is not the run's); settings a function of the file
    returns as a dict (`**dataloader_options(device, args.workers)`, `{}` under `if
    device.type == 'cpu':`, else `dict(num_workers=workers, ...)`) are read as a GPU run
    gets them, its parameters bound to what the call passes; a `**data_loader_kwargs`
    parameter defaulting to `{}` is the caller's slot for options, not their value. A
    helper's own `**kwargs` passed on whole to DataLoader (`def get_dataloader(ds,
    **kwargs): return DataLoader(ds, collate_fn=..., **kwargs)`), which no call in the
    file or in a file of the run linked to it by imports fills (directly or through a
    caller forwarding its own such `**kwargs`), leaves DataLoader's defaults: library
    code is judged at them, the finding saying the caller may pass `num_workers` there;
    a helper that reads or fills its `**kwargs` itself, or a DataLoader subclass's
    `__init__` forwarding them, stays unknown. A loader over `range(n)` reads nothing
    per item (its items are integers computed on access). One with `collate_fn=list` (or
    `lambda batch: batch`) over a dataset out of sight hands the loop its raw records in a
    list, which the loop takes apart itself (prompt dicts it then tokenises): not flagged,
    nor by EC502 (no tensor batch to pin); over a dataset in sight it is judged on what
    that dataset does per item. In a
    file that trains, a loader stored on the object or in a plain name that nothing in
    the file reads (`self.valid_dl = cycle(DataLoader(...))`, `test_loader =
    DataLoader(...)`, never used) is not judged by EC501-EC504: no worker starts for it;
    nor is one handed to a class of another file of the run that only keeps it in an
    attribute no file of the run reads (`Solver(config, train_loader, test_loader)`,
    `self.test_loader = test_loader`, never iterated), nor one returned by a Lightning
    `predict_dataloader` / `test_dataloader` hook (or a method installed as one) in a file
    whose Trainer runs `fit` but never `predict` / `test`. A
    training loop over a loader another module builds (`self.train_loader =
    make_data_loader(args)`) makes this rule and EC502-EC505 unknown: its settings are
    out of sight.
    A loader-making function out of sight handed a worker count (`create_loader(ds,
    num_workers=args.workers)`, `make_data_loader(args, **kwargs)` with `kwargs =
    {"num_workers": ...}`) is judged on that count (EC501, EC504); what it does about
    pinning and persistent workers is its own, so EC502 and EC503 say unknown there. One
    in an arm of an `if` whose other arm builds a DataLoader handed the same worker count
    (a hook `process_train_dataset(ds, num_workers=self.num_workers)`, else `DataLoader(ds,
    num_workers=self.num_workers)`) is that loader built another way: judged once, there.
    A value read from a config object of the file (`cfg.num_workers` with `class
    DataConfig: num_workers: int = 4`, or `C.num_workers = 4` in a
    `get_default_config()` that returns `C`) is judged at its default, as an argparse
    option is. An option the file reads but does not define (`args.workers` in a data
    module) takes the default of the parser of another file audited in the same run and
    linked to it by imports (main.py importing both), the nearest by path (`--workers
    defaults to 4 in params.py`); unknown when the nearest parsers disagree. A config
    tree a module of the same run builds at its top level (yacs's `_C = CN()`,
    `_C.TRAIN.workers = 16` in config/defaults.py) gives `cfg.TRAIN.workers` its default
    in every file of the run linked to it by imports, the YAML a run may merge over it
    being out of sight, as a command line is.

    A Hugging Face `Trainer` (or trl's, or a subclass that does not override
    `get_train_dataloader`) builds its own DataLoader with `TrainingArguments`'
    `dataloader_num_workers`, 0 by default: when its training dataset decodes or augments
    images at every access (`set_transform`/`with_transform` with PIL, torchvision,
    albumentations or an image processor), the finding points at `TrainingArguments(...)`
    and the fix sets `dataloader_num_workers`; a text dataset tokenised up front by a
    batched `map` is served from memory and not judged.

    **Best practice.** `num_workers` a little below the CPUs available to the process
    (the fix suggests this machine's usable CPUs minus one), with `pin_memory=True` and
    `persistent_workers=True`.
    """
    workers = suggested_workers(facts)

    def test(loader: dict[str, Any], file_facts: dict[str, Any]) -> Verdict:
        known, value, how = workers_on_target(loader, facts)
        if not known:
            return how
        if value not in (0, None):
            return None
        if loader.get("kind") == HF_TRAINER and not (loader.get("dataset") or {}).get("decodes"):
            return Clear(f"{how}, over a dataset that does not decode images per item")
        sampling = loader.get("gpu_sampling")
        if sampling and sampling.get("known"):
            return Clear(f"{how}, as DGL requires with {sampling['text']} (sampling on the GPU)")
        if sampling:
            return (
                f"{how}; {sampling['text']} is not determined from the source (DGL requires "
                "num_workers=0 with UVA sampling)"
            )
        gpu = trains_on_gpu(facts, file_facts)
        if gpu.trains is None:
            return f"{how}; {gpu.reason}"
        if gpu.trains is False:
            return Clear(f"{how}, not judged: {gpu.reason}")
        if loader.get("host_only"):
            return Clear(f"{how}, but {loader['host_only']}, once: no GPU waits on it")
        in_memory = in_memory_dataset(loader)
        if in_memory:
            return Clear(
                f"{how}, but {in_memory}: batches are taken from data already in memory, "
                "so workers would add little (envcheck probe measures it)"
            )
        dataset = loader.get("dataset") or {}
        if dataset.get("class") == "tokenised-text" and dataset.get("up_front") is None:
            return (
                f"{how}; the dataset is text tokenised up front in some branches and handed "
                f"to a tokenizer-taking Dataset class in others ({dataset.get('text')}): "
                "which one runs is set out of sight"
            )
        if loader.get("one_batch"):
            return Clear(f"{how}, but the loader only reads {loader['one_batch']}")
        if loader.get("inference_only"):
            return Clear(f"{how}, but {loader['inference_only']}")
        raw = raw_records(loader)
        if raw:
            return Clear(f"{how}, but {raw}: nothing is decoded or collated in the loader")
        fix = f"DataLoader(..., num_workers={workers}, pin_memory=True, persistent_workers=True)"
        if loader.get("kind") == HF_TRAINER:
            fix = f"TrainingArguments(..., dataloader_num_workers={workers})"
        return loader_hit(loader, how=how, workers=workers, fix=fix)

    return per_loader(
        facts, test, "every DataLoader uses worker processes", ("torch.DataLoader", HF_TRAINER)
    )


@check(
    id="EC502",
    name="dataloader-pin-memory-off",
    severity=Severity.LOW,
    category="scripts",
    summary="A DataLoader feeding a GPU does not pin memory",
    message="{where}: {how}: host-to-device copies of each batch come from pageable "
    "memory and cannot overlap with compute — `{code}`",
    fix="DataLoader(..., pin_memory=True)   # and .to(device, non_blocking=True) in the loop",
    evidence=(
        "https://pytorch.org/docs/stable/data.html#memory-pinning",
        "https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html",
    ),
)
def dataloader_pin_memory_off(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A DataLoader without `pin_memory=True` in a script that trains on
    CUDA. Copies from pageable host memory go through a staging buffer and are
    synchronous; from pinned memory they are faster and, with `non_blocking=True`, overlap
    with the previous step's compute (PyTorch's memory-pinning notes).

    Not flagged: a loader that reads a single batch (`next(iter(DataLoader(...)))`, or
    one over a list of one item written in the call: `DataLoader([sample])`) or a
    few (its one loop stops itself: `if ii == 1: break`), or one of an inference method
    nothing in the file calls (`evaluate()` reading it under `torch.no_grad()` beside the
    `fit()` that trains), or a data module's `__main__` self-test that only prints what
    it reads, or one whose batches stay on the CPU (a statistics pass that only reduces
    them), or
    one over text tokenised up front, whose batches of token ids are a few KB; nor one
    over data already in memory (a `TensorDataset`, a Dataset of the file that only
    indexes what it holds) when the file copies batches without `non_blocking=True`:
    the small synchronous copy gains little from pinning, while a `non_blocking` copy
    overlaps with compute only from pinned memory. A data module that builds loaders but
    neither trains nor names a device makes the rule unknown: whether (and how) its
    batches reach a GPU is decided by the training code that consumes them, out of
    sight (a Lightning data module included: the Trainer that will read it, and its
    accelerator, are chosen elsewhere), unless a file of the same run that imports it
    trains on a GPU (`Trainer(accelerator="gpu").fit(model, datamodule=...)`): then its
    loaders over image datasets (torchvision's, or a class named for images: megabytes
    a batch) are judged. A file that trains with JAX/Flax and uses a
    torch DataLoader only to load data is not judged: `jax.device_put` does not read the
    loader's pinned memory. A loader class of a library, out of sight (TorchDrug's
    `data.DataLoader`, whose collate packs graphs into `PackedGraph` objects) makes the
    rule unknown: DataLoader's pinning reaches only tensors and objects with a
    `pin_memory()` method, and what its batches are is decided by that class. So does a
    loader whose every loop turns a field of its batches into NumPy before the copy
    (`points = points.data.numpy()` ... `torch.Tensor(points).cuda()`): the pinned
    pages of that field would be discarded, and what the fields copied as made would
    gain is not in sight.

    **Best practice.** `pin_memory=True` on loaders feeding a GPU, and
    `batch.to(device, non_blocking=True)`.
    """

    def test(loader: dict[str, Any], file_facts: dict[str, Any]) -> Verdict:
        known, value, how = argument(loader, "pin_memory", False)
        if known and value:
            return None
        if file_facts.get("trains_with") == "jax":
            return Clear(
                f"{how}, not judged: the file trains with JAX, whose device_put does not "
                "read the DataLoader's pinned memory"
            )
        module = data_module(file_facts)
        if module and not (_image_dataset(loader) and _gpu_importer(facts, file_facts)):
            return f"{how}; {module} (and with non_blocking, which pinning serves)"
        gpu = trains_on_gpu(facts, file_facts)
        if gpu.trains is False:
            return Clear(f"{how}, not judged: {gpu.reason}")
        if loader.get("host_only"):
            return Clear(f"{how}, but {loader['host_only']}: nothing is copied to a GPU")
        if loader.get("built_by"):
            return (
                f"{how}, handed to {loader['built_by']}, which decides how its batches "
                "reach the GPU"
            )
        if loader.get("class_out_of_sight"):
            return (
                f"{how}, but {loader['class_out_of_sight']} is a loader class out of sight: "
                "its own collate makes the batches, and DataLoader pins only tensors and "
                "objects with a pin_memory() method"
            )
        if not known:
            return how
        if gpu.trains is None:
            return f"{how}; {gpu.reason}"
        if loader.get("one_batch"):
            return Clear(f"{how}, but the loader only reads {loader['one_batch']}")
        if loader.get("inference_only"):
            return Clear(f"{how}, but {loader['inference_only']}")
        raw = raw_records(loader)
        if raw:
            return Clear(f"{how}, but {raw}: no tensor batch to pin")
        if (loader.get("dataset") or {}).get("class") == "pre-tokenised":
            return Clear(f"{how}, but {in_memory_dataset(loader)}: batches of a few KB")
        if (loader.get("dataset") or {}).get("class") == "tokenised-text":
            text = loader["dataset"].get("text")
            return Clear(
                f"{how}, but the dataset is text handed to a tokenizer ({text}): "
                "batches of token ids, a few KB"
            )
        if loader.get("host_rebuilt"):
            return (
                f"{how}, but {loader['host_rebuilt']}: pinning would be discarded for it, "
                "and whether the fields copied as made gain is not in sight"
            )
        in_memory = in_memory_dataset(loader)
        if in_memory and not loader.get("non_blocking_copy"):
            return Clear(
                f"{how}, but {in_memory}, and the file copies batches without "
                "non_blocking=True: pinning would gain little"
            )
        return loader_hit(loader, how=how)

    return per_loader(facts, test, "every CUDA DataLoader pins memory")


@check(
    id="EC503",
    name="dataloader-workers-not-persistent",
    severity=Severity.LOW,
    category="scripts",
    summary="DataLoader workers are restarted every epoch (persistent_workers off)",
    message="{where}: {workers_how} but {how}: the worker processes are shut down and "
    "started again at every epoch — `{code}`",
    fix="DataLoader(..., persistent_workers=True)",
    evidence=(
        PYTORCH_DATALOADER_DOCS + " (persistent_workers: 'If True, the data loader "
        "will not shut down the worker processes after a dataset has been consumed "
        "once')",
    ),
)
def dataloader_workers_not_persistent(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** `num_workers > 0` without `persistent_workers=True`. At the end of
    every epoch the workers exit and new ones start, each re-importing modules and
    re-creating the dataset (costly with the spawn start method, the default on Windows
    and macOS), so every epoch begins with a stall.

    A DataLoader constructed anew each time (inside a loop, or in a function such as
    `validate()` called once per epoch) is not flagged: its workers end with it whatever
    the setting; build it once, outside, if its start-up cost matters. One built in a
    loop only to be kept in a list (or dict) made before that loop (`for name in sets:
    loaders.append(DataLoader(...))`, one per validation set) is built once, and judged.
    Nor is a loader whose sampler never runs out (an `InfiniteSampler`, `RandomSampler(...,
    num_samples=int(1e10))`, or a sampler class of the file or of a file of the run whose
    `__iter__` yields in a `while True:` it never leaves): one pass that never ends. Nor
    is one whose batch sampler re-reads its inner sampler until a set count of batches
    (maskrcnn-benchmark's `IterationBasedBatchSampler`: `for batch in self.batch_sampler`
    inside a `while` loop of its `__iter__`): one pass over the loader spans the
    training; built by a maker function only when handed a count (`if num_iters is not
    None:`), the call decides it (a parameter left at its `None` default: a plain
    sampler, judged), and a test the source does not settle makes the rule unknown. A
    worker count the source does not settle makes the rule unknown unless
    `persistent_workers=True` is given; one written over the CPU count
    (`multiprocessing.cpu_count() // 2`, `max(os.cpu_count() - 1, 1)`) is evaluated on the
    training machine's logical CPUs (`--target`), as EC501 does. An imported class named
    like a loader and handed only DataLoader's own keywords (schnetpack's
    `AtomsLoader(dataset, batch_size=..., num_workers=8, pin_memory=...)`, deepspeech's
    `AudioDataLoader`) is taken for a
    DataLoader subclass: a setting it is not given is DataLoader's default, whereas a
    maker function out of sight (`create_loader(...)`) keeps its own defaults (unknown);
    for a maker another file of the same run defines, handing the caller's `**kwargs`
    whole to each of its DataLoaders (deeplab's `make_data_loader(args, **kwargs)`), a
    setting neither the call hands nor the maker sets is DataLoader's default, judged at
    the call.
    Nor is a worker count from settings only a GPU run gets (`**kwargs` with `kwargs =
    {'num_workers': 1} if use_cuda else {}`) in a file that trains on the CPU (EC504
    leaves it too).
    Nor is one returned by a Lightning `test_dataloader()` or `predict_dataloader()`
    hook, which `trainer.test()` / `trainer.predict()` read once, or by a
    `val_dataloader()` hook when every training Trainer of the file validates only at
    the end (`check_val_every_n_epoch` written as its `max_epochs`, or more, with
    `num_sanity_val_steps` 0 in the default run), nor a local loader
    whose only use is one loop inside no other loop (dataset statistics in one pass), or
    one call, in no loop, to a function of the file that reads it in one such loop
    (`validation(model, loader)` from a one-off `test()`), nor one a function of the
    file builds and returns, called once in no loop, whose result is read in one such
    loop (`inference(get_inference_loader(), model)`; returned in a tuple and unpacked,
    `loader, names = get_inference_utils(opt)`, or handed once to a function of another
    file of the run that so reads it: `inference.inference(loader, model)`; not when
    another file of the run calls the maker too), nor one read for a single batch,
    once and in no loop (`next(iter(DataLoader(...)))`, or a local loader whose only use
    is `next(iter(loader))` or MONAI's `first(loader)`; EC501 and EC502 still judge a
    named one), nor a local loader whose only use is one `iter(loader)`, in no loop,
    read by `next()` step after step (ssd.pytorch): the iterator is never made again,
    so the workers serve one pass; nor a loader an object reads one batch at a time
    through an iterator attribute (`self.val_iter = iter(self.val_loader)`, made again
    only at StopIteration) in a method of a class with no base that the training loop
    calls only under a periodic branch (`if step % 2000 == 0: self.val()`, monodepth2):
    the iterator, and its workers, stay open between reads, and one pass spans many
    epochs; nor a loader whose dataset the training process
    changes between passes (NCF's `train_loader.dataset.ng_sample()` each epoch, a
    `dataset.set_epoch(epoch)`, or a Lightning callback of the Trainer the loader is
    fitted with setting `trainer.train_dataloader.dataset.real_epoch` in its
    `on_train_epoch_start`): persistent workers would keep their first copy of it
    and never see the change. A data module's test loader (held in, or built over, a
    name of the test split: `test_loader = DataLoader(test_set, ...)`, in a file that
    neither trains nor names a device) is unknown: the importer reads it after training,
    by convention once, and how often is out of sight. A call of the file's
    `def train(...)` is a call by that name: `model.train()` in a loop is not one.

    **Best practice.** `persistent_workers=True` whenever `num_workers > 0`.
    """

    def test(loader: dict[str, Any], file_facts: dict[str, Any]) -> Verdict:
        workers_known, workers, workers_how = workers_on_target(loader, facts)
        if workers_known and workers in (0, None):
            return None
        cpu_run = gpu_run_settings_on_the_cpu(loader, facts, file_facts)
        if cpu_run:
            return Clear(f"{workers_how}, but {cpu_run}")
        known, value, how = argument(loader, "persistent_workers", False)
        if known and value:
            return None
        if not workers_known:
            return f"{workers_how}; {how}"
        if loader.get("endless"):
            return Clear(f"{how}, but {loader['endless']}: the workers are never restarted")
        if loader.get("iteration_sampler"):
            return Clear(f"{how}, but {loader['iteration_sampler']}")
        if loader.get("rebuilt"):
            return Clear(
                f"{how}, but {loader['rebuilt']}: a new DataLoader each time, whose workers "
                "persistent_workers could not keep"
            )
        if loader.get("read_once"):
            return Clear(f"{how}, but {loader['read_once']}: its workers serve one pass")
        if loader.get("read_periodically"):
            return Clear(
                f"{how}, but {loader['read_periodically']}: its workers are rarely restarted"
            )
        if loader.get("resampled"):
            return Clear(f"{how}, but {loader['resampled']}")
        if loader.get("one_batch"):
            return Clear(f"{how}, but the loader only reads {loader['one_batch']}, once")
        if loader.get("iteration_sampler_if"):
            return (
                f"{how}, but {loader['iteration_sampler_if']}: whether the workers "
                "restart is not settled"
            )
        module = data_module(file_facts)
        if module and loader.get("test_split"):
            return (
                f"{how}, but it is the test split ({loader['test_split']}) of {module}; "
                "a test set is read after training, by convention once, and how often is "
                "out of sight"
            )
        if not known:
            return how
        return loader_hit(loader, how=how, workers_how=workers_how)

    return per_loader(facts, test, "no DataLoader restarts its workers each epoch")


@check(
    id="EC504",
    name="dataloader-workers-above-usable-cpus",
    severity=Severity.MEDIUM,
    category="scripts",
    summary="A DataLoader asks for more workers than the CPUs this process may use",
    message="{where}: {how} but the training machine has only {usable} usable CPUs: the "
    "workers compete for the same cores — `{code}`",
    fix="{fix}",
    evidence=(
        "https://github.com/pytorch/pytorch/pull/46867 (PyTorch's own warning: 'This "
        "DataLoader will create N worker processes in total. Our suggested max number of "
        "worker in current system is M')",
        "https://pytorch.org/docs/stable/elastic/run.html (torchrun starts nproc-per-node "
        "processes on each node; each builds its own DataLoader)",
        "Lightning's own check: max(1, cpus // world_size - 1) workers per process "
        "(lightning/pytorch/trainer/connectors/data_connector.py)",
    ),
)
def dataloader_workers_above_usable_cpus(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** More DataLoader workers than the CPUs available to the process (its
    affinity mask and container quota), for example `num_workers=os.cpu_count()` in a
    container limited to a few CPUs, where `os.cpu_count()` still counts the host's cores.
    PyTorch warns about it itself (pytorch/pytorch#46867): the workers time-slice the same
    cores, and each adds memory.

    `num_workers` is per process: a data-parallel script (torchrun and
    `init_process_group`, `mp.spawn(nprocs=...)`, a Lightning Trainer on several devices,
    `LOCAL_WORLD_SIZE` read from the environment) starts that many workers in each of its
    processes on the node, one per GPU unless the source says how many (a Lightning 1.x
    `Trainer(gpus=2)` is 2). A launch under a test of what the launcher sets (`if
    os.environ.get("SLURM_NTASKS") is not None:`, `elif args.local_rank >= 0:`) counts:
    the launched run takes that branch. The rule judges
    workers x processes per node against the training machine's usable CPUs; when the
    processes are one per GPU and the machine's GPUs are not known, it is unknown.
    `num_workers=os.cpu_count()` in such a script asks for every CPU in each process.
    A loader built out of sight by a callable imported from another module and given a
    `num_workers=` keyword (`CIFAR10DataModule(num_workers=args.num_workers)`,
    `create_loader(..., num_workers=...)`) is judged on that count; its other settings
    are the callee's, so EC502 and EC503 are unknown there. So is one a function of
    another file of the run builds with a parameter as its `num_workers=`, handed that
    parameter positionally or by name (`_create_validation_data_loader(path, bs, size,
    args.n_cpu)`, `DataLoader(..., num_workers=n_cpu)` in test.py). A dataset's own
    `num_workers=` (MONAI's `CacheDataset(..., num_workers=4)`, the threads that fill its
    cache once) is no loader's. A Hugging Face Trainer's own loader is judged on the
    `dataloader_num_workers` its `TrainingArguments(...)` call sets, and the fix is there.
    A worker count read from an option defined in another file of the same run linked
    to it by imports (`args.workers` in data.py, `--workers` in params.py), or from a
    config tree a module of the run builds (`cfg.TRAIN.workers` with
    `_C.TRAIN.workers = 16` in a yacs defaults module), or a constant a module of the
    run it imports sets at its top level (`cfg.NUM_WORKERS` with `import config as cfg`
    and `NUM_WORKERS = 8` in config.py), is judged at that file's default, and the
    finding names the file.

    **Best practice.** Size workers from the usable CPUs:
    `len(os.sched_getaffinity(0))` minus one, divided among the processes on the node.
    """
    section = scripts_section(facts)
    if isinstance(section, Outcome):
        return section
    usable = facts.lookup("cpu.usable")
    logical = facts.lookup("cpu.logical")
    cpus_unknown = None
    if not isinstance(usable, int):
        cpus_unknown = usable.reason if isinstance(usable, Missing) else "usable CPUs not known"
    workers = suggested_workers(facts)
    gpus = devices(facts)

    def test(loader: dict[str, Any], file_facts: dict[str, Any]) -> Verdict:
        known, value, how = workers_on_target(loader, facts)
        if not known:
            return how
        if value is None:
            return f"{how}: a placeholder (DataLoader rejects None), set at run time"
        cpu_run = gpu_run_settings_on_the_cpu(loader, facts, file_facts)
        if cpu_run and value not in (0, None):
            return Clear(f"{how}, but {cpu_run}")
        processes = processes_per_node(file_facts, loader, gpus)
        if isinstance(processes, str):
            return f"{how}; {processes}" if value not in (0, None) else None
        count, launched = processes
        if value in (0, None) or (value == 1 and count == 1):
            return None  # no more workers than any machine has
        if not isinstance(usable, int):
            return f"{how}; the training machine's CPUs are not known ({cpus_unknown})"
        if value == CPU_COUNT:
            # one process: too many only where cpu_count() sees more CPUs than are usable;
            # several: each asks for all of them
            if count == 1 and not (isinstance(logical, int) and logical > usable):
                return None
            if isinstance(logical, int):
                how += f" = {logical} logical CPUs"
                value = logical
            else:
                how += f" = at least the {usable} usable CPUs"
                value = usable
        if count > 1:
            total = value * count
            if total <= usable:
                return None
            share = usable // count
            return loader_hit(
                loader,
                how=f"{how}: {value} worker(s) in each of {count} processes per node "
                f"({launched}), {total} in all",
                usable=usable,
                fix=workers_fix(
                    loader,
                    f"{max(share - 1, 1) if share else 0}   # {usable} CPUs shared by "
                    f"{count} processes",
                ),
            )
        if isinstance(value, int) and value > usable:
            return loader_hit(loader, how=how, usable=usable, fix=workers_fix(loader, workers))
        return None

    limit = f"{usable} " if isinstance(usable, int) else "the usable CPUs' "
    return per_loader(
        facts,
        test,
        f"no DataLoader asks for more than {limit}workers",
        ("torch.DataLoader", HF_TRAINER),
    )


def workers_fix(loader: dict[str, Any], workers: str) -> str:
    """The worker count set where the loader takes it: a Hugging Face Trainer's in its
    TrainingArguments."""
    if loader.get("kind") == HF_TRAINER:
        return f"TrainingArguments(..., dataloader_num_workers={workers})"
    return f"DataLoader(..., num_workers={workers})"


def processes_per_node(
    file_facts: dict[str, Any],
    loader: dict[str, Any],
    gpus: Union[list[dict[str, Any]], Missing],
) -> Union[tuple[int, str], str]:
    """(processes on the node, how the script starts them) for a loader's file: from the
    static audit's `processes_per_node`, or a live loader's `processes` (envcheck.inspect()
    inside a DDP process); one per GPU counts the training machine's GPUs. A str when the
    count cannot be known: why."""
    found = loader.get("processes") or file_facts.get("processes_per_node")
    if not isinstance(found, dict):
        return 1, "one process"
    how = str(found.get("how"))
    count = found.get("count")
    if isinstance(count, int) and count > 0:
        return count, how
    if isinstance(gpus, Missing):
        return f"{how}, and the training machine's GPUs are not known ({gpus.reason})"
    return max(1, len(gpus)), how


@check(
    id="EC505",
    name="dataloader-workers-without-main-guard",
    severity=Severity.HIGH,
    category="scripts",
    summary="Worker processes under the spawn start method, started outside "
    "`if __name__ == '__main__':`",
    message="{where}: a DataLoader with workers is created at module level and the file has "
    'no `if __name__ == "__main__":` guard; {why}, so worker start-up fails — `{code}`',
    fix="move the training code into a main() function and call it under "
    '`if __name__ == "__main__":`',
    evidence=(
        "https://pytorch.org/docs/stable/data.html#platform-specific-behaviors (on Windows "
        "and macOS workers are spawned: wrap the main script's code in an "
        "if __name__ == '__main__': block)",
        "https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-"
        "start-methods (safe importing of main module)",
    ),
)
def dataloader_workers_without_main_guard(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A script that builds and iterates a DataLoader with workers at
    module level, with no `if __name__ == "__main__":` guard, run where workers are
    *spawned*: Windows, macOS (Python 3.8+) or an explicit `set_start_method("spawn")`.
    Each spawned worker re-imports the main module, which starts the loader again:
    PyTorch raises "An attempt has been made to start a new process before the current
    process has finished its bootstrapping phase", or the script runs recursively.

    **Best practice.** Put the training code in a function called under the guard.
    """
    system = facts.lookup("platform.system")

    def test(loader: dict[str, Any], file_facts: dict[str, Any]) -> Verdict:
        if file_facts.get("main_guard") or not loader.get("module_level"):
            return None
        known, value, _ = argument(loader, "num_workers", 0)
        if known and value in (0, None):
            return None
        method = file_facts.get("start_method")
        if method == "spawn":
            why = 'the script sets the "spawn" start method'
        elif method in ("fork", "forkserver"):
            return None
        elif isinstance(system, str) and system in ("Windows", "Darwin"):
            why = f"{'Windows' if system == 'Windows' else 'macOS'} spawns worker processes"
        elif isinstance(system, str):
            return None  # Linux forks by default
        else:
            reason = system.reason if isinstance(system, Missing) else "not reported"
            return (
                "the training machine's platform is not known (workers are spawned on Windows "
                f"and macOS): {reason}"
            )
        return loader_hit(loader, why=why)

    return per_loader(facts, test, "no module-level DataLoader with spawned workers")


# -- the training-step loop (torch_calls observations) ------------------------------------

GUIDE_SYNC = (
    TUNING_GUIDE + " (Avoid unnecessary CPU-GPU synchronization: 'Avoid unnecessary "
    "synchronizations, to let the CPU run ahead of the accelerator as much as possible'; "
    "examples: print(cuda_tensor), cuda_tensor.item(), memory copies tensor.cuda(), "
    "cuda_tensor.cpu() and equivalent tensor.to(device) calls)"
)


def per_call(facts: Facts, kinds: tuple[str, ...], test: LoaderTest, none_found: str) -> Outcome:
    """Run `test(call, file_facts)` on every torch_calls observation of these kinds."""
    section = scripts_section(facts)
    if isinstance(section, Outcome):
        return section
    calls = [c for c in section.get("torch_calls") or [] if c.get("kind") in kinds]
    if not calls:
        return Outcome.passed(none_found)
    by_path = {f.get("path"): f for f in section.get("file_facts") or []}
    return outcome_over(
        calls,
        lambda call: test(call, by_path.get(call.get("path"), {})),
        where,
        none_found,
        "calls",
    )


def call_hit(observation: dict[str, Any], **values: Any) -> Hit:
    return Hit(
        values={"where": where(observation), "code": observation.get("code"), **values},
        evidence={"observation": observation},
        location=Location(
            str(observation.get("path")),
            observation.get("line"),
            observation.get("column"),
            observation.get("code"),
        ),
    )


@check(
    id="EC509",
    name="host-sync-every-step",
    severity=Severity.LOW,
    category="scripts",
    summary="The training loop waits for the GPU every step (.item(), .cpu(), print(loss))",
    message="{where}: `{code}` — {call} {what} in every step of the training loop over "
    "{loader} (line {loop_line}): the CPU waits for the GPU to finish, so the next step's "
    "work is not queued while this one runs",
    fix="{fix}",
    evidence=(
        GUIDE_SYNC,
        "https://www.tensorflow.org/guide/function (a tf.function step runs as a graph: "
        "Python code in it, formatting included, runs once, at tracing)",
        "https://www.tensorflow.org/api_docs/python/tf/print ('A TensorFlow operator that "
        "prints the specified inputs': it runs in the graph, not as a host read)",
    ),
)
def host_sync_every_step(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Inside the training step loop (a `for` over a DataLoader whose body
    calls `backward`), code that needs a value from the GPU every step:
    `total += loss.item()`, `loss.cpu()`, `preds.tolist()`, `float(loss)`,
    `print(loss)` or an f-string with a tensor, `torch.cuda.synchronize()`,
    `torch.cuda.empty_cache()` (its cudaFree waits for the GPU, and the next step
    allocates its memory again). CUDA runs
    asynchronously: the CPU normally queues the next kernels while the GPU works. Each
    of these calls blocks the CPU until everything queued has finished, so the GPU idles
    while Python prepares the next step (PyTorch performance tuning guide, "Avoid
    unnecessary CPU-GPU synchronization"). The cost grows as the model gets smaller and
    the steps faster.

    `math.isnan(t)`, `np.isinf(t)`, a branch on a tensor (`if not torch.isfinite(loss):`,
    `if norm > max_norm:`, `if any(torch.isnan(l) for l in losses):`),
    `GradScaler.get_scale()` (an `.item()` on the scale) or `GradScaler.state_dict()`
    (which calls `get_scale()`; also through a project's wrapper holding an enabled
    GradScaler, `loss_scaler.state_dict()["scale"]`, the wrapper built by the file or
    handed to the step's function by its callers, in the file or in the entry point
    importing it) and formatting a tensor
    (`"{:.6f}".format(norm)`, `%`, f-strings) count like `float(t)`.
    A tensor is what `backward` is called on, what is made on or moved to the device
    (`torch.zeros(3, device=device)`, `batch_to_device(batch, device)`) and what is
    computed from those; the step's helpers are followed (`metric.add(loss)` on an
    instance of a class of the file, `accuracy(pred, y)`, a module calling itself
    through `sys.modules[__name__]`, a closure the helper defines and calls: `def
    closure(): ... loss.backward()`, then `loss = closure()`, a gradient hook the step
    registers, `loss.register_hook(raise_if_nan)`, which backward hands the gradient;
    a function another module of the project defines, read in that module when it is
    audited in the run or imported beside the script: `commons.clip_grad_value_(
    net.parameters(), None)` running `.item()` per parameter, `mel(y_hat)` branching on
    `torch.min(y) < -1.`, a slice bounded by a device tensor, a boolean-mask gather
    (`output[output == target]`), also in the functions it calls in turn, a few levels
    deep (`get_F1` -> `get_sensitivity` doing `float(torch.sum(tp))`), or a method of a
    class such a module defines, called on a name the file binds only to its instances
    (`dice_loss = DiceLoss(n)` ... `dice_loss(out, y)` runs its `forward`, doing
    `.item()` per class; `metric_logger.update(grad_norm=norm)` converting every tensor
    it gets), reported at the step's call when the function does it on every call to a
    device tensor the step hands it, not to a value the step may hand as None);
    a utility shared with
    other code (`metric.add(loss)`) is reported where the step calls it, a method of the
    trainer itself (`self._update_loss(loss)`, shared with evaluation or not) at the
    sync inside it, its branches taken only when evaluating (`elif self.state ==
    State.VALID:`) left out. A
    function that runs a backward pass and an optimizer step outside any loop of its own
    (a framework's per-iteration callback) is a step too, or rather its only caller in the
    file when that runs it once outside any loop (a task's `train_step(self)` that logs
    `loss.item()` and hands the loss to `self.run_optimizer(loss)`), and so is a Lightning
    `training_step(self, batch, batch_idx)` (or `training_step(self, batch)` of a
    LightningModule) with the helpers it calls: the Trainer runs
    it every step with the batch already on the device (`self.log(...)` keeps the value
    on the device), and so are the per-step hooks of a Lightning `Callback` the file
    hands to a `Trainer(callbacks=[...])` (`on_after_backward(self, trainer, pl_module)`,
    `on_train_batch_end`, ...); likewise a Hugging Face Trainer subclass's
    `compute_loss(self, model, inputs, ...)` or `training_step(self, model, inputs,
    ...)` in a file that uses transformers or trl, and its `_prepare_inputs(self,
    inputs)`, which the Trainer's step calls on every batch (a one-off stage it
    starts under `if self.values is None:`, a branch that sets what it tests, is not
    per step). Indexing with a boolean device mask (`x[keep]`, `x[x > 0]`) waits for
    the mask's count; the
    lengths `pack_padded_sequence` requires on the CPU, what a reinforcement-learning
    step must hand to the host every step (the action for
    `env.step(action)` / `envs.step(...)`, new priorities for a CPU replay buffer's
    `update_priority(idx, prios)`, inline or through the name passed), `.tolist()` or
    `.to("cpu")` of a tensor built on the CPU and never moved (`torch.randint(1, 10,
    (64,)).tolist()`, `lengths = torch.tensor(...)` ... `lengths.to("cpu")`) and build
    checks (`torch._C._get_cudnn_enabled()`) are not flagged. The backward pass may be
    hidden in a wrapper the loss and the optimizer are handed to (timm's
    `loss_scaler(loss, optimizer, ...)` in DeiT, MAE, Swin): the loop around it is a
    training loop all the same. A loop whose own body runs the optimizer step after a
    nested gradient-accumulation loop that runs the backward pass (nanoGPT's and llm.c's
    `for step in range(N): for micro_step in range(k): ... loss.backward()` then
    `optimizer.step()`) is the step loop: its `torch.cuda.synchronize()` and
    `loss_accum.item()` run every optimizer step, and the micro loop is read with it;
    so is a loop whose helpers do both (improved-diffusion's `while ...:
    self.run_step(batch)`, `run_step` calling `forward_backward`, a micro-batch loop
    running backward, then `optimize_normal`, whose `_log_grad_norm` runs `.item()` per
    parameter before `opt.step()`), a few calls deep, unless the nested loop updates the
    weights itself or through its helpers (an epoch loop).
    Loggers that turn a tensor into a number sync too:
    TensorBoard's `writer.add_scalar("loss", loss, step)`, `wandb.log({"loss": loss})`,
    `mlflow.log_metric`, Lightning Fabric's `fabric.log_dict({...})` / `fabric.log(name,
    value)` (convert_tensors_to_scalars on every call, loggers or none); TensorBoard's
    `add_image` / `add_images` / `add_histogram` copy the tensor to NumPy (make_np), so
    `self.logger.experiment.add_image("x", torchvision.utils.make_grid(imgs))` in a
    `training_step` copies the grid every step, and `wandb.Image(t)` renders a device
    tensor with `.cpu().numpy()` on the spot. What those media objects hold is on the host,
    so is a `torch.optim` optimizer or scheduler (and its `get_last_lr()`): a log dict of
    them and of `.item()` numbers (`wandb.log(logs)`) reads nothing from the device. A
    number made from `.item()` (`l.item() / n`, or `t.item() if isinstance(t,
    torch.Tensor) else t`) is formatted on the host, and so is such a number handed to
    a helper (`loss = reduce(loss).item()` then `log_stats(pbar, loss)`).
    One statement is one finding, however many lines it spans.

    Calls under `if step % N == 0:` (periodic logging, also through a variable:
    `log_now = step % N == 0` then `if log_now:`, a loop nested in such a branch included:
    `for _ in range(k):` under `if step % N == 0:` is no training loop of its own; also
    through a function of the file returning only such a test: `if should_run_eval(total,
    2, step):`) or `if step == 0:` (once), a latch (`if not self.logged_images:` whose body sets
    `self.logged_images = True`: once), a wall-clock throttle (`if now - last_logging > 60:` whose
    body resets `last_logging = now`, `now` from `time.time()` / `time.perf_counter()`)
    and code after
    the loop are not flagged (`if rank == 0:` is the main process, every step, and is),
    nor are evaluation loops (no `backward`), which must bring predictions to the host,
    nor the evaluation branch of a loop the phases share (`if phase == "valid":` in a
    loop over `["train", "valid"]`).
    A `%` branch that holds the optimizer step (`if (i + 1) % accumulation == 0:
    optimizer.step()`) is no periodic log: it runs at every optimizer step, and its
    syncs are flagged (not when the step also updates the weights outside it: a lazy
    regulariser's occasional extra step stays periodic). A period of 1 set at module
    level is every step, unless the file then runs `exec(...)` at module level (nanoGPT's
    `exec(open('configurator.py').read())` overrides its defaults). An opt-in branch that is off by
    default is skipped (a parameter is read at what the file's call writes out for it,
    beside a `**config` too: `main(use_wandb=args.wandb, **config)`; an int option
    defaulting to 0 is off too, read through the trainer's attribute in the entry point
    importing it: `if self.visdom_epoch and not cross_valid:`), except the
    mixed-precision path (autocast, a GradScaler, or a branch on a flag naming it:
    `if self.use_fp16:` before a hand-rolled loss-scaling step) that
    EC507 advises turning on, and so is the `else` of a test on by default (`if not
    args.disable_dp: ... else: ...`), and a loop calling callbacks a user registers
    (`for callback in self.step_callbacks: callback(self, float(loss))`) that the file
    never fills itself. Nor are the bodies of branches that rarely run: one that
    ends the step loop (`... break`), one that ends the run (`raise`, `sys.exit()`) and one
    taken on a non-finite value (`if not torch.isfinite(norm): logging.warning(...)`; the
    test itself is a per-step read and is flagged). A helper only the step calls (twice:
    under `no_sync()` and without) is read where it is. A lambda handed to a call
    (`apply_to_collection(out, torch.Tensor, lambda t: t.item())`, `tree_map(lambda t:
    t.item(), out)`) runs there: its sync is that statement's, and the Python numbers
    the call returns format later with no second sync. A step returning
    `output_transform(x, y, y_pred, loss)` with that parameter left at a lambda default
    reading the loss (`lambda x, y, y_pred, loss: loss.item()`) syncs every step; a step
    calling PyTorch/XLA (`xm.optimizer_step`) runs on a TPU and is not judged, nor is a
    branch on an optional output of code out of sight (`reg = outputs.get("reg_loss")`
    ... `if reg is not None:`).
    `.numpy()` alone is not flagged in PyTorch: on a CUDA tensor it
    fails, so it only ever sees CPU tensors.

    TensorFlow custom loops (`with tf.GradientTape() as tape:` ... `apply_gradients` in
    a step function called per batch, or in the loop body) are read too: in an *eager*
    step, `.numpy()`, `float(t)` and `%`/f-string/`.format` formatting of a tensor copy
    it to the host every step. `tf.print` is not one (it is an op, run asynchronously),
    and a step compiled with `@tf.function` is not read at all: it runs as a graph, where
    `.numpy()` does not exist and formatting sees symbolic tensors, once, at tracing; what
    it returns to the eager loop is an EagerTensor, and reading that there every step
    (`loss = train_step(x, y)` then `print(f"{loss}")`) is a sync. So is a loop that
    steps a `train_step` method of a class out of sight (`losses =
    trainer.train_step(dataset_iter)`, Keras's `Model.train_step` or a trainer's): what
    it returns is an EagerTensor (`for k, v in losses.items(): "{:.2f}".format(v)`
    reads each loss), and a `while` condition comparing a tensor the file reads with
    `.numpy()` (`while trainer.step < num_steps:`) reads it before every step. A
    loop a default run does not take (`if FLAGS.mode == "eager_tf":` with the flag's
    default "fit") is left out, as is an opt-in branch in the loop (`if
    report_to_hypertune:` with the parameter defaulting to False; gin's
    `@gin.configurable` keeps the defaults of the parameters a config does not bind).
    A branch's test runs every step even when its body is periodic (`if
    opt.iterations.numpy() % 100 == 0:` reads the counter each step), up to the operand
    an opt-in test settles (`limit is not None and loss < limit`, `limit` defaulting to
    None). NumPy on an EagerTensor (`np.mean(loss)`, `np.isnan(loss)`) copies it as
    `.numpy()` does. A function of the file that runs the step once outside any loop of
    its own (`def train(self): a, d = self.train_step(...)`), called by a loop each
    pass, is that loop's body: its reads and what it returns count (also when it hands the
    step to `strategy.run(fn=self.step, ...)`; not when it runs the step again in a loop
    of its own, several steps per call). An eager step method its file never calls (an
    agent in another file runs it every iteration) is a step, and a loop calling a
    project model's method that is such a step in another file of the run (an overridden
    `mt.train_on_batch(x, y)` returning `loss.numpy()`) syncs at that call. In an eager step, a
    branch comparing a device tensor (`if global_steps < warmup_steps:` on a
    `tf.Variable` the step advances, not an int32 counter kept in host memory; `if loss
    > 5:` after `loss = tf.reduce_mean(...)`) reads it every step. Not syncs to avoid:
    the action handed to `env.step(action)` (as in PyTorch loops), formatting what an
    eager step already returned as NumPy (`return loss.numpy()`, flagged there), and a
    read whose value is never used in a loop that takes a timestamp every step
    (`train_step(x).numpy()` then `timestamps.append(time())`: the barrier a benchmark
    needs to time the step rather than its dispatch).

    **Best practice.** Accumulate on the device (`running += loss.detach()`) and read
    the value every N steps: `if step % 100 == 0: print(running.item() / 100)`.
    """

    def test(call: dict[str, Any], file_facts: dict[str, Any]) -> Verdict:
        gpu = trains_on_gpu(facts, file_facts)
        if gpu.trains is None:
            return gpu.reason
        if gpu.trains is False:
            return Clear(f"not judged: {gpu.reason}")
        return call_hit(
            call,
            call=call.get("call"),
            what=call.get("what") or "reads a GPU value",
            loader=call.get("loader"),
            loop_line=call.get("loop_line"),
            fix=TF_SYNC_FIX if call.get("framework") == "tensorflow" else TORCH_SYNC_FIX,
        )

    return per_call(facts, ("host_sync",), test, "no per-step synchronisation in training loops")


TORCH_SYNC_FIX = (
    "running_loss += loss.detach()   # stays on the GPU; read it every N steps: "
    "if step % 100 == 0: print(running_loss.item() / 100); running_loss.zero_()"
)
TF_SYNC_FIX = (
    "train_loss.update_state(loss)   # a tf.keras.metrics.Mean, on the device; log with "
    "tf.print, read train_loss.result() every N steps, or compile the step with @tf.function"
)


@check(
    id="EC510",
    name="per-sample-device-copies",
    severity=Severity.MEDIUM,
    category="scripts",
    summary="Samples are copied to the GPU one by one (per-sample .to(device), CUDA in "
    "Dataset.__getitem__)",
    message="{where}: `{code}` — {problem}",
    fix="{fix}",
    evidence=(
        GUIDE_SYNC,
        "https://pytorch.org/docs/stable/data.html#multi-process-data-loading ('It is "
        "generally not recommended to return CUDA tensors in multi-process loading because "
        "of many subtleties in using CUDA and sharing CUDA tensors in multiprocessing ... "
        "Instead, we recommend using automatic memory pinning (i.e., setting "
        "pin_memory=True)')",
        "https://pytorch.org/docs/stable/notes/multiprocessing.html#cuda-in-multiprocessing "
        "('The CUDA runtime does not support the fork start method')",
    ),
)
def per_sample_device_copies(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Copying to the GPU sample by sample instead of once per batch:

    - `.to(device)` / `.cuda()` inside an inner `for` loop over the batch's elements, in
      the training step loop, or in a comprehension over one item of the batch (`[idx.cuda()
      for idx in input[3]]`). Each small copy pays the fixed cost of a transfer (and,
      from pageable memory, a synchronisation), so a batch of 256 images costs 256
      transfers instead of one.
    - `.cuda()` / `.to("cuda")` (or `device="cuda"`) inside a `Dataset.__getitem__`.
      In DataLoader workers started with fork (Linux's default) it fails once the
      training process has used CUDA ("Cannot re-initialize CUDA in forked
      subprocess"); with `num_workers=0` every sample is loaded and copied one at a
      time in the training process. PyTorch recommends returning CPU tensors and using
      `pin_memory=True` instead.

    Inner loops over a dict's fields (`for k, v in batch.items()`) or a tuple of tensors
    copy each field of the batch once and are not flagged, nor is an index loop over the
    batch the step loop yields, whole, when the step reads it by position (`for i in
    range(len(data)): data[i] = data[i].cuda()`, then `label = data[0]`): a list of fields;
    nor a comprehension over the batch itself or a slice of it (`[t.cuda() for t in
    batch[1:]]`).

    **Best practice.** Return CPU tensors from the Dataset, let the DataLoader collate
    and pin them, and move the whole batch once per step:
    `x = x.to(device, non_blocking=True)`.
    """
    batched = "x = x.to(device, non_blocking=True)   # the whole batch, once per step"

    def test(call: dict[str, Any], file_facts: dict[str, Any]) -> Verdict:
        if call.get("kind") == "dataset_cuda":
            return call_hit(
                call,
                problem=f"{call.get('class')}.{call.get('function')} puts each sample on the "
                f"GPU with {call.get('call')}: CUDA cannot be re-initialised in forked DataLoader "
                "workers, and without workers every sample is copied on its own",
                fix=f"return CPU tensors from {call.get('class')}.{call.get('function')} and "
                f"move the batch in the training loop: {batched}, with "
                "DataLoader(..., pin_memory=True)",
            )
        gpu = trains_on_gpu(facts, file_facts)
        if gpu.trains is None:
            return gpu.reason
        if gpu.trains is False:
            return Clear(f"not judged: {gpu.reason}")
        return call_hit(
            call,
            problem=f"{call.get('call')} inside the loop `{call.get('inner_loop_code')}` "
            f"(line {call.get('inner_loop_line')}) copies the batch to the device one "
            f"element at a time, every step of the training loop (line {call.get('loop_line')})",
            fix=f"{batched}, before the loop of line {call.get('inner_loop_line')} "
            "(with DataLoader(..., pin_memory=True))",
        )

    return per_call(
        facts,
        ("per_sample_copy", "dataset_cuda"),
        test,
        "no per-sample device copies in training loops or Dataset.__getitem__",
    )
