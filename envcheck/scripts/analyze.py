"""Reading a training script's input-pipeline settings with `ast`, never executing it.

One walk over each file feeds the observers (observer.py), one module per family:
dataloaders.py (every DataLoader with its argument values, followed as far as the source
allows, see values.py), torch_loops.py (what training-step loops do every step),
tf_data.py (tf.data pipelines) and keras.py (Keras calls and settings). The walker keeps
the file-level settings (the `__main__` guard, the start method, cuDNN benchmark, TF32);
precision.py and device.py add mixed precision, convolutional models and the shared
answer to "does this file train on a GPU". The index of functions and classes (index.py)
and the scopes of assignments are built once and shared. Rules turn observations into
findings; nothing here judges.

Size: the walker holds every per-file cache the observers share (scopes, constructor
attributes, calls by name), so that each is computed once, and the file-level settings it
keeps (framework aliases, cuDNN and TF32 assignments, tuple assignments paired) are read
during that walk; split, they would be passed around together anyway.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from envcheck.scripts import config_files, device, precision, processes
from envcheck.scripts.assignments import main_guard
from envcheck.scripts.dataloaders import DataLoaderObserver, loader_classes
from envcheck.scripts.default_run import off_by_default
from envcheck.scripts.foreign_helpers import Foreign, instances
from envcheck.scripts.index import (
    FileIndex,
    filled_by_decorator,
    module_nodes,
    qualified_name,
    source_lines,
)
from envcheck.scripts.inherited import (
    Passed,
    class_attributes,
    constructed_values,
    inherited_attributes,
    init_attributes,
    parameter_defaults,
    passed_arguments,
    passed_back,
)
from envcheck.scripts.keras import KerasObserver
from envcheck.scripts.observer import Observer
from envcheck.scripts.parameters import handed_namespaces
from envcheck.scripts.parsing import Parsed, error, parse_file, short
from envcheck.scripts.project_context import project_root
from envcheck.scripts.run_options import RunOptions
from envcheck.scripts.tf_data import TfDataObserver
from envcheck.scripts.tf_loops import TfLoopObserver
from envcheck.scripts.torch_loops import TorchLoopObserver
from envcheck.scripts.values import Scope, Value, resolve

WALK_RECURSION_LIMIT = 4_000
# Settings a script makes by assignment.
SETTINGS = {
    "torch.backends.cudnn.benchmark",
    "torch.backends.cuda.matmul.allow_tf32",
    "torch.backends.cudnn.allow_tf32",
}
TORCH_ROOTS = {"torch", "lightning", "pytorch_lightning", "accelerate", "timm"}
HF_TORCH_TRAINERS = {
    f"transformers.{name}"
    for name in ("Trainer", "Seq2SeqTrainer", "TrainingArguments", "Seq2SeqTrainingArguments")
}
JAX_ROOTS = {"jax", "flax", "optax"}
# the facts that tell a model's kind and size (precision.py), taken from the entry point
# that builds a model a trainer is handed
MODEL_KIND_FACTS = (
    "conv_layers",
    "matmul_layers",
    "cudnn_rnns",
    "attention_classes",
    "rnn_projections",
    "rnn_unread_linears",
    "toy_model",
    "linear_models",
    "graph_network",
)
# an entry point's source (project_context.ENTRY_MARKERS): a library module importing a
# trainer builds no run's model
ENTRY_TEXT = re.compile(r"__main__|parse_args|hydra\.main")
OTHER_FRAMEWORKS = {"tensorflow", "keras", "jax", "flax", "mxnet", "paddle", "chainer"}
# The families of observations, in the order their `finish` runs (torch loops read the
# loaders; the Keras facts come before the GPU answer that uses them).
OBSERVERS: tuple[Observer, ...] = (
    DataLoaderObserver(),
    KerasObserver(),
    TfDataObserver(),
    TorchLoopObserver(),
    TfLoopObserver(),
)


@dataclass
class FileReport:
    path: str
    error: Optional[dict[str, Any]] = None
    facts: dict[str, Any] = field(default_factory=dict)
    loaders: list[dict[str, Any]] = field(default_factory=list)
    tf_pipelines: list[dict[str, Any]] = field(default_factory=list)
    keras_calls: list[dict[str, Any]] = field(default_factory=list)
    torch_calls: list[dict[str, Any]] = field(default_factory=list)


def _config_data(reader: str, relative: str) -> Optional[Mapping[str, Any]]:
    """RunOptions.config_data for a file run alone (no other file of its project read)."""
    where = config_files.config_path(reader, relative, project_root)
    return config_files.read_config(where) if where is not None else None


def analyze_file(
    path: Path,
    shown: str,
    run: Optional[RunOptions] = None,
    parsed: Optional[Parsed] = None,
) -> FileReport:
    """Observations of one file; a file that cannot be read or parsed gets `error`.

    `run` holds the options the other files of the same run define (run_options.py);
    `parsed` is this file as parse_file() already read it."""
    report = FileReport(shown)
    if parsed is None:
        parsed = parse_file(path, shown)
    if isinstance(parsed, dict):
        report.error = parsed
        return report
    module, text = parsed
    limit = sys.getrecursionlimit()
    # the walk recurses twice per level of nesting: long `a + b + ...` chains that Python
    # itself parses (a few thousand levels) must not stop it at the default 1000
    sys.setrecursionlimit(max(limit, WALK_RECURSION_LIMIT))
    try:
        walker = Walker(module, source_lines(text), report)
        if run is not None and walker.module_scope.argparse:
            # options added to the file's parser by helpers of the run's other files
            helped = run.helper_options(shown)
            for dest, option in helped.items():
                walker.module_scope.argparse.setdefault(dest, option)
        if run is not None and not walker.module_scope.argparse:
            # a file with no parser of its own reads the options of the run's other files
            walker.module_scope.foreign = functools.partial(run.lookup, shown)
        # a config file the source names (a DeepSpeed JSON), beside it or at its root
        walker.config_data = functools.partial(
            run.config_data if run is not None else _config_data, shown
        )
        if run is not None:  # config trees hold whether or not the file parses options
            walker.module_scope.configs = functools.partial(run.config, shown)
            walker.held_elsewhere = functools.partial(run.held_in_memory, shown)
            walker.maker_elsewhere = functools.partial(run.maker, shown)
            walker.padded_elsewhere = functools.partial(run.padded_batches, shown)
            walker.workers_elsewhere = functools.partial(run.worker_parameter, shown)
            walker.splatted_elsewhere = functools.partial(run.splatted_option, shown)
            walker.threads_elsewhere = functools.partial(run.thread_class, shown)
            walker.kind_elsewhere = functools.partial(run.model_kind, shown)
            walker.function_elsewhere = functools.partial(run.function_elsewhere, shown)
            walker.exported_elsewhere = functools.partial(run.exported_function, shown)
            walker.linear_elsewhere = functools.partial(run.linear_model, shown)
            walker.traits_elsewhere = functools.partial(run.model_traits, shown)
            walker.rnn_elsewhere = functools.partial(run.rnn_model, shown)
            walker.class_elsewhere = functools.partial(run.class_definition, shown)
            walker.classes_of_file = run.classes_of_file
            walker.attribute_read_elsewhere = functools.partial(run.reads_attribute, shown)
            walker.method_elsewhere = functools.partial(run.method_elsewhere, shown)
            walker.handed_method_elsewhere = functools.partial(run.handed_method, shown)
            walker.counters_elsewhere = functools.partial(run.counter_properties, shown)
            walker.module_scope.called_elsewhere = functools.partial(run.called_elsewhere, shown)
            walker.module_scope.imported = functools.partial(run.imported, shown)
            walker.started_elsewhere = functools.partial(_started_run, run, shown)
            walker.benchmark_elsewhere = functools.partial(run.importer_benchmark, shown)
            walker.importer_on_gpu = functools.partial(_importer_on_gpu, run, shown)
            walker.model_elsewhere = functools.partial(_importer_model, run, shown)
            if run.cli_files:
                walker.cli_arguments = functools.partial(run.cli_arguments, shown)
                walker.cli_trainer = functools.partial(run.cli_trainer, shown)
            if walker.module_scope.hf_arguments is not None:
                walker.module_scope.hf_arguments.elsewhere = functools.partial(
                    run.class_definition, shown
                )
        walker.run()
    except RecursionError:  # `a + b + ...`, `elif` over thousands: one file, not the run
        failed = FileReport(shown)
        failed.error = error(
            "code nested too deeply to analyse (an expression or an `elif` chain thousands "
            "of levels deep, past Python's recursion limit); skipped"
        )
        return failed
    except Exception as exc:
        failed = FileReport(shown)
        failed.error = {
            **error(
                f"envcheck could not analyse it (internal error, {type(exc).__name__}: "
                f"{short(exc)}); the other files are audited — please report this file"
            ),
            "internal": True,
        }
        return failed
    finally:
        sys.setrecursionlimit(limit)
    return report


class Walker(ast.NodeVisitor):
    def __init__(self, module: ast.Module, lines: list[str], report: FileReport):
        self.module = module
        self.lines = lines
        self.report = report
        self.aliases = _import_aliases(module)
        self.loader_classes = loader_classes(module, self.aliases)
        self.module_scope = Scope.of_module(module)
        self.functions: list[ast.AST] = []
        self._scopes: dict[int, Scope] = {}
        self._index: Optional[FileIndex] = None
        self._attributes: dict[int, dict[str, tuple[ast.expr, Scope]]] = {}
        self._constructing: set[int] = set()  # __init__s whose constructions are being read
        self._inherited_by_class: dict[int, dict[str, tuple[ast.expr, Scope]]] = {}
        self._defaults_by_class: dict[int, dict[str, tuple[ast.expr, Scope]]] = {}
        self._owners: Optional[dict[int, ast.ClassDef]] = None
        self._passed: dict[str, Passed] = {}
        self._calls: Optional[dict[str, list[ast.Call]]] = None
        self._inits: Optional[dict[int, ast.FunctionDef]] = None
        self.in_main_guard = False
        # `qualname` -> why a Dataset class another file of the run defines is held in
        # memory (run_options.py), set for a file audited in a run of several
        self.held_elsewhere: Optional[Callable[[str], Optional[str]]] = None
        # `qualname` -> (the file, the DataLoader keywords it sets) of a loader maker another
        # file of the run defines, building its DataLoaders from the caller's **kwargs
        self.maker_elsewhere: Optional[Callable[[str], Optional[tuple[str, frozenset[str]]]]] = None
        # `data_utils.TextMelCollate` -> where that collate (or a loader class installing
        # one) another file of the run defines pads each batch to its longest sample
        self.padded_elsewhere: Optional[Callable[[str], Optional[str]]] = None
        # `qualname` -> (the file, position, name) of the parameter a loader maker another
        # file of the run defines hands its DataLoaders as num_workers
        self.workers_elsewhere: Optional[Callable[[str], Optional[tuple[str, int, str]]]] = None
        # (function, parameter) -> the option default other files of the run hand that
        # parameter of a function of this file nothing here calls, by `f(**vars(args))`
        self.splatted_elsewhere: Optional[Callable[[str, str], Optional[Value]]] = None
        # `kospeech.trainer.SupervisedTrainer` -> whether that class, defined in another file
        # of the run, starts no DataLoader workers from its num_workers (thread_workers.py)
        self.threads_elsewhere: Optional[Callable[[str], bool]] = None
        # `models.net.UNet` -> "conv"/"matmul": the kind of a model class (or factory)
        # another file of the run defines, by its layers there (class_kinds.py)
        self.kind_elsewhere: Optional[Callable[[str], Optional[str]]] = None
        # `"./ds_config_zero2.json"` -> what the config file of the run's project that the
        # source names holds (config_files.py), or None when it cannot be found or read
        self.config_data: Optional[Callable[[str], Optional[Mapping[str, Any]]]] = None
        # `commons.clip_grad_value_` -> that function of another file of the run, read in
        # its own module for the host syncs a training step runs through it
        self.function_elsewhere: Optional[Callable[[str], Optional[Foreign]]] = None
        # the same, following re-exports (`utils.reproducibility` with `from .general import
        # *` in utils/__init__.py): read for the settings and device moves it makes
        self.exported_elsewhere: Optional[Callable[[str], Optional[Foreign]]] = None
        # `models.LogisticRegression` -> whether that class is one nn.Linear layer there
        self.linear_elsewhere: Optional[Callable[[str], bool]] = None
        # `models.crnn.CRNN` -> what that class builds beyond its kind there
        # ("recurrent", "cells", "graph": class_kinds.layer_traits)
        self.traits_elsewhere: Optional[Callable[[str], frozenset[str]]] = None
        # `model.RNNModel` -> the Linear layers of that class when it is an RNN-only model
        # there (nn.LSTM and Linear layers), each a "projection", "head" or None by its
        # output width (class_kinds.rnn_linears); None for any other class
        self.rnn_elsewhere: Optional[
            Callable[[str], Optional[tuple[tuple[Optional[str], str], ...]]]
        ] = None
        # `trainer.trainer_synapse` -> (the file, its facts) when another file of the run
        # defines it and trains there: the training loop of the run this file starts
        self.started_elsewhere: Optional[Callable[[str], Optional[tuple[str, dict[str, Any]]]]] = (
            None
        )
        # `data_generator.TrainSampler` -> that class as another file of the run defines it
        # (with the file's import aliases): a sampler whose __iter__ never ends
        self.class_elsewhere: Optional[
            Callable[[str], Optional[tuple[ast.ClassDef, dict[str, str]]]]
        ] = None
        # a file of the run (shown path) -> its top-level classes by name: the sampler
        # class a loader maker of that file builds (iteration_samplers.py)
        self.classes_of_file: Optional[Callable[[str], dict[str, ast.ClassDef]]] = None
        # `test_loader` -> whether any file of the run reads an attribute of that name
        self.attribute_read_elsewhere: Optional[Callable[[str], bool]] = None
        # (`utils.MetricLogger`, ("update",)) -> the first of those methods of that class
        # of another file of the run, read the same way
        self.method_elsewhere: Optional[Callable[[str, tuple[str, ...]], Optional[Foreign]]] = None
        # (`train_one_epoch`, 6, "loss_scaler", ("state_dict",)) -> that method of the one
        # class the files of the run importing this one hand the function's parameter
        self.handed_method_elsewhere: Optional[
            Callable[[str, Optional[int], str, tuple[str, ...]], Optional[Foreign]]
        ] = None
        # (("train_step",)) -> the properties reading the optimizer's device step counter
        # of the classes of other files of the run with such a step (`model.step`)
        self.counters_elsewhere: Optional[Callable[[tuple[str, ...]], frozenset[str]]] = None
        # (the file, the value) of cudnn.benchmark set by the one file of the run that
        # imports this one (its entry point: main.py sets it, then trains `Solver`)
        self.benchmark_elsewhere: Optional[Callable[[], Optional[tuple[str, bool]]]] = None
        # the entry point read as context that imports this file and trains on a GPU
        # (train.py importing the data/build.py named): where a data module's batches go
        self.importer_on_gpu: Optional[Callable[[], Optional[str]]] = None
        # the one entry point read as context that imports this file, with the kind facts
        # of the model it builds (a trainer handed its model: decision-transformer)
        self.model_elsewhere: Optional[Callable[[], Optional[tuple[str, dict[str, Any]]]]] = None
        # `__init__` parameter -> (known, value, where) the shipped configs of a
        # LightningCLI the class is handed to give it (cli_configs.py), and the Trainer
        # setting those of the file's own LightningCLI give (run_options.py)
        self.cli_arguments: Optional[
            Callable[[ast.ClassDef, ast.FunctionDef], dict[str, tuple[bool, Any, str]]]
        ] = None
        self.cli_trainer: Optional[Callable[[str], Optional[tuple[bool, Any, str]]]] = None
        self._instances: Optional[dict[str, Optional[str]]] = None
        self.facts: dict[str, Any] = {
            "main_guard": False,
            "start_method": None,
            "uses_cuda": False,
            "cudnn_benchmark": None,
            "autocast": False,
            "tf32": None,
            # the command-line option that turns TF32 on, off by default (`--tf32` of
            # TrainingArguments parsed by HfArgumentParser, `allow_tf32 = args.allow_tf32`)
            "tf32_option": None,
            "conv_layers": False,
        }

    def run(self) -> None:
        self.visit(self.module)
        for observer in OBSERVERS:
            observer.finish(self)
        self.facts.update(precision.read(self))
        if self.facts.get("cudnn_benchmark") is None and self.benchmark_elsewhere is not None:
            # a process-wide setting the run's entry point makes before it trains this
            # module's model
            set_by = self.benchmark_elsewhere()
            if set_by is not None:
                self.facts["cudnn_benchmark"] = set_by[1]
        self.facts["processes_per_node"] = processes.read(self)
        self.facts["train_at"] = device.trains(self)
        started = self._started_run() if self.facts["train_at"] is None else None
        if started is not None:
            self.facts["train_at"] = started[0]
        if started is None and self.facts["train_at"] is not None:
            self._handed_model()
        self.facts["torch"] = self._pytorch() or bool(started and started[1].get("torch"))
        self.facts["trains"] = self.facts["train_at"] is not None
        gpu = device.answer(self)
        if started is not None:
            gpu = _run_settings(self.facts, gpu, started[1])
        self.facts["gpu"] = gpu
        self.facts["uses_cuda"] = gpu["trains"] == "yes"
        if (
            not self.facts["trains"]
            and gpu["trains"] == "unknown"
            and self.importer_on_gpu is not None
            and self.report.loaders
        ):
            self.facts["gpu_importer"] = self.importer_on_gpu()
        self.report.facts = self.facts

    def _started_run(self) -> Optional[tuple[dict[str, Any], dict[str, Any]]]:
        """An entry point with no training loop of its own that calls a function (or
        builds a class) another file of the run defines and trains in: `trainer_synapse(
        args, net, args.output_dir)` of trainer.py, read as context (project_context.py).
        The run it starts trains there, with the model this file builds: where its
        training code is (the call) and the other file's facts; None otherwise."""
        find = self.started_elsewhere
        if find is None or not self.facts.get("main_guard"):
            return None
        for node in module_nodes(self.module):
            if not isinstance(node, ast.Call):
                continue
            name = self.qualname(node.func)
            found = find(name) if name and "." in name else None
            if found is not None:
                shown, facts = found
                code = ast.unparse(node)
                at = {
                    "line": node.lineno,
                    "column": node.col_offset + 1,
                    "code": code if len(code) <= 60 else code[:57] + "...",
                    "loop_in": shown,
                }
                return at, facts
        return None

    def _handed_model(self) -> None:
        """A training loop whose model nothing in the file shows (a trainer handed it)
        trains the model of the one entry point that imports it (read as context): when
        that model is small, its kind facts (precision.py) are this file's, with where
        from."""
        if self.model_elsewhere is None or self.facts.get("conv_layers"):
            return
        if self.facts.get("matmul_layers") or "matmul_layers" not in self.facts:
            return
        found = self.model_elsewhere()
        if found is None:
            return
        shown, facts = found
        for key in MODEL_KIND_FACTS:
            if key in facts:
                self.facts[key] = facts[key]
        self.facts["model_from"] = shown

    def _pytorch(self) -> bool:
        """A PyTorch file: it imports PyTorch (or a library on it), or, with PyTorch out
        of sight behind a star import (`from modeling.deeplab import *`), it trains with
        `.backward()` and imports no other framework."""
        roots = {v.split(".")[0] for v in self.aliases.values()}
        if roots & JAX_ROOTS and not self._torch_backward():
            # Flax/JAX training fed by a torch DataLoader (diffusers' *_flax.py examples):
            # torch only loads data; the precision and pinning rules are PyTorch's
            self.facts["trains_with"] = "jax"
            return False
        if roots & TORCH_ROOTS:
            return True
        if any(v in HF_TORCH_TRAINERS for v in self.aliases.values()):
            return True  # transformers' Trainer runs PyTorch, imported or not
        at = self.facts.get("train_at")
        return (
            not roots & OTHER_FRAMEWORKS
            and isinstance(at, dict)
            and ".backward(" in str(at.get("code"))
        )

    # -- context -----------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._in_function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._in_function(node)

    def _in_function(self, node: ast.AST) -> None:
        self.functions.append(node)
        self.generic_visit(node)
        self.functions.pop()

    def visit_If(self, node: ast.If) -> None:
        if main_guard(node.test):
            self.facts["main_guard"] = True
            outer, self.in_main_guard = self.in_main_guard, True
            for child in node.body:
                self.visit(child)
            self.in_main_guard = outer
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    # -- settings by assignment ------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> None:
        for target, assigned in (p for t in node.targets for p in _pairs(t, node.value)):
            name = self.qualname(target)
            if name not in SETTINGS:
                continue
            value = resolve(assigned, self.scope())
            if name == "torch.backends.cudnn.benchmark" and value.known:
                if off_by_default(self, node):
                    continue  # `if args.test_only: ... = False; return`: not the run's
                self.facts["cudnn_benchmark"] = bool(value.value)
            elif (
                name in ("torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.allow_tf32")
                and value.known
            ):
                self.facts["tf32"] = bool(value.value) or bool(self.facts["tf32"])
                if value.source.startswith("argparse ") and not value.value:
                    self.facts["tf32_option"] = value.source.split()[1]  # off unless passed
        self.generic_visit(node)

    # -- calls -----------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        name = self.qualname(node.func)
        for observer in OBSERVERS:
            observer.call(self, node, name)
        if name in ("multiprocessing.set_start_method", "torch.multiprocessing.set_start_method"):
            if node.args:
                method = resolve(node.args[0], self.scope())
                if method.known:
                    self.facts["start_method"] = method.value
        elif name == "torch.set_float32_matmul_precision" and node.args:
            chosen = resolve(node.args[0], self.scope())
            if chosen.known:
                self.facts["tf32"] = chosen.value in ("high", "medium")
        elif name in HF_TORCH_TRAINERS and name.endswith("Arguments"):
            chosen_tf32 = next((k.value for k in node.keywords if k.arg == "tf32"), None)
            value = resolve(chosen_tf32, self.scope()) if chosen_tf32 is not None else None
            if value is not None and value.known:  # TrainingArguments(tf32=True)
                self.facts["tf32"] = bool(value.value) or bool(self.facts["tf32"])
        elif self.facts["cudnn_benchmark"] is None and self._helper_benchmark(name) is not None:
            # `utils.reproducibility(args, seed)` setting `cudnn.benchmark = True` in its body
            self.facts["cudnn_benchmark"] = self._helper_benchmark(name)
        elif (name or "").startswith("transformers.") and (name or "").endswith("HfArgumentParser"):
            # TrainingArguments from the command line: `--tf32` turns TF32 on (its default
            # None leaves PyTorch's, off), as `--bf16` turns on mixed precision
            self.facts["tf32_option"] = self.facts["tf32_option"] or "--tf32"
        self.generic_visit(node)

    def _helper_benchmark(self, name: Optional[str]) -> Optional[bool]:
        """The value a project function of another file of the run (`utils.reproducibility`)
        gives `torch.backends.cudnn.benchmark` in its own body, not in a branch: a
        process-wide setting the call makes; None otherwise."""
        if self.exported_elsewhere is None or not name or "." not in name:
            return None
        if name.startswith(("torch.", "numpy.", "os.", "sys.")):
            return None
        helper = self.exported_elsewhere(name)
        if helper is None:
            return None
        values = {
            statement.value.value
            for statement in helper.function.body
            if isinstance(statement, ast.Assign)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, bool)
            and any(
                qualified_name(t, helper.aliases) == "torch.backends.cudnn.benchmark"
                for t in statement.targets
            )
        }
        return values.pop() if len(values) == 1 else None

    # -- names -----------------------------------------------------------------------------

    def qualname(self, node: ast.AST) -> Optional[str]:
        return qualified_name(node, self.aliases)

    def instances(self) -> dict[str, Optional[str]]:
        """Names the file binds only to what calls of one name return, by that name's
        qualified name (foreign_helpers.instances), read once."""
        if self._instances is None:
            self._instances = instances(self.module, self.qualname)
        return self._instances

    def index(self) -> FileIndex:
        """The file's functions, generators and classes, built once per file."""
        if self._index is None:
            self._index = FileIndex(self.module, self.aliases)
        return self._index

    def scope(self) -> Scope:
        return self.scope_of(self.functions[-1] if self.functions else None)

    def scope_of(self, function: Optional[ast.AST]) -> Scope:
        """The assignments visible inside `function` (the module's for None), computed
        once per function: every pass over the file shares them."""
        if function is None:
            return self.module_scope
        key = id(function)
        if key not in self._scopes:
            scope = self.module_scope.inside(function)
            self._scopes[key] = scope
            init = self._constructor(function)
            if init is not None:
                if id(init) not in self._attributes:
                    self._attributes[id(init)] = self._init_attributes(init)
                scope.attributes = self._attributes[id(init)]
            inherited = self._inherited(function)
            if inherited:
                scope.attributes = {**inherited, **scope.attributes}
            owner = self.owner_class(function)
            if owner is not None:  # class-level defaults, below what __init__ assigns
                scope.attributes = {**self._class_attributes(owner), **scope.attributes}
            filled = filled_by_decorator(function) is not None  # defaults say nothing
            if (
                isinstance(function, ast.FunctionDef)
                and not self._is_method(function)
                and not filled
            ):
                # a function's parameters stand for their defaults unless the file passes them
                calls = self._calls_by_name().get(function.name, [])
                scope.defaults = parameter_defaults(function, self.passed_to(function.name), skip=0)
                passed = passed_arguments(function, calls)
                scope.defaults.update(passed)
                scope.passed = set(passed)
                for name, (namespace, merged) in handed_namespaces(self, function).items():
                    if name not in scope.defaults:
                        scope.defaults[name] = namespace
                        scope.handed_updates[name] = merged
        return self._scopes[key]

    def _is_method(self, function: ast.AST) -> bool:
        return self.owner_class(function) is not None

    def owner_class(self, method: ast.AST) -> Optional[ast.ClassDef]:
        """The class of the file whose body holds `method`, if any (the first, as the
        file lists them), from a map built once: a search of every class for each of N
        methods took N² time."""
        if self._owners is None:
            self._owners = {}
            for cls in self.index().class_nodes:
                for statement in cls.body:
                    self._owners.setdefault(id(statement), cls)
        return self._owners.get(id(method))

    def _class_attributes(self, owner: ast.ClassDef) -> dict[str, tuple[ast.expr, Scope]]:
        """The class-level defaults of `owner` (inherited.class_attributes), read once per
        class: each of a class's N methods read all N for them."""
        if id(owner) not in self._defaults_by_class:
            self._defaults_by_class[id(owner)] = class_attributes(owner, self.module_scope)
        return self._defaults_by_class[id(owner)]

    def _inherited(self, method: ast.AST) -> dict[str, tuple[ast.expr, Scope]]:
        """What base-class constructors of the file assign to `self` (inherited.py),
        computed once per class."""
        owner = self.owner_class(method)
        if owner is None:
            return {}
        if id(owner) not in self._inherited_by_class:
            self._inherited_by_class[id(owner)] = inherited_attributes(self, owner)
        return self._inherited_by_class[id(owner)]

    def passed_to(self, name: str) -> Passed:
        """What the file's calls of the plain name `name` pass, together; once per name."""
        if name not in self._passed:
            self._passed[name] = Passed.of(self._calls_by_name().get(name, []))
        return self._passed[name]

    def _calls_by_name(self) -> dict[str, list[ast.Call]]:
        """The file's calls of plain names (`Model(...)`), by name, gathered once."""
        if self._calls is None:
            self._calls = {}
            for node in module_nodes(self.module):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    self._calls.setdefault(node.func.id, []).append(node)
        return self._calls

    def _constructor(self, method: ast.AST) -> Optional[ast.FunctionDef]:
        """The __init__ of the class `method` belongs to, if the file defines one."""
        if self._inits is None:
            self._inits = {}
            for cls in self.index().class_nodes:
                init = next(
                    (
                        s
                        for s in cls.body
                        if isinstance(s, ast.FunctionDef) and s.name == "__init__"
                    ),
                    None,
                )
                if init is not None:
                    self._inits.update({id(s): init for s in cls.body})
        return self._inits.get(id(method))

    def _init_attributes(self, init: ast.FunctionDef) -> dict[str, tuple[ast.expr, Scope]]:
        """`self.x = value` assignments of an __init__ (those made once), each with the
        __init__'s scope, in which a parameter stands for its default unless the file
        constructs the class with that argument (`Model(workers=8)`)."""
        scope = self.module_scope.inside(init)
        cls = self.owner_class(init)
        if cls is not None:
            scope.defaults = parameter_defaults(init, self.passed_to(cls.name))
            built = self._calls_by_name().get(cls.name, [])
            # `Net(..., self.workers)` in the class's own `copy()`: the default stays
            scope.defaults.update(passed_back(self, init, built))
            if id(init) not in self._constructing:  # a class built in its own __init__
                self._constructing.add(id(init))
                built = self._calls_by_name().get(cls.name, [])
                given = constructed_values(self, init, built)
                self._constructing.discard(id(init))
                scope.defaults.update(given)
                scope.passed |= set(given)
            settings = self.cli_arguments(cls, init) if self.cli_arguments is not None else {}
            for name, (known, value, where) in settings.items():
                scope.configured[name] = where  # not the signature's default
                scope.passed.discard(name)
                if known:
                    scope.defaults[name] = ast.Constant(value)
                else:
                    scope.defaults.pop(name, None)
        return init_attributes(self, init, scope)

    def _torch_backward(self) -> bool:
        """Any `.backward()` / `manual_backward()` call: PyTorch computes gradients here."""
        return any(
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("backward", "manual_backward")
            for node in module_nodes(self.module)
        )


