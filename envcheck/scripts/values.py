"""Following a value in a training script without running it.

`DataLoader(ds, num_workers=args.workers)` is only useful to audit if `args.workers` can
be traced to `parser.add_argument("--workers", default=4)`. The resolver follows what is
knowable from the source alone — literals, module constants, simple assignments in the
same function or at module level, argparse defaults, dict literals and `dict(...)` calls
passed with `**`, `os.cpu_count()` — and otherwise says the value is unknown, with the
expression, rather than guess.

Size: one recursive resolver over every expression form it knows; its helpers (names,
attributes, operators, builtins, `**` dicts) call back into it, so splitting them off
would pass the recursion and the scope between modules for no gain in clarity.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Optional

from envcheck.scripts.assignments import (
    Candidates,
    Guard,
    attribute_assignments,
    guarded_assignments,
    own_attribute_assignments,
    simple_assignments,
    statements,
)
from envcheck.scripts.configs import (
    KEYWORD_HOLDERS,
    changed_keys,
    config_defaults,
    keyword_classes,
    option_defaults,
)
from envcheck.scripts.counters import Counters, loop_counters, settled_comparison
from envcheck.scripts.cpu_expressions import (
    GPU_COUNT,
    SYMBOLIC,
    combine_binop,
    combine_call,
    symbolic,
)
from envcheck.scripts.gpu_tests import cuda_available, gpu_count, gpu_test
from envcheck.scripts.hf_arguments import HfArguments
from envcheck.scripts.index import none_parameters
from envcheck.scripts.returns import RUNTIME, ConstantReturns, gpu_run_return

# names decided one inside another (`if a:` deciding `b`, `if b:` deciding `c`, ...)
MAX_DECIDING = 64
CPU_COUNT = "os.cpu_count()"  # symbolic: the number of logical CPUs where it runs
# The `source` of a value read from a live object by envcheck.inspect(), not from code.
LIVE = "live object"
# The key of Lightning's `self.hparams.<name>` among a scope's attributes (inherited.py).
HPARAMS = "hparams."
# `torch.__version__` read as a current release's: the rules judge runs on today's GPU
# stacks, where a branch kept for PyTorch 0.3 (`loss.data[0]`) is dead code
CURRENT_TORCH = "2.3.1"


@dataclass(frozen=True)
class Value:
    """What an argument is known to be: a literal value, symbolic, or unknown."""

    known: bool
    value: Any = None
    text: str = ""  # the expression as written
    source: str = ""  # how it was found: "literal", "default", "argparse --workers default", ...

    def to_json(self) -> dict[str, Any]:
        value = self.value if _json_safe(self.value) else repr(self.value)
        return {"known": self.known, "value": value, "text": self.text, "source": self.source}


def _json_safe(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def unknown(node: ast.AST, why: str) -> Value:
    return Value(False, None, ast.unparse(node), why)


class Scope:
    """Assignments visible at one point: the enclosing function's, then the module's, and
    the updates made to dicts in place (`kwargs.update({...})`, `kwargs["k"] = v`)."""

    def __init__(
        self,
        module_names: dict[str, ast.expr],
        argparse: dict[str, tuple[str, ast.expr]],
        function: Optional[ast.AST] = None,
        module_updates: Optional[dict[str, list[ast.expr]]] = None,
        config_defaults: Optional[dict[str, list[tuple[str, ast.expr]]]] = None,
        module_guarded: Optional[dict[str, list[tuple[ast.expr, list[Guard]]]]] = None,
        module_attributes: Optional[Candidates] = None,
    ):
        self.module_names = module_names
        self.argparse = argparse
        # attribute -> (where, default) from the file's config objects (config_defaults)
        self.config_defaults = config_defaults or {}
        self.module_updates = module_updates or {}
        body = _body(function) if function is not None else []
        # where the loop counters are read from (counters.py), on first use
        self.counter_root: Optional[ast.AST] = function
        self._counters: Optional[Counters] = None
        self.local_names = simple_assignments(body) if function is not None else {}
        # names assigned several expressions, each under the `if` tests around it
        self.module_guarded = module_guarded or {}
        self.local_guarded = guarded_assignments(body) if function is not None else {}
        # `args.num_workers = ...` after parsing: at module level, then in this function
        self.module_attributes = module_attributes or {}
        self.local_attributes = attribute_assignments(body) if function is not None else {}
        # `args.x` -> how many of its assignments a read inside one of them sees (the
        # ones before it: `args.workers = min(args.workers, 4)` reads the parsed value)
        self._attribute_limits: dict[str, int] = {}
        # names whose path is being decided, by their place on that stack (no cycles)
        self._deciding: dict[str, int] = {}
        self._decided: dict[str, Optional[ast.expr]] = {}  # final: the same asked anew
        # decided while the outermost decision is pending, perhaps with a cycle cut short
        self._pending: dict[str, Optional[ast.expr]] = {}
        self._cut = 0  # the lowest place on the stack a cycle (or the bound) cut short
        self.local_updates = _dict_updates(body) if function is not None else {}
        # `self.x = ...` in this method: read back as `**self.x` in the same method
        self.own_attributes = own_attribute_assignments(body) if function is not None else {}
        # `kwargs.update(extra)` with `extra=None` by default cannot run at the default
        # (dict.update(None) raises): a guarded merge of caller options, not taken
        unset = none_parameters(function)
        for name, merged in self.local_updates.items():
            self.local_updates[name] = [
                m for m in merged if not (isinstance(m, ast.Name) and m.id in unset)
            ]
        # `self.x` in a method: what the class's __init__ assigns it, read in the
        # __init__'s scope, whose parameters stand for their defaults (set by the walker)
        self.attributes: dict[str, tuple[ast.expr, Scope]] = {}
        self.defaults: dict[str, ast.expr] = {}
        self.passed: set[str] = set()  # parameters in `defaults` that the file's call passes
        # parameters a run's config gives (a LightningCLI's, cli_configs.py) -> where, or
        # why it is unknown (then not in `defaults`)
        self.configured: dict[str, str] = {}
        # a parameter handed the parsed command line as a dict (`train(config, ...)` with
        # `config = vars(parse_args())` in its one caller) -> what that caller merged into
        # the dict before (analyze.Walker.scope_of)
        self.handed_updates: dict[str, list[ast.expr]] = {}
        # functions of the file that always return one expression (returns.py)
        self.returns: Mapping[str, ast.expr] = {}
        # (option dest, text, function read in) -> the value other files of the run give
        # it (run_options.py), set only for a file with no parser of its own
        self.foreign: Optional[Callable[[str, str, Optional[str]], Optional[Value]]] = None
        # `cfg.TRAIN.workers` -> the default a config tree of the run gives it
        # (run_options.py), set for every file of a run of several
        self.configs: Optional[Callable[[ast.expr], Optional[Value]]] = None
        # function name -> whether another file of the run linked by imports calls it
        # (run_options.py), set on the module's scope of a file audited in a run
        self.called_elsewhere: Optional[Callable[[str], bool]] = None
        # a name the file imports from another file of the run (`from config import
        # CONFIG`) -> its expression there and that file's module scope (run_options.py)
        self.imported: Optional[Callable[[str], Optional[tuple[ast.expr, Scope]]]] = None
        # the file's names bound to Hugging Face TrainingArguments (hf_arguments.py)
        self.hf_arguments: Optional[HfArguments] = None
        # the file's module, for what is read of it on demand (the settings it changes
        # on its objects, its classes keeping their keyword arguments: KeywordObjects)
        self.objects: Optional[KeywordObjects] = None

    @classmethod
    def of_module(cls, module: ast.Module) -> Scope:
        scope = cls(
            simple_assignments(module.body),
            option_defaults(module),
            module_updates=_dict_updates(module.body),
            config_defaults=config_defaults(module),
            module_guarded=guarded_assignments(module.body),
            module_attributes=attribute_assignments(module.body),
        )
        scope.counter_root = module
        scope.returns = ConstantReturns(module)
        scope.hf_arguments = HfArguments(module)
        scope.objects = KeywordObjects(module)
        return scope

    def inside(self, function: Optional[ast.AST]) -> Scope:
        """The scope within `function` (module-level facts are shared, not recomputed)."""
        scope = Scope(
            self.module_names,
            self.argparse,
            function,
            self.module_updates,
            self.config_defaults,
            self.module_guarded,
            self.module_attributes,
        )
        scope.returns = self.returns
        scope.foreign = self.foreign
        scope.configs = self.configs
        scope.imported = self.imported
        scope.hf_arguments = self.hf_arguments
        scope.objects = self.objects
        return scope

    def lookup(self, name: str) -> Optional[ast.expr]:
        if name in self.local_names:
            return self.local_names[name]
        if name in self.local_guarded:
            # a parameter the function reassigns (`precision = precision or default()`,
            # then `precision = None` under a test): its default is not what is read
            return self.on_the_path(name, self.local_guarded[name])
        if name in self.defaults:
            return self.defaults[name]
        if name in self.module_names:
            return self.module_names[name]
        if name in self.module_guarded:
            return self.on_the_path(name, self.module_guarded[name])
        return None

    def on_the_path(
        self, name: str, candidates: list[tuple[ast.expr, list[Guard]]]
    ) -> Optional[ast.expr]:
        """The assignment of `name` that the run at the defaults (on a GPU) ends with: the
        last one whose `if` tests all hold, with none after it whose tests are not known;
        None when the source does not settle it.

        A name met again while it is being decided (a cycle) is unsettled there. A result
        that no cycle reaching below its own place on the stack cut short is final and
        kept (Tarjan's low link); the others are kept until the outermost decision ends,
        so that each name is decided once per question, not once per path to it (names
        each tested on the previous one twice took 2**N decisions). Past MAX_DECIDING
        names pending, a name is unsettled: a chain of thousands stays unknown instead of
        passing Python's recursion limit."""
        if name in self._decided:
            return self._decided[name]
        if name in self._pending:
            return self._pending[name]
        place = self._deciding.get(name)
        if place is not None or len(self._deciding) >= MAX_DECIDING:
            self._cut = min(self._cut, place if place is not None else -1)
            return None
        place = len(self._deciding)
        self._deciding[name] = place
        outer, self._cut = self._cut, place + 1
        try:
            chosen: Optional[ast.expr] = None
            held: dict[tuple[int, bool], Optional[bool]] = {}  # each test read once
            for expr, guards in candidates:
                holds = self._all_hold(guards, held)
                if holds is False:
                    continue  # a branch the run at the defaults does not take
                chosen = expr if holds else None
        finally:
            del self._deciding[name]
            cut, self._cut = self._cut, min(outer, self._cut)
        if cut >= place:  # decided the same whatever is pending around it: final
            self._decided[name] = chosen
        else:
            self._pending[name] = chosen
        if not self._deciding:
            self._pending.clear()
            self._cut = 0
        return chosen

    def _all_hold(
        self, guards: list[Guard], held: dict[tuple[int, bool], Optional[bool]]
    ) -> Optional[bool]:
        """False when one of `guards` fails (read no further), True when all hold, None
        when one is not known. `held` keeps each test's answer for the other assignments
        of the name: the k-th branch of an `if`/`elif` chain sits under k tests, and
        reading them all anew for each branch took N² reads over N branches."""
        every = True
        for guard in guards:
            key = (id(guard[0]), guard[1])
            if key not in held:
                held[key] = self._holds(guard)
            if held[key] is False:
                return False
            every = every and held[key] is True
        return True if every else None

    def _holds(self, guard: Guard) -> Optional[bool]:
        test, taken_when = guard
        if test is None:
            return None
        found = resolve(test, self)
        if _gpus_counted(found):  # `if args.gpus:`: true on a GPU run
            return taken_when
        return bool(found.value) is taken_when if found.known else None

    def attribute_set(self, node: ast.Attribute, depth: int) -> Optional[Value]:
        """`args.num_workers` as the file sets it after parsing (module level, then this
        function): the last assignment whose `if` tests hold at the defaults on a GPU
        run, read with the assignments before it for the attribute's own value
        (`args.workers = min(args.workers, 4)`); None when none is taken (the attribute
        is as parsed). An assignment under a test the source does not settle is passed
        over, as all of them were before they were read: pytorch/examples imagenet's
        per-process `args.workers = ...` under `if args.distributed:` (set in another
        function) would otherwise leave its loaders' 4 workers unknown."""
        assert isinstance(node.value, ast.Name)
        key = f"{node.value.id}.{node.attr}"
        line = getattr(node, "lineno", None)
        local = [
            (expr, guards)
            for expr, guards in self.local_attributes.get(key, [])
            if line is None or getattr(expr, "lineno", 0) < line  # set before this read
        ]
        every = [*self.module_attributes.get(key, []), *local]
        limit = self._attribute_limits.get(key, len(every))
        held: dict[tuple[int, bool], Optional[bool]] = {}
        for place in reversed(range(min(limit, len(every)))):
            expr, guards = every[place]
            self._attribute_limits[key] = place  # what its tests and value read of it
            try:
                if self._all_hold(guards, held) is not True:
                    continue
                found = resolve(expr, self, depth + 1)
            finally:
                if limit >= len(every):
                    del self._attribute_limits[key]
                else:
                    self._attribute_limits[key] = limit
            source = f"{key} = {ast.unparse(expr)} in the file"
            if found.source not in ("literal", ""):
                source += f" ({found.source})"
            return Value(found.known, found.value, ast.unparse(node), source)
        return None

    def counters(self) -> Counters:
        """The names bound only as a loop's non-negative counter here (counters.py)."""
        if self._counters is None:
            self._counters = loop_counters(self.counter_root)
        return self._counters

    def updates(self, name: str) -> list[ast.expr]:
        """Dicts merged into `name` in place, in source order."""
        if name in self.handed_updates and name not in {**self.local_names, **self.local_guarded}:
            return [*self.handed_updates[name], *self.local_updates.get(name, [])]
        if name in self.local_names or name in self.local_guarded:
            return self.local_updates.get(name, [])
        return self.module_updates.get(name, [])


def resolve(node: ast.expr, scope: Scope, depth: int = 0) -> Value:
    """The value of `node` as far as the source tells."""
    text = ast.unparse(node)
    if depth > 8:
        return Value(False, None, text, "too many indirections")
    if isinstance(node, ast.Constant):
        return Value(True, node.value, text, "literal")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = resolve(node.operand, scope, depth + 1)
        if _gpus_counted(inner):
            return Value(True, False, text, f"{inner.source}, at least 1 on a GPU run")
        return Value(inner.known, not inner.value if inner.known else None, text, inner.source)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = resolve(node.operand, scope, depth + 1)
        if inner.known and isinstance(inner.value, (int, float)):
            return Value(True, -inner.value, text, inner.source)
        return Value(False, None, text, inner.source)
    if _is_cpu_count(node):
        return Value(True, CPU_COUNT, text, "os.cpu_count()")
    if _torch_version(node):
        return Value(True, CURRENT_TORCH, text, "torch.__version__ of a current PyTorch")
    if gpu_count(node):  # kept symbolic: evaluated with the target's GPUs
        return Value(False, GPU_COUNT, text, "torch.cuda.device_count() on the training machine")
    if cuda_available(node):  # the rules judge GPU runs, where it is True
        return Value(True, True, text, "torch.cuda.is_available() on a GPU run")
    if isinstance(node, ast.IfExp) and cuda_available(node.test):
        # `4 if torch.cuda.is_available() else 0`: what a GPU run gets
        found = resolve(node.body, scope, depth + 1)
        return Value(found.known, found.value, text, f"{found.source}, on a GPU run")
    if isinstance(node, ast.IfExp):
        # `dtype if dtype in ["auto", None] else getattr(torch, dtype)`: the branch the
        # settled test picks
        chosen = resolve(node.test, scope, depth + 1)
        if _gpus_counted(chosen):  # `4 * args.gpus if args.gpus else 8`: a GPU run has one
            chosen = Value(True, True, chosen.text, chosen.source)
        if chosen.known:
            found = resolve(node.body if chosen.value else node.orelse, scope, depth + 1)
            return Value(found.known, found.value, text, found.source)
    if isinstance(node, ast.Name):
        if node.id in ("True", "False", "None"):
            return Value(
                True, {"True": True, "False": False, "None": None}[node.id], text, "literal"
            )
        assigned = scope.lookup(node.id)
        elsewhere = _imported(node.id, scope) if assigned is None else None
        if elsewhere is not None:  # `from config import NUM_WORKERS`
            expr, there = elsewhere
            found = resolve(expr, there, depth + 1)
            return Value(found.known, found.value, text, found.source)
        if assigned is None and node.id in scope.configured:
            return Value(False, None, text, scope.configured[node.id])
        if assigned is None:
            return Value(False, None, text, f"{node.id} is not a simple assignment here")
        found = resolve(assigned, scope, depth + 1)
        source = found.source or f"{node.id} = ..."
        if found.source == "literal" and node.id in scope.configured:
            source = scope.configured[node.id]
        elif found.source == "literal" and node.id in scope.passed:
            source = f"{node.id}={ast.unparse(assigned)} passed by the file's call"
        elif found.source == "literal" and assigned is scope.defaults.get(node.id):
            source = f"default {node.id}={ast.unparse(assigned)}"  # a parameter left as it is
        return Value(found.known, found.value, text, source)
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and node.attr in scope.attributes
    ):
        expr, init = scope.attributes[node.attr]
        found = resolve(expr, init, depth + 1)
        source = f"self.{node.attr} = {ast.unparse(expr)} in __init__ ({found.source})"
        return Value(found.known, found.value, text, source)
    kept = _hyperparameter(node)
    if kept is not None and HPARAMS + kept in scope.attributes:
        expr, init = scope.attributes[HPARAMS + kept]
        found = resolve(expr, init, depth + 1)
        source = f"{kept} kept by self.save_hyperparameters() in __init__ ({found.source})"
        return Value(found.known, found.value, text, source)
    held = _held_namespace(node, scope, depth)
    if held is not None:
        return held
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        overridden = scope.attribute_set(node, depth) if node.value.id != "self" else None
        if overridden is not None:
            return overridden
        keyword_value = _keyword_object(node, scope, depth)
        if (
            keyword_value is not None
        ):  # `hparams.num_workers` with `hparams = HParams(num_workers=16)`
            return keyword_value
        default = scope.argparse.get(node.attr)
        if default is not None:
            option, expr = default
            found = resolve(expr, scope, depth + 1)
            source = f"argparse {option} default"
            return Value(found.known, found.value, text, source)
        if node.attr in scope.config_defaults and node.value.id != "self":
            # `config.num_workers`; not `self.device`, an attribute of the object itself
            return _config_default(node, scope, depth)
        library = _hf_field(node, scope)
        if library is not None:  # `training_args.dataloader_num_workers`
            return library
        shared = _foreign(node, scope) if node.value.id != "self" else None
        if shared is None and node.value.id != "self":
            shared = _run_config(node, scope)
        if shared is not None:
            return shared
        return Value(False, None, text, f"{text} is not an argparse option with a default")
    if (
        isinstance(node, ast.Attribute)
        and _attribute_chain(node.value)
        and node.attr in scope.config_defaults
    ):  # self.config.num_workers, cfg.data.workers
        return _config_default(node, scope, depth)
    if isinstance(node, ast.Attribute) and _attribute_chain(node.value):
        shared = _foreign(node, scope) or _run_config(node, scope)  # self.args.workers
        if shared is not None:
            return shared
    key = _namespace_key(node, scope)
    if key is not None:  # `config['num_workers']` with `config = vars(args)`
        return _namespace_option(node, key, scope, depth)
    entry = _dict_entry(node, scope, depth)
    if entry is not None:  # `CONFIG["num_workers"]`, `cfg.get("workers", 4)`
        return entry
    if isinstance(node, ast.Subscript):
        return _character(node, scope, depth)
    if isinstance(node, ast.BinOp):
        return _binop(node, scope, depth)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _compare(node, scope, depth)
    if isinstance(node, ast.Call) and ast.unparse(node.func) in scope.returns:
        return _returned(node, scope, depth)
    if isinstance(node, ast.BoolOp):
        return _logic(node, scope, depth)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("min", "max", "int")
    ):
        return _builtin_call(node, scope, depth)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        called = _parametrised(node, scope, depth)
        return called if called is not None else _inspecting_call(node, scope, depth)
    if isinstance(node, (ast.List, ast.Tuple)):
        members = [resolve(e, scope, depth + 1) for e in node.elts]
        if all(m.known for m in members):
            kind = list if isinstance(node, ast.List) else tuple
            return Value(True, kind(m.value for m in members), text, "literal")
    return Value(False, None, text, "computed at run time")