def _started_run(
    run: RunOptions, reader: str, qualname: str
) -> Optional[tuple[str, dict[str, Any]]]:
    """(the file, its facts) of the context file of the run (read, not audited), linked
    to `reader`, that defines `qualname` (or re-exports it from the file defining it:
    a package's `__init__.py`) with a backward pass in it (a function, or a
    method of the class: the training loop, not a factory of that file), analysed once
    per run; None otherwise. A loop in a file audited in the same run is judged there,
    where autocast goes (detr's main.py and engine.py named together)."""
    found = run.exported_definition(reader, qualname)
    if found is None:
        return None
    shown, name = found
    if shown not in run.context or "backward(" not in run.texts.get(shown, ""):
        return None
    definition = next(
        (
            node
            for node in run.modules[shown].body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.name == name
        ),
        None,
    )
    if definition is None or not _backward_in(definition, run.modules[shown]):
        return None
    facts = _context_facts(run, shown)
    return (shown, facts) if facts and facts.get("trains") else None


def _context_facts(run: RunOptions, shown: str) -> Optional[dict[str, Any]]:
    """The facts of `shown`, a context file of the run (read, not audited), analysed once
    per run; None where it fails, or while its own analysis is under way (a cycle)."""
    if shown not in run.started:
        run.started[shown] = None  # a file whose analysis comes back here ends the cycle
        report = analyze_file(Path(shown), shown, run, (run.modules[shown], run.texts[shown]))
        run.started[shown] = report.facts if report.error is None else None
    return run.started[shown]


def _importer_model(run: RunOptions, reader: str) -> Optional[tuple[str, dict[str, Any]]]:
    """(the file, its facts) of the one entry point read as context (project_context.
    _importers) that imports `reader` directly and builds a small model (a few narrow
    layers, toy_model); None when none, or several, import it (which one runs is not in
    sight), or its model is of another kind: a larger model's kind read in the entry
    point (a CNN beside a frozen one, varying input sizes) is that file's to judge."""
    importers = {a for a, b in run.links if b == reader and a != reader}
    if len(importers) != 1:
        return None
    (importer,) = importers
    if importer not in run.context or importer not in run.modules:
        return None
    if not ENTRY_TEXT.search(run.texts.get(importer, "")):
        return None
    facts = _context_facts(run, importer)
    if not facts or not facts.get("toy_model"):
        return None
    return importer, facts


def _importer_on_gpu(run: RunOptions, reader: str) -> Optional[str]:
    """The first entry point read as context (project_context._importers) that imports
    `reader` directly and trains on a GPU itself, its own loop or the one it starts
    (tools/train.py running engine/trainer.py's do_train): the run that feeds the data
    module's batches to the GPU is in sight, as a trainer audited with it is
    (ec5xx_torch._gpu_importer). With several (MedicalZoo's examples/train_*.py, one per
    data set, each importing lib/medloaders) they must agree: one that trains elsewhere
    than on a GPU, or on a device not settled, leaves the data module unknown (which
    of them runs is not in sight); one that does not train (a visualisation script)
    says nothing of where batches go. None when no importer trains, or none on a GPU."""
    importers = sorted({a for a, b in run.links if b == reader and a != reader})
    first: Optional[str] = None
    for importer in importers:
        if importer not in run.context or importer not in run.modules:
            continue
        facts = _context_facts(run, importer)
        if not facts or not facts.get("trains"):
            continue
        gpu = facts.get("gpu")
        if not isinstance(gpu, dict) or gpu.get("trains") != "yes":
            return None  # the importers disagree: which one runs is not in sight
        first = first or importer
    return first