def _torch_version(node: ast.expr) -> bool:
    """`torch.__version__`, the string a version test reads."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "__version__"
        and isinstance(node.value, ast.Name)
        and node.value.id == "torch"
    )


def keyed_read(node: ast.expr) -> Optional[tuple[ast.Name, ast.Constant, Optional[ast.expr]]]:
    """(the dict's name, the string key, `.get`'s default or None for a subscript) of
    `name["key"]` or `name.get("key"[, default])` (the default of `.get("key")` is None,
    written out); None for any other expression."""
    default: Optional[ast.expr] = None
    if isinstance(node, ast.Subscript):
        holder, key = node.value, node.slice
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and 1 <= len(node.args) <= 2
        and not node.keywords
    ):
        holder, key = node.func.value, node.args[0]
        default = node.args[1] if len(node.args) == 2 else ast.Constant(None)
    else:
        return None
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return None
    if not isinstance(holder, ast.Name):
        return None
    return holder, key, default


def _dict_entry(node: ast.expr, scope: Scope, depth: int) -> Optional[Value]:
    """`CONFIG["num_workers"]` or `CONFIG.get("num_workers", 4)` of a dict the source
    spells out (_dict_items: a literal, `dict(...)`, updated in place): the entry's value,
    or `.get`'s default when the whole dict is in sight and lacks the key; None for any
    other expression."""
    read = keyed_read(node)
    if read is None:
        return None
    holder, key, default = read
    items = _dict_items(holder, scope, depth + 1)
    if items is None:
        return None
    elsewhere = _imported(holder.id, scope) if scope.lookup(holder.id) is None else None
    text = ast.unparse(node)
    if key.value in items:  # read where the dict is written (another file of the run)
        found = resolve(items[key.value], elsewhere[1] if elsewhere else scope, depth + 1)
        where = f"{holder.id}[{key.value!r}] = {ast.unparse(items[key.value])}"
        return Value(found.known, found.value, text, where)
    if default is None:
        return None
    found = resolve(default, scope, depth + 1)
    where = f"{holder.id} has no {key.value!r}: the default {ast.unparse(default)}"
    return Value(found.known, found.value, text, where)


def _character(node: ast.Subscript, scope: Scope, depth: int) -> Value:
    """`version[0]` of a known string (`version = torch.__version__`): the character
    an old script's version test reads (`if int(version[0]) > 0:`); unknown for other
    subscripts."""
    text = ast.unparse(node)
    index = node.slice
    if not (isinstance(index, ast.Constant) and type(index.value) is int):
        return Value(False, None, text, "computed at run time")
    found = resolve(node.value, scope, depth + 1)
    if not (found.known and isinstance(found.value, str)):
        return Value(False, None, text, "computed at run time")
    if not -len(found.value) <= index.value < len(found.value):
        return Value(False, None, text, "computed at run time")
    return Value(True, found.value[index.value], text, found.source)


def _gpus_counted(found: Value) -> bool:
    """A value that is the training machine's GPU count (`torch.cuda.device_count()`,
    through the names it is assigned to): tested for truth, it holds on a GPU run, as
    `torch.cuda.is_available()` does."""
    return not found.known and found.value == GPU_COUNT


def _hyperparameter(node: ast.expr) -> Optional[str]:
    """The name `self.hparams.num_workers` or `self.hparams["num_workers"]` reads (what
    Lightning's `save_hyperparameters()` keeps there), or None for anything else."""
    if isinstance(node, ast.Attribute):
        holder, name = node.value, node.attr
    elif (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        holder, name = node.value, node.slice.value
    else:
        return None
    held = (
        isinstance(holder, ast.Attribute)
        and holder.attr == "hparams"
        and isinstance(holder.value, ast.Name)
        and holder.value.id == "self"
    )
    return name if held else None


def _held_namespace(node: ast.expr, scope: Scope, depth: int) -> Optional[Value]:
    """`self.args.workers` where the class's `__init__` keeps a name it was handed
    (`self.args = args`): what `args.workers` reads in that `__init__` (the argparse
    option's default, as for `args.workers` anywhere in the file); None when that is not
    known either, the other readings of the attribute then apply."""
    if not (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "self"
        and node.value.attr in scope.attributes
    ):
        return None
    expr, init = scope.attributes[node.value.attr]
    if not isinstance(expr, ast.Name) or expr.id == "self":
        return None
    read = ast.Attribute(ast.Name(expr.id, ast.Load()), node.attr, ast.Load())
    found = resolve(read, init, depth + 1)
    if not found.known:
        return None
    source = f"self.{node.value.attr} = {expr.id} in __init__ ({found.source})"
    return Value(True, found.value, ast.unparse(node), source)


class KeywordObjects:
    """What a file's module says of its objects built from keyword arguments, read once
    when first asked: its classes keeping them (configs.keyword_classes) and the settings
    it changes on its objects (configs.changed_keys)."""

    def __init__(self, module: ast.Module):
        self.module = module
        self._classes: Optional[set[str]] = None
        self._changed: Optional[dict[str, set[str]]] = None

    def classes(self) -> set[str]:
        if self._classes is None:
            self._classes = keyword_classes(self.module)
        return self._classes

    def changed(self, name: str, key: str) -> bool:
        if self._changed is None:
            self._changed = changed_keys(self.module)
        keys = self._changed.get(name, set())
        return key in keys or "*" in keys


def _keyword_object(node: ast.Attribute, scope: Scope, depth: int) -> Optional[Value]:
    """`hparams.num_workers` where `hparams` is bound, in this file or in the file of the
    run it is imported from (`from hparams import hparams`), to an object built with
    keyword arguments it keeps as attributes (`HParams(num_workers=16, ...)` of a class
    that stores them, `EasyDict(...)`, `argparse.Namespace(...)`): that keyword's value.
    Unknown when `**settings` may hold it or a file changes it on the object
    (`hparams.set_hparam("num_workers", 4)`, `hparams.parse(text)`); None when the name
    is bound to no such object, or the keyword is not given."""
    assert isinstance(node.value, ast.Name)
    name = node.value.id
    if name == "self":
        return None
    expr, there = scope.lookup(name), scope
    if expr is None:
        elsewhere = _imported(name, scope)
        if elsewhere is None:
            return None
        expr, there = elsewhere
    if not (isinstance(expr, ast.Call) and there.objects is not None):
        return None
    maker = ast.unparse(expr.func).rsplit(".", 1)[-1]
    if maker not in KEYWORD_HOLDERS and maker not in there.objects.classes():
        return None
    given = {k.arg: k.value for k in expr.keywords if k.arg is not None}
    spread = len(given) < len(expr.keywords) or bool(expr.args)
    text = ast.unparse(node)
    if node.attr not in given and not spread:
        return None
    changed = [s for s in (scope, there) if s.objects and s.objects.changed(name, node.attr)]
    if node.attr not in given or changed:
        why = (
            "may be set by its **settings" if node.attr not in given else "is changed in the source"
        )
        return Value(False, None, text, f"{name}.{node.attr} of {maker}(...) {why}")
    found = resolve(given[node.attr], there, depth + 1)
    source = f"{maker}({node.attr}={ast.unparse(given[node.attr])})"
    if found.source not in ("literal", ""):
        source += f" ({found.source})"
    return Value(found.known, found.value, text, source)


def _attribute_chain(node: ast.expr) -> bool:
    """`self.config`, `cfg.data`: names and attributes only, no calls or subscripts."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _namespace_key(node: ast.expr, scope: Scope) -> Optional[str]:
    """The option `config['num_workers']` or `config.get('num_workers', 4)` reads when
    `config` is the parsed command line as a dict (`config = vars(parser.parse_args())`,
    `vars(args)`, `args.__dict__`); None for anything else."""
    read = keyed_read(node)
    if read is None:
        return None
    holder, key, _ = read
    assigned = scope.lookup(holder.id)
    return str(key.value) if assigned is not None and namespace_dict(assigned) else None


def namespace_dict(node: ast.expr) -> bool:
    """`vars(args)`, `vars(parse_args())`, `args.__dict__`: a namespace as a dict."""
    if isinstance(node, ast.Attribute) and node.attr == "__dict__":
        namespace: Optional[ast.expr] = node.value
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "vars"
        and len(node.args) == 1
    ):
        namespace = node.args[0]
    else:
        return False
    # the namespace itself, not an object's own attributes (`vars(self)`)
    return (isinstance(namespace, ast.Name) and namespace.id != "self") or isinstance(
        namespace, ast.Call
    )


def _namespace_option(node: ast.expr, option: str, scope: Scope, depth: int) -> Value:
    """`config['num_workers']` read as the argparse option `num_workers` at its default,
    as `args.num_workers` is; unknown when the file sets that key itself
    (`config['num_workers'] = ...`) or it is no option of the file."""
    text = ast.unparse(node)
    holder = node.value if isinstance(node, ast.Subscript) else node.func.value  # type: ignore[attr-defined]
    assert isinstance(holder, ast.Name)  # as _namespace_key found it
    for update in scope.updates(holder.id):
        items = _dict_items(update, scope, depth + 1)
        if items is None or option in items:
            return Value(False, None, text, f"{holder.id}[{option!r}] is set in the file")
    default = scope.argparse.get(option)
    if default is None:
        return Value(False, None, text, f"{option!r} is not an argparse option with a default")
    flag, expr = default
    found = resolve(expr, scope, depth + 1)
    return Value(found.known, found.value, text, f"argparse {flag} default")


def _foreign(node: ast.Attribute, scope: Scope) -> Optional[Value]:
    """`args.workers` in a file with no parser of its own: the option of that name defined
    by the other files of the run (run_options.py), or None when none defines it."""
    if scope.foreign is None:
        return None
    root = scope.counter_root  # the function read in: the entry points that call it
    caller = root.name if isinstance(root, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    return scope.foreign(node.attr, ast.unparse(node), caller)


def _hf_field(node: ast.Attribute, scope: Scope) -> Optional[Value]:
    """A DataLoader field of a Hugging Face TrainingArguments object the file parses or
    builds (hf_arguments.py), or None for any other attribute."""
    if scope.hf_arguments is None or not isinstance(node.value, ast.Name):
        return None
    found = scope.hf_arguments.field(node.value.id, node.attr)
    if found is None:
        return None
    return Value(found.known, found.value, ast.unparse(node), found.source)


def _imported(name: str, scope: Scope) -> Optional[tuple[ast.expr, Scope]]:
    """What another file of the run assigns `name`, when this file imports it from there
    (run_options.py), with that file's module scope to read it in; else None."""
    return None if scope.imported is None or name in scope.defaults else scope.imported(name)


def _run_config(node: ast.Attribute, scope: Scope) -> Optional[Value]:
    """`cfg.TRAIN.workers`: the default a config tree of the run (a yacs defaults module
    audited with it) gives that path, or None when none sets it (run_options.py)."""
    return None if scope.configs is None else scope.configs(node)


def _config_default(node: ast.Attribute, scope: Scope, depth: int) -> Value:
    """`config.num_workers` judged at the default of the file's config objects, as an
    argparse option is at its default; unknown when they disagree."""
    text = ast.unparse(node)
    defaults = scope.config_defaults[node.attr]
    if len({ast.dump(expr) for _, expr in defaults}) > 1:
        places = ", ".join(where for where, _ in defaults)
        return Value(False, None, text, f"the file's config defaults for it differ ({places})")
    where, expr = defaults[0]
    found = resolve(expr, scope, depth + 1)
    return Value(found.known, found.value, text, f"config default {where} = {ast.unparse(expr)}")


def _module_level(scope: Scope) -> Scope:
    """The module-level view of `scope` (its names, options, config defaults and the
    file's function returns), where a function of the file is read at its definition."""
    module = Scope(
        scope.module_names,
        scope.argparse,
        module_updates=scope.module_updates,
        config_defaults=scope.config_defaults,
        module_attributes=scope.module_attributes,
    )
    module.returns = scope.returns
    module.imported = scope.imported
    module.hf_arguments = scope.hf_arguments
    module.objects = scope.objects
    return module


def _returned(node: ast.Call, scope: Scope, depth: int) -> Value:
    """`get_dataloader_workers()`: what the file's function always returns, read at
    module level."""
    name = ast.unparse(node.func)
    module = _module_level(scope)
    module.foreign = scope.foreign
    module.configs = scope.configs
    found = resolve(scope.returns[name], module, depth + 1)
    source = f"{name}() returns {ast.unparse(scope.returns[name])}"
    if found.source not in ("literal", ""):
        source += f" ({found.source})"
    return Value(found.known, found.value, ast.unparse(node), source)


def _parametrised(node: ast.Call, scope: Scope, depth: int) -> Optional[Value]:
    """`exists(x)`, `cast_list(fq_layers)`: a function of the file returning one expression
    of its parameters (`return el if isinstance(el, list) else [el]`), read at module
    level with each parameter bound to the argument the caller settles (None when the
    function is not one such; unknown when an argument is)."""
    parametrised = getattr(scope.returns, "parametrised", None)
    found = parametrised(ast.unparse(node.func)) if parametrised is not None else None
    if found is None:
        return None
    names, expr = found
    text = ast.unparse(node)
    if node.keywords or len(node.args) != len(names):
        return Value(False, None, text, "computed at run time")
    module = _module_level(scope)
    for name, arg in zip(names, node.args, strict=True):
        value = resolve(arg, scope, depth + 1) if not isinstance(arg, ast.Starred) else None
        if value is None or not value.known:
            return Value(False, None, text, "computed at run time")
        module.defaults[name] = ast.Constant(value.value)
    result = resolve(expr, module, depth + 1)
    return Value(
        result.known, result.value, text, f"{ast.unparse(node.func)}() returns {ast.unparse(expr)}"
    )


def _logic(node: ast.BoolOp, scope: Scope, depth: int) -> Value:
    """`persistent_workers and num_workers > 0`: evaluated when the operands are known (an
    `and` stops at the first false one, an `or` at a true one)."""
    text = ast.unparse(node)
    stop = isinstance(node.op, ast.Or)  # the truth value that ends the chain
    result: Value = Value(False, None, text, "computed at run time")
    unknown = False
    for operand in node.values:
        found = resolve(operand, scope, depth + 1)
        if found.known and bool(found.value) is stop:
            # `unknown and False` is false, `unknown or True` true, whatever the unknown
            return Value(True, found.value, text, "logic on known values")
        unknown = unknown or not found.known
        result = Value(True, found.value, text, "logic on known values")
    return Value(False, None, text, "computed at run time") if unknown else result


_OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b if b else None,
    ast.Div: lambda a, b: a / b if b else None,  # `int(num_workers / 2)`
}
_BUILTINS: dict[str, Callable[[list[Any]], Any]] = {
    "min": min,
    "max": max,
    "int": lambda values: int(values[0]),
}
# the type names `isinstance(x, T)` is settled for, once x is known
_TYPES: dict[str, type] = {
    "list": list,
    "tuple": tuple,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "dict": dict,
}


def _binop(node: ast.BinOp, scope: Scope, depth: int) -> Value:
    text = ast.unparse(node)
    left, right = resolve(node.left, scope, depth + 1), resolve(node.right, scope, depth + 1)
    numbers = all(
        v.known and isinstance(v.value, (int, float)) and not isinstance(v.value, bool)
        for v in (left, right)
    )
    if not numbers:
        over_cpus = combine_binop(
            node.op, symbolic(left.value, left.known), symbolic(right.value, right.known)
        )
        if over_cpus is not None:  # kept as an expression, evaluated on the target's CPUs
            return Value(False, over_cpus, text, SYMBOLIC)
        return Value(False, None, text, "computed at run time")
    op = _OPERATORS.get(type(node.op))
    result = op(left.value, right.value) if op else None
    if result is None:
        return Value(False, None, text, "computed at run time")
    return Value(True, result, text, "arithmetic on known values")


_COMPARISONS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


def _compare(node: ast.Compare, scope: Scope, depth: int) -> Value:
    """`FLAGS.mode == 'eager_tf'` with both sides known (a flag at its default)."""
    text = ast.unparse(node)
    left = resolve(node.left, scope, depth + 1)
    right = _members(node.comparators[0], scope, depth + 1)
    operator = _COMPARISONS.get(type(node.ops[0]))
    if left.known != right.known:  # `epoch < opt.warm_epoch` with a warm-up of 0
        bound, counter = (left, node.comparators[0]) if left.known else (right, node.left)
        counted = isinstance(counter, ast.Name) and counter.id in scope.counters()
        settled = (
            settled_comparison(
                node.left, node.ops[0], node.comparators[0], scope.counters(), bound.value
            )
            if counted
            else None
        )
        if settled is not None:
            return Value(True, settled, text, f"a loop counter, never negative ({bound.source})")
    if not (left.known and right.known) or operator is None:
        return Value(False, None, text, "computed at run time")
    try:
        result = operator(left.value, right.value)
    except TypeError:
        return Value(False, None, text, "computed at run time")
    source = left.source if left.source != "literal" else right.source
    return Value(True, bool(result), text, source)


def _members(node: ast.expr, scope: Scope, depth: int) -> Value:
    """The right side of a comparison; a list or tuple written out (`x in ["auto",
    None]`) is known when each member is."""
    if not isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return resolve(node, scope, depth)
    members = [resolve(e, scope, depth) for e in node.elts]
    if not all(m.known for m in members):
        return Value(False, None, ast.unparse(node), "computed at run time")
    return Value(True, tuple(m.value for m in members), ast.unparse(node), "literal")


def _builtin_call(node: ast.Call, scope: Scope, depth: int) -> Value:
    text = ast.unparse(node)
    args = [resolve(a, scope, depth + 1) for a in _compared(node)]
    name = node.func.id  # type: ignore[attr-defined]
    digits = _digits(name, args, node)
    if digits is not None:
        return Value(True, digits, text, args[0].source)
    if (
        node.keywords
        or not args
        or not all(a.known and isinstance(a.value, (int, float)) for a in args)
    ):
        over_cpus = (
            None
            if node.keywords
            else combine_call(name, [symbolic(a.value, a.known) for a in args])
        )
        if over_cpus is not None:
            return Value(False, over_cpus, text, SYMBOLIC)
        return Value(False, None, text, "computed at run time")
    values = [a.value for a in args]
    result = _BUILTINS[name](values)
    if len(args) == 1 and args[0].source not in ("literal", ""):
        return Value(True, result, text, args[0].source)  # int(opt.workers): its source
    return Value(True, result, text, "arithmetic on known values")


def _digits(name: str, args: list[Value], node: ast.Call) -> Optional[int]:
    """`int(version[0])` of a known digit string: the number it reads; None otherwise."""
    if name != "int" or node.keywords or len(args) != 1 or not args[0].known:
        return None
    value = args[0].value
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _compared(node: ast.Call) -> list[ast.expr]:
    """The values `min`/`max` choose among: their arguments, or the members of the one
    list or tuple written out (`min([os.cpu_count(), batch_size, 8])` is
    `min(os.cpu_count(), batch_size, 8)`)."""
    name = node.func.id  # type: ignore[attr-defined]
    only = node.args[0] if len(node.args) == 1 else None
    if name in ("min", "max") and isinstance(only, (ast.List, ast.Tuple)) and only.elts:
        return list(only.elts)
    return list(node.args)


def _inspecting_call(node: ast.Call, scope: Scope, depth: int) -> Value:
    """`len(layers)` and `isinstance(el, list)` of a known value (a list parameter at
    its default `[]`): the flags a constructor derives (`self.has_fq = len(fq) > 0`)."""
    text = ast.unparse(node)
    name = node.func.id  # type: ignore[attr-defined]
    unknown_call = Value(False, None, text, "computed at run time")
    if node.keywords or not node.args:
        return unknown_call
    first = resolve(node.args[0], scope, depth + 1)
    if not first.known:
        return unknown_call
    if name == "len" and len(node.args) == 1 and isinstance(first.value, (list, tuple, str)):
        return Value(True, len(first.value), text, first.source)
    kind = node.args[1] if len(node.args) == 2 else None
    if name == "isinstance" and isinstance(kind, ast.Name) and kind.id in _TYPES:
        return Value(True, isinstance(first.value, _TYPES[kind.id]), text, first.source)
    return unknown_call


def keyword_expressions(call: ast.Call, scope: Scope) -> dict[str, ast.expr]:
    """The expressions of a call's keyword arguments, `**dict` expanded where the dict is
    knowable (`kwargs = {'num_workers': args.workers}` ... `f(**kwargs)`): where each
    value is written."""
    found: dict[str, ast.expr] = {}
    for keyword in call.keywords:
        if keyword.arg is not None:
            found[keyword.arg] = keyword.value
            continue
        for name, expr in (_dict_items(keyword.value, scope) or {}).items():
            found.setdefault(name, expr)
    return found


def keyword_values(call: ast.Call, scope: Scope) -> tuple[dict[str, Value], list[str]]:
    """Keyword arguments of a call, `**dict` expanded where the dict is knowable.

    Returns the values by name and the `**` expressions that could not be expanded
    (any argument may hide in those: callers must treat absent names as unknown then).
    """
    values: dict[str, Value] = {}
    opaque: list[str] = []
    for keyword in call.keywords:
        if keyword.arg is not None:
            values[keyword.arg] = resolve(keyword.value, scope)
            continue
        expanded = _dict_items(keyword.value, scope)
        if expanded is None:
            opaque.append(ast.unparse(keyword.value))
            continue
        gpu_run = _chosen_for_gpu_runs(keyword.value, scope)
        for name, expr in expanded.items():
            found = resolve(expr, scope)
            via = f"via **{ast.unparse(keyword.value)}" + (GPU_RUN if gpu_run else "")
            if found.source.startswith("default ") or found.source.endswith("file's call"):
                via += f", {found.source}"
            values.setdefault(name, Value(found.known, found.value, found.text, via))
    return values, opaque


# how a `**` setting chosen by a GPU test is marked: a file that trains on the CPU
# does not get it (`{'num_workers': 1} if use_cuda else {}`)
GPU_RUN = ", as a GPU run gets it"


def _chosen_for_gpu_runs(node: ast.expr, scope: Scope, depth: int = 0) -> bool:
    """Whether a `**` dict is the branch a GPU test picks (`{...} if use_cuda else {}`,
    through the names it is assigned to)."""
    if depth > 6:
        return False
    if isinstance(node, ast.Name):
        assigned = scope.lookup(node.id)
        return assigned is not None and _chosen_for_gpu_runs(assigned, scope, depth + 1)
    return isinstance(node, ast.IfExp) and gpu_test(node.test)


def _dict_items(node: ast.expr, scope: Scope, depth: int = 0) -> Optional[dict[str, ast.expr]]:
    """The string keys and value expressions of a dict the source spells out: a literal
    (with `**` merges), `dict(k=v)`, `a | b`, or a name assigned one of those and updated in
    place; None when any part is not knowable."""
    if depth > 6:
        return None
    if isinstance(node, ast.Name):
        assigned = scope.lookup(node.id)
        elsewhere = _imported(node.id, scope) if assigned is None else None
        if elsewhere is not None:  # `from config import LOADER_KWARGS`
            return _dict_items(elsewhere[0], elsewhere[1], depth + 1)
        if assigned is None:
            return None
        named = _dict_items(assigned, scope, depth + 1)
        if named is None:
            return None
        if not named and assigned is scope.defaults.get(node.id):
            # `def training_loop(data_loader_kwargs={})` ... `DataLoader(**data_loader_kwargs)`:
            # an empty default is the slot for the caller's options, not their value
            return None
        for update in scope.updates(node.id):
            more = _dict_items(update, scope, depth + 1)
            if more is None:
                return None
            named = {**named, **more}
        return named
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and node.attr in scope.own_attributes
    ):  # `self._dl_kwargs = kwargs` ... `DataLoader(**self._dl_kwargs)`
        return _dict_items(scope.own_attributes[node.attr], scope, depth + 1)
    if isinstance(node, ast.Dict):
        items: dict[str, ast.expr] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:  # {**other, ...}
                merged = _dict_items(value, scope, depth + 1)
                if merged is None:
                    return None
                items.update(merged)
                continue
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None
            items[key.value] = value
        return items
    if isinstance(node, ast.IfExp) and gpu_test(node.test):
        # `{'num_workers': 1, 'pin_memory': True} if use_cuda else {}`: what a GPU run gets
        return _dict_items(node.body, scope, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left = _dict_items(node.left, scope, depth + 1)
        right = _dict_items(node.right, scope, depth + 1)
        return None if left is None or right is None else {**left, **right}
    if isinstance(node, ast.Call) and isinstance(scope.returns, ConstantReturns):
        returned = scope.returns.dict_returned(ast.unparse(node.func))
        if returned is not None:  # `self.get_default_loader_kwargs(batch_size)`
            return dict(returned)
        helper = scope.returns.function(ast.unparse(node.func))
        if helper is not None:  # `dataloader_options(device, args.workers)`
            return _helper_dict(node, helper, scope, depth)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        base: dict[str, ast.expr] = {}
        if node.args:
            found = _dict_items(node.args[0], scope, depth + 1)
            if found is None or len(node.args) > 1:
                return None
            base = found
        for keyword in node.keywords:
            if keyword.arg is None:
                merged = _dict_items(keyword.value, scope, depth + 1)
                if merged is None:
                    return None
                base.update(merged)
            else:
                base[keyword.arg] = keyword.value
        return base
    return None


def _helper_dict(
    call: ast.Call, helper: ast.FunctionDef, scope: Scope, depth: int
) -> Optional[dict[str, ast.expr]]:
    """The dict a function of the file returns on a GPU run (`return {}` under `if
    device.type == 'cpu':` left out), built in its body (`kwargs = dict(num_workers=
    workers, ...)`, updated in place), each value in the caller's terms: a parameter is
    what the call passes for it (or its default), anything else local to the function
    known only when it runs."""
    returned = gpu_run_return(helper)
    if returned is None:
        return None
    items = _dict_items(returned, scope.inside(helper), depth + 1)
    if items is None:
        return None
    bound = _bound_arguments(call, helper)
    if bound is None:
        return None
    stored = {
        n.id for n in ast.walk(helper) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    local = stored | {a.arg for a in ast.walk(helper.args) if isinstance(a, ast.arg)}
    found: dict[str, ast.expr] = {}
    for key, value in items.items():
        if isinstance(value, ast.Name) and value.id in bound and value.id not in stored:
            found[key] = bound[value.id]
        elif any(isinstance(n, ast.Name) and n.id in local for n in ast.walk(value)):
            found[key] = ast.Name(id=RUNTIME, ctx=ast.Load())
        else:
            found[key] = value
    return found


def _bound_arguments(call: ast.Call, function: ast.FunctionDef) -> Optional[dict[str, ast.expr]]:
    """Parameter -> the expression the call passes for it, or its default; None when
    the call passes `*args` or `**kwargs`."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return None
    positional = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    if positional[:1] in (["self"], ["cls"]) and isinstance(call.func, ast.Attribute):
        positional = positional[1:]
    bound: dict[str, ast.expr] = {}
    with_default = positional[len(positional) - len(function.args.defaults) :]
    bound.update(zip(with_default, function.args.defaults, strict=False))
    for arg, default in zip(function.args.kwonlyargs, function.args.kw_defaults, strict=True):
        if default is not None:
            bound[arg.arg] = default
    bound.update(zip(positional, call.args, strict=False))
    bound.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    return bound


def _dict_updates(body: list[ast.stmt]) -> dict[str, list[ast.expr]]:
    """name -> dicts merged into it in place: `name.update({...})`, `name.update(k=v)`,
    `name.update(other)`, `name |= {...}`, `name["k"] = v` (in if/with/for blocks too: an
    update under `if use_cuda:` is what a GPU run gets)."""
    found: dict[str, list[ast.expr]] = {}
    for node in statements(body):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            func = call.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "update"
                and isinstance(func.value, ast.Name)
            ):
                merged: list[ast.expr] = list(call.args)
                if call.keywords:
                    merged.append(ast.Call(ast.Name("dict", ast.Load()), [], list(call.keywords)))
                found.setdefault(func.value.id, []).extend(merged)
        elif (
            isinstance(node, ast.AugAssign)
            and isinstance(node.op, ast.BitOr)
            and isinstance(node.target, ast.Name)
        ):
            found.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if (
                isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Name)
                and isinstance(target.slice, ast.Constant)
                and isinstance(target.slice.value, str)
            ):
                found.setdefault(target.value.id, []).append(
                    ast.Dict([ast.Constant(target.slice.value)], [node.value])
                )
    return found


def _is_cpu_count(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call) or node.args:
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "cpu_count":
        return isinstance(func.value, ast.Name) and func.value.id in ("os", "multiprocessing", "mp")
    return isinstance(func, ast.Name) and func.id == "cpu_count"


def _body(node: Optional[ast.AST]) -> list[ast.stmt]:
    return list(getattr(node, "body", []) or [])