def _backward_in(definition: ast.AST, module: ast.Module) -> bool:
    """A `.backward()` call in the function or class, or in a function of its `module` that
    it calls by name: `do_train(...)` building its step with the file's
    `create_supervised_trainer(model, optimizer, ...)` (an Ignite `Engine(_update)`)."""
    if _has_backward(definition):
        return True
    called = {
        node.func.id
        for node in ast.walk(definition)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name in called
        and node is not definition
        and _has_backward(node)
        for node in module.body
    )


def _has_backward(definition: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "backward"
        for node in ast.walk(definition)
    )


# The training loop's own settings an entry point that starts it takes, where it sets
# none of them itself (precision, cuDNN autotuning and TF32 may be set in either file).
LOOP_SETTINGS = ("cudnn_benchmark", "tf32", "tf32_option", "env_rollouts", "varying_input")


def _run_settings(
    facts: dict[str, Any], gpu: dict[str, Any], loop: dict[str, Any]
) -> dict[str, Any]:
    """The entry point's facts completed with those of the file its training loop is in
    (`loop`): mixed precision used or gated there, the settings that file makes, and its
    device when this file does not settle one. The model is this file's (its kind, its
    size). Returns the GPU answer."""
    if not facts.get("autocast") and facts.get("amp_gate") is None:
        facts["autocast"] = bool(loop.get("autocast"))
        facts["amp_gate"] = loop.get("amp_gate")
    for key in LOOP_SETTINGS:
        if facts.get(key) is None and loop.get(key) is not None:
            facts[key] = loop[key]
    theirs = loop.get("gpu")
    if gpu.get("trains") != "yes" and isinstance(theirs, dict) and theirs.get("trains") == "yes":
        where = facts["train_at"]["loop_in"]
        return {**theirs, "reason": f"{theirs.get('reason')} (in {where})", "line": None}
    return gpu


def _pairs(target: ast.expr, value: ast.expr) -> list[tuple[ast.expr, ast.expr]]:
    """What each target of an assignment gets: `cudnn.benchmark, cudnn.deterministic =
    True, False` (or `(False, True) if seed == 0 else (True, False)`) sets each setting
    to its own element."""
    if not isinstance(target, (ast.Tuple, ast.List)):
        return [(target, value)]
    width = len(target.elts)
    if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == width:
        return list(zip(target.elts, value.elts, strict=True))
    if (
        isinstance(value, ast.IfExp)
        and isinstance(value.body, (ast.Tuple, ast.List))
        and isinstance(value.orelse, (ast.Tuple, ast.List))
        and len(value.body.elts) == len(value.orelse.elts) == width
    ):
        return [
            (t, ast.copy_location(ast.IfExp(value.test, b, o), value))
            for t, b, o in zip(target.elts, value.body.elts, value.orelse.elts, strict=True)
        ]
    return []


def _import_aliases(module: ast.Module) -> dict[str, str]:
    """Local name -> qualified name, from every import in the file."""
    aliases: dict[str, str] = {}
    for node in module_nodes(module):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    aliases.setdefault(top, top)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                aliases[alias.asname or alias.name] = _reexported(node.module, alias.name)
    aliases.update(_star_imported_frameworks(module, aliases))
    return {name: _versionless(target) for name, target in aliases.items()}


# names a project's `from .imports import *` commonly brings in, and what they stand for
STAR_FRAMEWORK_NAMES = {"tf": "tensorflow", "keras": "keras"}


def _reexported(module: str, name: str) -> str:
    """`from tensorflow_asr import tf`: a project module that re-exports TensorFlow (or
    Keras) under its usual name hands on the framework itself, not a name of its own."""
    framework = STAR_FRAMEWORK_NAMES.get(name)
    if framework is not None and module.split(".")[0] not in FRAMEWORK_PACKAGES:
        return framework
    return f"{module}.{name}"


# packages whose own `tf`/`keras` attributes are what their names say
FRAMEWORK_PACKAGES = {"tensorflow", "keras", "tf_keras"}


def _star_imported_frameworks(module: ast.Module, aliases: dict[str, str]) -> dict[str, str]:
    """`tf` / `keras` used in a file that imports neither but has a star import
    (`from .imports import *`, as ktrain does): the star import brings them."""
    if not any(
        isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
        for node in module.body
    ):
        return {}
    wanted = {k: v for k, v in STAR_FRAMEWORK_NAMES.items() if k not in aliases}
    used: set[str] = set()
    bound: set[str] = set()
    for node in module_nodes(module):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in wanted:
                used.add(node.value.id)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return {name: wanted[name] for name in used - bound}


# `import tensorflow.compat.v1 as tf`: the same API under a versioned path
VERSIONED = (
    "tensorflow.compat.v1",
    "tensorflow.compat.v2",
    "tensorflow._api.v2",
    "lingvo.compat",  # Lingvo's public TensorFlow re-export, `import lingvo.compat as tf`
)
# `from tensorflow.python.data import Dataset`: tf.data under its internal module paths
# (the package, and the modules defining the dataset classes) is the public tf.data
INTERNAL_TF_DATA = (
    "tensorflow.python.data.ops.dataset_ops",
    "tensorflow.python.data.ops.readers",
    "tensorflow.python.data",
)


def _versionless(name: str) -> str:
    for prefix in VERSIONED:
        if name == prefix or name.startswith(prefix + "."):
            name = "tensorflow" + name[len(prefix) :]
            break
    for prefix in INTERNAL_TF_DATA:
        if name == prefix or name.startswith(prefix + "."):
            return "tensorflow.data" + name[len(prefix) :]
    return name
