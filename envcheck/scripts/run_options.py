"""Command-line options shared by the files of one `envcheck scripts` run.

Real projects define their options in one file and read them in another: open_clip's
`data.py` builds its loaders with `num_workers=args.workers`, and `args` is the namespace
of `params.py`'s parser (`--workers`, default 4), both imported by `main.py`. A file with
no parser of its own that reads `args.workers`, `self.args.workers` or `cfg.workers` is
judged at the default of the option of that name defined by the other files audited in
the same run that are linked to it by imports (directly or through other files of the
run: `main.py` imports `params` and `data`), the nearest by path among them (the longest
leading path shared, cut at a name boundary). A file of the run nothing links to it
(another project audited in the same run) never gives it a default. When those parsers
disagree, or a default is not determined by its source, the value stays unknown with
the reason.

Config trees are shared the same way: a yacs defaults module (`_C = CN()`,
`_C.TRAIN.workers = 16`) audited in the run gives `cfg.TRAIN.workers` in any file of the
run linked to it by imports its default, the path read after the object's own name (the
longest path that matches), as argparse defaults are taken for a default run; this holds
for a file with a parser of its own too (`--cfg` names a YAML file that overrides the
tree at run time).

Loader makers are shared too: `make_data_loader(args, **kwargs)` in train.py, defined in
`dataloaders/__init__.py` of the run, builds every DataLoader of its own from the
caller's `**kwargs` (forwarding_makers); a worker setting neither the call hands it nor
the maker sets is DataLoader's default there, not the out-of-sight maker's unknown.

So are names (`from config import MODEL_CONFIG`: a dict, a constant), config classes and
dataclasses (`cfg = Config()`, `cfg.num_workers`) and the kind of a model class
(class_kinds.py) a file imports from another file of the run, whether that file was
named or read as context (project_context.py).

Size: one index of what every file of a run defines, for every lookup across files, so
that each file is read once and every lookup agrees on which file defines a name.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, TypeVar

from envcheck.scripts import config_files
from envcheck.scripts.assignments import simple_assignments
from envcheck.scripts.class_kinds import MAX_DEPTH as MAX_KIND_DEPTH
from envcheck.scripts.class_kinds import (
    definition_kind,
    layer_traits,
    linear_model,
    rnn_linears,
)
from envcheck.scripts.cli_configs import (
    class_settings,
    cli_calls,
    cli_classes,
    cli_configs,
    trainer_setting,
)
from envcheck.scripts.configs import (
    attribute_path,
    config_defaults,
    module_config_tree,
    option_defaults,
)
from envcheck.scripts.datasets import in_memory
from envcheck.scripts.foreign_helpers import Foreign, Function, class_methods
from envcheck.scripts.handed_configs import chosen_loads, handed_heads
from envcheck.scripts.handed_instances import handed_class
from envcheck.scripts.index import module_nodes
from envcheck.scripts.module_constants import file_of_module, module_aliases, module_constants
from envcheck.scripts.padded_batches import padding_collates
from envcheck.scripts.projections import written_kind
from envcheck.scripts.tf_values import counter_property
from envcheck.scripts.thread_workers import reaches_no_loader
from envcheck.scripts.values import Scope, Value, resolve

_Found = TypeVar("_Found", "_Parser", "_Tree")

# Cheap text test before the parse tree is searched for a parser.
MARKERS = ("add_argument", "DEFINE_")


@dataclass
class _Parser:
    shown: str
    module: ast.Module
    options: dict[str, tuple[str, ast.expr]]
    scope: Optional[Scope] = None
    defaults: dict[str, Value] = field(default_factory=dict)

    def default(self, dest: str) -> Value:
        """The option's default, read in this file's own module scope once (each file of a
        run reading the option asked every parser anew: N² over N files)."""
        if dest not in self.defaults:
            if self.scope is None:
                self.scope = Scope.of_module(self.module)
            self.defaults[dest] = resolve(self.options[dest][1], self.scope)
        return self.defaults[dest]


def shared_prefix(a: str, b: str) -> int:
    """Length of the leading path two files share, cut at a name boundary (`/`, `_`, `-`,
    `.`): `pkg/data.py` and `pkg/data_args.py` share `pkg/`, not `pkg/data`. The common
    part is found by halves with string comparisons, not character by character: every
    file of a run of N is compared with every parser (N² comparisons)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return max(a.rfind(boundary, 0, low) for boundary in "/\\_-.") + 1


def nearest(reader: str, parsers: list[_Found]) -> list[_Found]:
    """The parsers (or config trees) closest to `reader` in the tree: those sharing the
    longest leading path with it (its own folder first, then its package's), all of them
    when none shares any."""
    shared = [shared_prefix(reader, p.shown) for p in parsers]
    best = max(shared)
    return [p for p, length in zip(parsers, shared, strict=True) if length == best]


@dataclass
class _Tree:
    shown: str
    module: ast.Module
    paths: dict[tuple[str, ...], tuple[str, ast.expr]]
    scope: Optional[Scope] = None

    def default(self, path: tuple[str, ...]) -> Value:
        """The path's default, read in this file's own module scope."""
        if self.scope is None:
            self.scope = Scope.of_module(self.module)
        return resolve(self.paths[path][1], self.scope)


MAX_REEXPORTS = 2  # package modules re-exporting a name, one importing it from the next


class RunOptions:
    """The argparse (and absl) options of every file of one run, by destination, and
    the config trees their modules build (configs.module_config_tree)."""

    def __init__(self) -> None:
        self.parsers: list[_Parser] = []
        # the parsers of entry points read only for what they import (one of several
        # importing a named file): a value only where they all agree (_shared_lookup)
        self.shared_parsers: dict[str, Optional[_Parser]] = {}
        self.trees: list[_Tree] = []
        self._found: dict[tuple[str, str, Optional[str]], Optional[Value]] = {}
        self.imports: dict[str, list[str]] = {}  # file -> the modules it imports
        self._linked: Optional[dict[str, int]] = None  # file -> its group of linked files
        self._members: Optional[dict[int, list[str]]] = None  # group -> its files
        self.path_adders: set[str] = set()  # files that put folders on sys.path
        self._by_group: dict[str, dict[int, list[_Parser]]] = {}  # option -> group -> parsers
        self.called: dict[str, set[str]] = {}  # file -> the names it calls (`f()`, `x.f()`)
        self.aliases: dict[str, dict[str, str]] = {}  # file -> name -> module it is bound to
        self.constants: dict[str, dict[str, ast.Constant]] = {}  # file -> its constants
        self.in_memory: dict[str, dict[str, str]] = {}  # file -> Dataset class -> why held
        self.makers: dict[str, dict[str, frozenset[str]]] = {}  # file -> maker -> set by it
        # file -> collate function/class (or loader class) -> where it pads each batch to
        # its longest sample (padded_batches.py)
        self.padded: dict[str, dict[str, str]] = {}
        # file -> maker -> (position, name) of the parameter its DataLoaders' workers are
        self.worker_params: dict[str, dict[str, tuple[int, str]]] = {}
        # imports resolved on disk (project_context.py): (importer, imported) file pairs
        self.links: list[tuple[str, str]] = []
        self.from_imports: dict[
            str, dict[str, tuple[str, str]]
        ] = {}  # file -> local -> (module, name)
        self.modules: dict[str, ast.Module] = {}  # file -> its parsed module
        self.texts: dict[str, str] = {}  # file -> its source
        self.context: set[str] = set()  # files read as context only (project_context.py)
        # file -> its facts as analysed for a file of the run that starts its training
        self.started: dict[str, Optional[dict[str, Any]]] = {}
        self.top_names: dict[str, dict[str, ast.expr]] = {}  # file -> name -> its one assignment
        self.config_objects: dict[str, dict[str, list[tuple[str, ast.expr]]]] = {}
        self.definitions: dict[str, set[str]] = {}  # file -> its top-level classes, functions
        self.functions: dict[str, dict[str, Function]] = {}  # file -> its top-level functions
        self.classes: dict[str, dict[str, ast.ClassDef]] = {}  # file -> its top-level classes
        self.star_imports: dict[str, list[str]] = {}  # file -> modules it imports `*` from
        self._foreign: dict[tuple[str, str], Optional[Foreign]] = {}
        self._kinds: dict[tuple[str, str], Optional[str]] = {}
        self._counters: dict[tuple[str, str], frozenset[str]] = {}
        self._scopes: dict[str, Scope] = {}  # file -> its module scope, built once
        # attribute names read (or written as strings) in any file of the run, and over
        # how many files they were gathered (reads_attribute)
        self._attribute_reads: Optional[set[str]] = None
        self._attribute_files = 0
        self._loads: dict[str, list[config_files.Load]] = {}  # file -> config files it loads
        # entry point -> the LightningCLI configs its project ships (cli_configs.py)
        self._cli_configs: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
        self.cli_files: set[str] = set()  # files that name a LightningCLI
        self._cli_arguments: dict[tuple[str, str], dict[str, tuple[bool, Any, str]]] = {}
        # folder -> its project's root (project_context.project_root, set by the run's
        # collector); without it a config file is looked for beside the script only
        self.project_root: Callable[[Path], Optional[Path]] = _no_root

    def link(self, importer: str, imported: str) -> None:
        """Record that `importer` imports `imported` (both files of the run), as found on
        disk: linked whatever their paths look like."""
        self.links.append((importer, imported))
        self._linked = None
        self._members = None
        self._by_group = {}

    def add(self, shown: str, module: ast.Module, text: str, own_options: bool = True) -> None:
        """Index one file of the run; `own_options` False for a file read only for what it
        imports (one of several entry points importing a named file): its parsers and
        config trees are not the run's."""
        self.imports[shown] = imported_modules(module)
        self.called[shown] = called_names(module)
        self.aliases[shown] = module_aliases(module)
        self.constants[shown] = module_constants(module)
        self.in_memory[shown] = _in_memory_datasets(module)
        self.makers[shown] = forwarding_makers(module)
        self.padded[shown] = padding_collates(module, text)
        # cheap text test first: a file that never names num_workers hands it to none
        self.worker_params[shown] = worker_parameters(module) if "num_workers" in text else {}
        self.from_imports[shown] = from_imports(module)
        self.modules[shown] = module
        self.texts[shown] = text
        if "LightningCLI" in text:
            self.cli_files.add(shown)
        self.top_names[shown] = simple_assignments(module.body)
        self.config_objects[shown] = config_defaults(module)
        self.definitions[shown] = {
            node.name
            for node in module.body
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self.functions[shown] = {
            node.name: node
            for node in module.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self.classes[shown] = {
            node.name: node for node in module.body if isinstance(node, ast.ClassDef)
        }
        self.star_imports[shown] = [
            node.module
            for node in module.body
            if isinstance(node, ast.ImportFrom)
            and node.module
            and any(alias.name == "*" for alias in node.names)
        ]
        if adds_to_sys_path(module):
            self.path_adders.add(shown)
        self._linked = None
        self._members = None
        self._by_group = {}
        if not own_options:
            shared = option_defaults(module) if any(m in text for m in MARKERS) else {}
            self.shared_parsers[shown] = _Parser(shown, module, shared) if shared else None
            return
        paths = module_config_tree(module)
        if paths:
            self.trees.append(_Tree(shown, module, paths))
        if not any(marker in text for marker in MARKERS):
            return
        options = option_defaults(module)
        if options:
            self.parsers.append(_Parser(shown, module, options))

    def config(self, reader: str, node: ast.expr) -> Optional[Value]:
        """`cfg.TRAIN.workers` read in `reader`: the default a config tree of the run
        gives the longest path it ends with (at least two names, or one below the object:
        `cfg.workers`), or None when no tree of the run sets it."""
        chain = attribute_path(node)
        if chain is None or len(chain) < 2:
            return None
        text = ast.unparse(node)
        for length in range(len(chain) - 1, 0, -1):
            path = chain[-length:]
            trees = [
                t
                for t in self.trees
                if path in t.paths and (t.shown == reader or self.linked(reader, t.shown))
            ]
            if not trees:
                continue
            candidates = nearest(reader, trees)
            found = [(t, t.default(path)) for t in candidates]
            unknowns = [(t, v) for t, v in found if not v.known]
            if unknowns:
                tree, value = unknowns[0]
                where = tree.paths[path][0]
                return Value(
                    False, None, text, f"{where} in {tree.shown}: not determined ({value.source})"
                )
            places = _places([f"{t.paths[path][0]} = {v.value!r} in {t.shown}" for t, v in found])
            if len({repr(v.value) for _, v in found}) > 1:
                return Value(False, None, text, f"the config trees of this run disagree: {places}")
            return Value(True, found[0][1].value, text, f"config default {places}")
        return (
            self._module_constant(reader, chain, text)
            or self.config_object(reader, chain, text)
            or self.config_file(reader, chain, text)
        )

    def config_file(self, reader: str, chain: tuple[str, ...], text: str) -> Optional[Value]:
        """`args.workers` where `reader` loads a config file its source names and wraps
        the loaded dict in an object read by attribute (config_files.py): the value the
        file gives the path after the object's name, None when no such file sets it."""
        start = 2 if chain[0] == "self" else 1
        if len(chain) <= start:
            return None
        loads = [load for load in self.config_loads(reader) if load.wrapped]
        found: list[tuple[Any, str]] = []
        for load in loads:
            skip = start
            if load.heads is not None:  # handed in: read through its own chains only
                heads = [h for h in load.heads if chain[: len(h)] == h and len(chain) > len(h)]
                if not heads:
                    continue
                skip = len(heads[0])
            try:
                hit = load.lookup(chain[skip:])
            except config_files.Unknown as why:
                return Value(False, None, text, str(why))
            if hit is not None:
                found.append(hit)
        if not found:
            return None
        places = _places([where for _, where in found])
        if len({repr(value) for value, _ in found}) > 1:
            return Value(False, None, text, f"the config files of this run disagree: {places}")
        value = found[0][0]
        if not _plain(value):
            return Value(False, None, text, f"{places} is not a plain value")
        return Value(True, value, text, f"config file {places}")

    def config_loads(self, reader: str) -> list[config_files.Load]:
        """The config files `reader` loads (config_files.py), read once per file."""
        if reader not in self._loads:
            self._loads[reader] = []  # a path read while they are found (no cycle)
            self._loads[reader] = self._config_loads(reader)
        return self._loads[reader]

    def _config_loads(self, reader: str) -> list[config_files.Load]:
        module = self.modules.get(reader)
        text = self.texts.get(reader, "")
        if module is None:
            return []
        composed = self._hydra_loads(reader, module) if "hydra" in text else []
        composed += self._handed_loads(reader) if "self." in text else []
        if "load" not in text:
            return composed
        return composed + self._file_loads(reader, module, text)

    def _handed_loads(self, reader: str) -> list[config_files.Load]:
        """The configs an entry point linked to `reader` loads from a file named on its
        command line and hands to classes of `reader` (handed_configs.py), with the
        project's shipped configs as candidates (config_files.chosen_load)."""
        classes = self.classes.get(reader, {})
        if not classes:
            return []
        found: list[config_files.Load] = []
        for entry, module in self.modules.items():
            text = self.texts.get(entry, "")
            if entry == reader or not ("Config(" in text or ".load(" in text):
                continue
            if not self.linked(reader, entry):
                continue
            aliases = self.aliases.get(entry, {})
            # a class of `reader` built in a third file may be handed another object
            elsewhere = {
                name
                for shown, names in self.called.items()
                if shown not in (reader, entry) and self.linked(reader, shown)
                for name in names
            }

            def receiving(
                qualname: str, entry: str = entry, elsewhere: set[str] = elsewhere
            ) -> Optional[ast.ClassDef]:
                name = qualname.rpartition(".")[2]
                if name in elsewhere or name not in classes:
                    return None
                shown = self._defining_file(entry, qualname, self.definitions)
                return classes[name] if shown == reader else None

            for place, name, interpolated in chosen_loads(module, aliases):
                heads = handed_heads(
                    module,
                    (place, name),
                    self.functions.get(entry, {}),
                    aliases,
                    receiving,
                    classes,
                )
                if not heads:
                    continue
                load = config_files.chosen_load(entry, interpolated, self.project_root)
                if load is not None:
                    found.append(dataclasses.replace(load, heads=heads))
        return found

    def cli_arguments(
        self, reader: str, cls: ast.ClassDef, init: ast.FunctionDef
    ) -> dict[str, tuple[bool, Any, str]]:
        """parameter -> (known, value, where) for the `__init__` parameters of `cls` (a
        class of `reader`) that the shipped configs of a LightningCLI it is handed to, in
        `reader` or a file linked to it, set (cli_configs.py); several CLIs must agree."""
        key = (reader, cls.name)
        if key not in self._cli_arguments:
            self._cli_arguments[key] = self._cli_class_arguments(reader, cls, init)
        return self._cli_arguments[key]

    def _cli_class_arguments(
        self, reader: str, cls: ast.ClassDef, init: ast.FunctionDef
    ) -> dict[str, tuple[bool, Any, str]]:
        found: list[dict[str, tuple[bool, Any, str]]] = []
        for entry in sorted(self.cli_files):
            module = self.modules[entry]
            if entry != reader and not self.linked(reader, entry):
                continue
            aliases = self.aliases.get(entry, {})
            for call in cli_calls(module, aliases):
                for handed, section in cli_classes(call):
                    if entry == reader:
                        named = isinstance(handed, ast.Name) and handed.id == cls.name
                    else:
                        qualname = _qualified(handed, aliases)
                        named = qualname.rpartition(".")[2] == cls.name and (
                            self._defining_file(entry, qualname, self.definitions) == reader
                        )
                    configs = self.cli_configs(entry) if named else []
                    if configs:
                        found.append(class_settings(configs, section, cls.name, init))
        if len(found) <= 1:
            return found[0] if found else {}
        merged: dict[str, tuple[bool, Any, str]] = {}
        for name in {n for settings in found for n in settings}:
            settled = [settings.get(name) for settings in found]
            first = settled[0]
            if first is not None and all(g == first for g in settled):
                merged[name] = first
            else:
                merged[name] = (False, None, "the LightningCLIs it is handed to disagree")
        return merged

    def cli_configs(self, entry: str) -> list[tuple[str, Mapping[str, Any]]]:
        """The LightningCLI configs the project of `entry` ships (cli_configs.py)."""
        if entry not in self._cli_configs:
            load = config_files.chosen_load(entry, True, self.project_root)
            candidates = [] if load is None else [(load.shown, load.data), *(load.others or ())]
            self._cli_configs[entry] = cli_configs(candidates)
        return self._cli_configs[entry]

    def cli_trainer(self, reader: str, key: str) -> Optional[tuple[bool, Any, str]]:
        """The Trainer setting `key` the shipped configs of `reader`'s LightningCLI give
        (cli_configs.trainer_setting); None when none sets it."""
        configs = self.cli_configs(reader)
        return trainer_setting(configs, key) if configs else None

    def _hydra_loads(self, reader: str, module: ast.Module) -> list[config_files.Load]:
        """The primary configs of `@hydra.main(...)` on the functions of `reader`."""
        aliases = self.aliases.get(reader, {})
        found: list[config_files.Load] = []
        for node in ast.walk(module):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for decorator in node.decorator_list:
                if not (
                    isinstance(decorator, ast.Call)
                    and _qualified(decorator.func, aliases) == "hydra.main"
                ):
                    continue
                load = config_files.hydra_load(reader, decorator, self.project_root)
                if load is not None:
                    found.append(load)
        return found

    def _file_loads(self, reader: str, module: ast.Module, text: str) -> list[config_files.Load]:
        """The config files `reader` loads with yaml/json (loaded_path), directly or
        through a loader function of the run."""
        # a load needs a loader named in the reader or in a file of the run it is linked
        # to (most files say "DataLoader" and load no config: walking each of their
        # functions for loads took a tenth of the corpus audit)
        loading = [
            shown
            for shown, other_text in self.texts.items()
            if config_files.names_a_loader(other_text)
            and (shown == reader or self.linked(reader, shown))
        ]
        if not loading:
            return []
        # the names of the functions that load the file their parameter names: only a
        # call of one of them can be an indirect load
        loader_names = {
            name.rsplit(".", 1)[-1]
            for shown in loading
            for name, function in self.functions.get(shown, {}).items()
            if config_files.loaded_path(function) is not None
        }
        aliases = self.aliases.get(reader, {})
        scope = self.module_scope(reader)
        found: list[config_files.Load] = []
        places: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.Module] = [module]
        places += [
            n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        for place in places:
            direct = config_files.loaded_path(place) if reader in loading else None
            if direct is not None:
                inner = scope if isinstance(place, ast.Module) else scope.inside(place)
                function = place if not isinstance(place, ast.Module) else None
                load = self._load(reader, direct[0], inner, function)
                if load is not None:
                    found.append(load)
            if not loader_names:
                continue
            for node in config_files.own_nodes(place):
                if not isinstance(node, ast.Call) or not node.args:
                    continue
                if isinstance(node.func, ast.Name):
                    called = node.func.id
                elif isinstance(node.func, ast.Attribute):
                    called = node.func.attr
                else:
                    continue
                if called not in loader_names:
                    continue
                inner = scope if isinstance(place, ast.Module) else scope.inside(place)
                loader = self._loader(reader, _qualified(node.func, aliases))
                if loader is None:
                    continue
                position, function = loader
                if position < len(node.args):
                    load = self._load(reader, node.args[position], inner, function)
                    if load is not None:
                        found.append(load)
        return found

    def _loader(
        self, reader: str, qualname: str
    ) -> Optional[tuple[int, ast.FunctionDef | ast.AsyncFunctionDef]]:
        """(the position of the path parameter, the function) when `qualname` names a
        function of `reader` or of a linked file of the run that loads the config file
        its parameter names (`load_cfg_from_cfg_file(file)`)."""
        function: Optional[Function] = self.functions.get(reader, {}).get(qualname)
        if function is None:
            foreign = self.function_elsewhere(reader, qualname)
            function = foreign.function if foreign is not None else None
        if function is None:
            return None
        loaded = config_files.loaded_path(function)
        if loaded is None or not isinstance(loaded[0], ast.Name):
            return None
        params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
        if loaded[0].id not in params:
            return None
        return params.index(loaded[0].id), function

    def _load(
        self,
        reader: str,
        path: ast.expr,
        scope: Scope,
        function: Optional[ast.FunctionDef | ast.AsyncFunctionDef],
    ) -> Optional[config_files.Load]:
        """The file a load reads when `path` settles to a name found on disk."""
        named = resolve(path, scope, 1)
        if not (named.known and isinstance(named.value, str)):
            return None
        where = config_files.config_path(reader, named.value, self.project_root)
        data = config_files.read_config(where) if where is not None else None
        if data is None:
            return None
        return config_files.Load(
            named.value,
            data,
            function is not None and config_files.wraps(function),
            function is not None and config_files.flattens(function),
        )

    def config_data(self, reader: str, relative: str) -> Optional[Mapping[str, Any]]:
        """What the config file `relative` (a path the source of `reader` spells out)
        holds, found beside it or at its project's root; None when not found or not read."""
        where = config_files.config_path(reader, relative, self.project_root)
        return config_files.read_config(where) if where is not None else None

    def imported(self, reader: str, name: str) -> Optional[tuple[ast.expr, Scope]]:
        """What the one file of the run `reader` imports `name` from (`from config import
        NUM_WORKERS as workers`) assigns it at its top level, with that file's module scope
        to read it in; None when no linked file of the run is that module or assigns it."""
        origin = self.from_imports.get(reader, {}).get(name)
        if origin is None:
            return None
        module, original = origin
        shown = self._defining_file(reader, f"{module}.{original}", self.top_names)
        if shown is None:
            return None
        return self.top_names[shown][original], self.module_scope(shown)

    def module_scope(self, shown: str) -> Scope:
        """The module scope of a file of the run, with the run's links of its own."""
        if shown not in self._scopes:
            scope = Scope.of_module(self.modules[shown])
            scope.imported = functools.partial(self.imported, shown)
            scope.configs = functools.partial(self.config, shown)
            self._scopes[shown] = scope
        return self._scopes[shown]

    def model_kind(self, reader: str, qualname: str, depth: int = 0) -> Optional[str]:
        """ "conv" or "matmul" for the model class or factory `qualname` (`models.net.UNet`,
        imported by `reader`) by its layers in the file of the run that defines it
        (class_kinds.py), following re-exports (`models/__init__.py` importing it from
        `.unet`); None when no linked file of the run defines it or its layers do not say."""
        key = (reader, qualname)
        if key in self._kinds:
            return self._kinds[key]
        self._kinds[key] = None  # a cycle of re-exports ends here
        name = qualname.rpartition(".")[2]
        kind: Optional[str] = None
        shown = self._defining_file(reader, qualname, self.definitions)
        if shown is not None:
            kind = definition_kind(
                self.modules[shown], name, functools.partial(self._imported_kind, shown), depth
            )
        else:
            exporter = self._defining_file(reader, qualname, self.from_imports)
            if exporter is not None and depth < MAX_KIND_DEPTH:
                module, original = self.from_imports[exporter][name]
                kind = self.model_kind(exporter, f"{module}.{original}", depth + 1)
        self._kinds[key] = kind
        return kind

    def thread_class(self, reader: str, qualname: str) -> bool:
        """Whether `qualname` (`kospeech.trainer.SupervisedTrainer`, imported by `reader`)
        is a class a file of the run defines (following re-exports) whose `num_workers`
        parameter starts no DataLoader workers (thread_workers.reaches_no_loader)."""
        found = self._follow_class(reader, qualname, 0)
        if found is None:
            return False
        cls, resolver = found
        return reaches_no_loader(cls, "num_workers", None, resolver)

    def _run_class(
        self, shown: str, name: str, depth: int = 0
    ) -> Optional[tuple[ast.ClassDef, Any]]:
        """The class of the run that `name`, called in the run's file `shown`, names,
        with the resolver of the names its own file calls; None when out of sight."""
        own = self.classes.get(shown, {}).get(name)
        if own is not None:
            return own, functools.partial(self._run_class, shown)
        if "." in name:
            head, _, rest = name.partition(".")
            bound = self.aliases.get(shown, {}).get(head)
            qualname = f"{bound}.{rest}" if bound is not None else None
        else:
            origin = self.from_imports.get(shown, {}).get(name)
            qualname = f"{origin[0]}.{origin[1]}" if origin is not None else None
        return self._follow_class(shown, qualname, depth) if qualname is not None else None

    def _follow_class(
        self, reader: str, qualname: str, depth: int
    ) -> Optional[tuple[ast.ClassDef, Any]]:
        """The class `qualname` (imported by `reader`) in the file of the run that defines
        it, following re-exports as model_kind does, with its file's resolver."""
        name = qualname.rpartition(".")[2]
        shown = self._defining_file(reader, qualname, self.classes)
        if shown is not None:
            return self.classes[shown][name], functools.partial(self._run_class, shown)
        exporter = self._defining_file(reader, qualname, self.from_imports)
        if exporter is None or depth >= MAX_KIND_DEPTH:
            return None
        module, original = self.from_imports[exporter][name]
        return self._follow_class(exporter, f"{module}.{original}", depth + 1)

    def importer_benchmark(self, reader: str) -> Optional[tuple[str, bool]]:
        """(the file, the value) of `torch.backends.cudnn.benchmark = True/False` set by
        the one file of the run that imports `reader` (stargan's main.py sets it, then
        `from solver import Solver` trains): a process-wide setting the run's entry point
        makes holds for the module it imports. None when no file, or several, import it
        (which one runs is not in sight), or its settings disagree."""
        importers = {a for a, b in self.links if b == reader and a != reader}
        if len(importers) != 1:
            return None
        (importer,) = importers
        module = self.modules.get(importer)
        if module is None:
            return None
        aliases = self.aliases.get(importer, {})
        values: set[bool] = set()
        for node in module_nodes(module):
            if not (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, bool)
            ):
                continue
            if any(_qualified(t, aliases) == CUDNN_BENCHMARK for t in node.targets):
                values.add(node.value.value)
        return (importer, values.pop()) if len(values) == 1 else None

    def linear_model(self, reader: str, qualname: str, depth: int = 0) -> bool:
        """Whether the model class `qualname` (imported by `reader`) is one nn.Linear layer
        in the file of the run that defines it (class_kinds.linear_model), following
        re-exports as model_kind does."""
        name = qualname.rpartition(".")[2]
        shown = self._defining_file(reader, qualname, self.definitions)
        if shown is not None:
            return linear_model(self.modules[shown], name)
        exporter = self._defining_file(reader, qualname, self.from_imports)
        if exporter is None or depth >= MAX_KIND_DEPTH:
            return False
        module, original = self.from_imports[exporter][name]
        return self.linear_model(exporter, f"{module}.{original}", depth + 1)

    def model_traits(self, reader: str, qualname: str, depth: int = 0) -> frozenset[str]:
        """What the model class `qualname` (imported by `reader`) builds beyond its kind
        in the file of the run that defines it (class_kinds.layer_traits: "recurrent", "cells",
        "graph"), following re-exports as model_kind does."""
        name = qualname.rpartition(".")[2]
        shown = self._defining_file(reader, qualname, self.definitions)
        if shown is not None:
            return frozenset(layer_traits(self.modules[shown], name))
        exporter = self._defining_file(reader, qualname, self.from_imports)
        if exporter is None or depth >= MAX_KIND_DEPTH:
            return frozenset()
        module, original = self.from_imports[exporter][name]
        return self.model_traits(exporter, f"{module}.{original}", depth + 1)

    def rnn_model(
        self, reader: str, qualname: str, depth: int = 0
    ) -> Optional[tuple[tuple[Optional[str], str], ...]]:
        """The Linear layers of the RNN-only model class `qualname` (imported by `reader`)
        in the file of the run that defines it (class_kinds.rnn_linears), each with its
        output width read there (projections.written_kind: the module's constants and
        those it star-imports, `from params_model import *`); None for any other class,
        following re-exports as model_kind does."""
        name = qualname.rpartition(".")[2]
        shown = self._defining_file(reader, qualname, self.definitions)
        if shown is not None:
            constants = dict(self.constants.get(shown, {}))
            for module in self.star_imports.get(shown, []):
                files = [
                    other
                    for other in self.constants
                    if other != shown and file_of_module(other, module)
                ]
                if len(files) == 1:
                    constants = {**self.constants[files[0]], **constants}
            read = functools.partial(written_kind, constants=constants)
            found = rnn_linears(self.modules[shown], name, read)
            return None if found is None else tuple(found)
        exporter = self._defining_file(reader, qualname, self.from_imports)
        if exporter is None or depth >= MAX_KIND_DEPTH:
            return None
        module, original = self.from_imports[exporter][name]
        return self.rnn_model(exporter, f"{module}.{original}", depth + 1)

    def _imported_kind(self, shown: str, name: str, depth: int) -> Optional[str]:
        """The kind of a name the run's file `shown` imports (`from .backbone import
        ResNetBackbone`), in the file of the run that defines it; a dotted name goes
        through the module it starts from (`resnet.generate_model` with `from models
        import resnet`: models/resnet.py's generate_model)."""
        if "." in name:
            head, _, rest = name.partition(".")
            bound = self.aliases.get(shown, {}).get(head)
            if bound is None or depth > MAX_KIND_DEPTH:
                return None
            return self.model_kind(shown, f"{bound}.{rest}", depth)
        origin = self.from_imports.get(shown, {}).get(name)
        if origin is None or depth > MAX_KIND_DEPTH:
            return None
        return self.model_kind(shown, f"{origin[0]}.{origin[1]}", depth)

    def config_object(self, reader: str, chain: tuple[str, ...], text: str) -> Optional[Value]:
        """`cfg.num_workers` where `cfg` is an object of a config class another file of the
        run, linked to `reader`, defines (`class Config: num_workers = 4`, a dataclass
        field; configs.config_defaults): that default when every such file agrees."""
        if chain[0] == "self" and len(chain) < 3:  # `self.workers`: the object's own
            return None
        attribute = chain[-1]
        found = [
            (shown, where, expr)
            for shown, objects in self.config_objects.items()
            if shown != reader and attribute in objects and self.linked(reader, shown)
            for where, expr in objects[attribute]
        ]
        if not found:
            return None
        if len({ast.dump(expr) for _, _, expr in found}) > 1:
            places = _places([f"{where} in {shown}" for shown, where, _ in found])
            return Value(False, None, text, f"the config defaults of this run differ ({places})")
        shown, where, expr = found[0]
        value = resolve(expr, self.module_scope(shown), 1)
        return Value(
            value.known,
            value.value,
            text,
            f"config default {where} = {ast.unparse(expr)} in {shown}",
        )

    def class_definition(
        self, reader: str, qualname: str, depth: int = 0
    ) -> Optional[tuple[ast.ClassDef, dict[str, str]]]:
        """The class `qualname` (`arguments.MyTrainingArguments`, imported by `reader`)
        as the one linked file of the run that defines it writes it, with that file's
        import aliases to read its bases, following re-exports as model_kind does
        (`samplers/__init__.py` importing it from `.iteration_based_batch_sampler`);
        None when no such file is in the run."""
        shown = self._defining_file(reader, qualname, self.definitions)
        if shown is None:
            exporter = self._defining_file(reader, qualname, self.from_imports)
            if exporter is None or depth >= MAX_KIND_DEPTH:
                return None
            module, original = self.from_imports[exporter][qualname.rpartition(".")[2]]
            return self.class_definition(exporter, f"{module}.{original}", depth + 1)
        name = qualname.rpartition(".")[2]
        for node in self.modules[shown].body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return node, self.aliases[shown]
        return None

    def classes_of_file(self, shown: str) -> dict[str, ast.ClassDef]:
        """The top-level classes of the run's file `shown`, by name (a maker function
        of that file builds its batch sampler from one: iteration_samplers.py)."""
        module = self.modules.get(shown)
        if module is None:
            return {}
        return {node.name: node for node in module.body if isinstance(node, ast.ClassDef)}

    def reads_attribute(self, reader: str, attribute: str) -> bool:
        """Whether any file of the run reads an attribute of that name (`x.test_loader`
        loaded, or the string 'test_loader', as getattr would take it); the names are
        gathered once per run. `reader` is the asking file (read too)."""
        if self._attribute_reads is None or self._attribute_files != len(self.modules):
            names: set[str] = set()
            for module in self.modules.values():
                for node in module_nodes(module):
                    if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store):
                        names.add(node.attr)
                    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                        names.add(node.value)
            self._attribute_reads = names
            self._attribute_files = len(self.modules)
        return attribute in self._attribute_reads or reader not in self.modules

    def counter_properties(self, reader: str, methods: tuple[str, ...]) -> frozenset[str]:
        """The properties that read the optimizer's device step counter on the host
        (`def step(self): return int(self.optimizer.iterations)`, tf_values.counter_property)
        of the classes, in the files of the run linked to `reader`, that have one of the
        step `methods` (`train_step`, a method or set in one: `self.train_step =
        tf.function(...)`): what `model.step` reads on an object whose class is out of
        sight of `reader` and whose `model.train_step(...)` it calls. A name some such
        class defines otherwise is left out (which class it is is not in sight)."""
        key = (reader, ",".join(methods))
        if key not in self._counters:
            self._counters[key] = self._counter_properties(reader, methods)
        return self._counters[key]

    def _counter_properties(self, reader: str, methods: tuple[str, ...]) -> frozenset[str]:
        found: dict[str, bool] = {}
        for shown, classes in self.classes.items():
            if shown == reader or not classes or not self.linked(reader, shown):
                continue
            for cls in classes.values():
                members = class_methods(self.modules[shown], cls)
                if not any(m in members or _sets_member(members, m) for m in methods):
                    continue
                for name, function in members.items():
                    if name not in methods:
                        found[name] = found.get(name, True) and counter_property(function)
        return frozenset(name for name, reads in found.items() if reads)

    def defining_file(self, reader: str, qualname: str) -> Optional[str]:
        """The one file of the run, linked to `reader`, that defines the top-level class
        or function `qualname` (`trainer.trainer_synapse`) imported by `reader`."""
        return self._defining_file(reader, qualname, self.definitions)

    def exported_definition(
        self, reader: str, qualname: str, depth: int = 0
    ) -> Optional[tuple[str, str]]:
        """(the file, the name) of the top-level class or function `qualname` imported by
        `reader` (defining_file), following re-exports as model_kind does: kospeech's
        `from kospeech.trainer import SupervisedTrainer`, which `kospeech/trainer/
        __init__.py` imports from `.supervised_trainer`; None when out of sight."""
        module, _, name = qualname.rpartition(".")
        shown = self._defining_file(reader, qualname, self.definitions)
        if shown is not None:
            return shown, name
        if depth >= MAX_KIND_DEPTH:
            return None
        exporter = self._defining_file(reader, qualname, self.from_imports)
        if exporter is not None:
            module, original = self.from_imports[exporter][name]
            return self.exported_definition(exporter, f"{module}.{original}", depth + 1)
        # `from .general import *` in `lib/utils/__init__.py`: the one module it names
        # that defines it
        found = {
            located
            for exporter, modules in self.star_imports.items()
            if modules
            and exporter != reader
            and module
            and file_of_module(exporter, module)
            and self.linked(reader, exporter)
            for star in modules
            for located in [self.exported_definition(exporter, f"{star}.{name}", depth + 1)]
            if located is not None
        }
        return found.pop() if len(found) == 1 else None

    def exported_function(self, reader: str, qualname: str) -> Optional[Foreign]:
        """The top-level function `qualname` names in `reader` (exported_definition:
        `utils.reproducibility` through `lib/utils/__init__.py`'s star import), with its
        file's import aliases; None when out of sight or not a function."""
        key = (reader, f"{qualname}:exported")
        if key not in self._foreign:
            found = self.exported_definition(reader, qualname)
            self._foreign[key] = self._exported(*found) if found is not None else None
        return self._foreign[key]

    def _exported(self, shown: str, name: str) -> Optional[Foreign]:
        function = self.functions.get(shown, {}).get(name)
        if function is None:
            return None
        return Foreign(shown, function, self.aliases[shown])

    def held_in_memory(self, reader: str, qualname: str) -> Optional[str]:
        """Why the Dataset class `qualname` (`windows.Windows`, imported by `reader`)
        serves samples from memory, when a file of the run linked to `reader` defines it
        so (datasets.in_memory), or None."""
        name = qualname.rpartition(".")[2]
        shown = self._defining_file(reader, qualname, self.in_memory)
        return f"{self.in_memory[shown][name]} (in {shown})" if shown is not None else None

    def padded_batches(self, reader: str, qualname: str) -> Optional[str]:
        """Where the collate function or class `qualname` (`data_utils.TextMelCollate`,
        or a DataLoader subclass installing one, imported by `reader`) pads each batch to
        its longest sample, when one file of the run linked to `reader` defines it so
        (padded_batches.py); else None."""
        name = qualname.rpartition(".")[2]
        shown = self._defining_file(reader, qualname, self.padded)
        if shown is None:  # re-exported (`from kospeech.data import AudioDataLoader`)
            found = self.exported_definition(reader, qualname)
            shown, name = found if found is not None else (None, name)
        if shown is None or name not in self.padded.get(shown, {}):
            return None
        return f"{self.padded[shown][name]} in {shown}"

    def maker(self, reader: str, qualname: str) -> Optional[tuple[str, frozenset[str]]]:
        """(the file, the DataLoader keywords it sets itself) for the loader maker
        `qualname` (`dataloaders.make_data_loader`, imported by `reader`) when one file of
        the run linked to `reader` defines it as a maker forwarding the caller's
        `**kwargs` (forwarding_makers), else None."""
        name = qualname.rpartition(".")[2]
        shown = self._defining_file(reader, qualname, self.makers)
        return (shown, self.makers[shown][name]) if shown is not None else None

    def worker_parameter(self, reader: str, qualname: str) -> Optional[tuple[str, int, str]]:
        """(the file, the position, the name) of the parameter the loader maker `qualname`
        (`test._create_validation_data_loader`, imported by `reader`) hands each of its
        DataLoaders as `num_workers=` (worker_parameters), when one file of the run linked
        to `reader` defines it; else None."""
        name = qualname.rpartition(".")[2]
        shown = self._defining_file(reader, qualname, self.worker_params)
        if shown is None:
            return None
        position, parameter = self.worker_params[shown][name]
        return shown, position, parameter

    def splatted_option(self, reader: str, function: str, name: str) -> Optional[Value]:
        """Parameter `name` of `function`, a function or method of `reader` that nothing
        in `reader` calls, where every call of it in the other files of the run linked to
        `reader` hands it the parsed command line as keywords, `f(**vars(args))`, and
        passes `name` no other way (voxceleb_trainer's `trainer.evaluateFromList(
        **vars(args))` in trainSpeakerNet.py, whose `--nDataLoaderThread` defaults to 5):
        the default of that file's option `--name`, when all such calls agree. None when
        no other file calls it, a call passes anything else for it, or the caller's own
        parser (of the run) does not define the option."""
        found: list[Value] = []
        for shown, names in self.called.items():
            if function not in names or shown == reader or not self.linked(reader, shown):
                continue
            parser = next((p for p in self.parsers if p.shown == shown), None)
            if parser is None:
                parser = self.shared_parsers.get(shown)
            for node in module_nodes(self.modules[shown]):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if called != function:
                    continue
                splatted = [
                    k
                    for k in node.keywords
                    if k.arg is None
                    and isinstance(k.value, ast.Call)
                    and isinstance(k.value.func, ast.Name)
                    and k.value.func.id == "vars"
                    and len(k.value.args) == 1
                ]
                if (
                    len(splatted) != 1
                    or len(splatted) != sum(k.arg is None for k in node.keywords)
                    or node.args
                    or any(k.arg == name for k in node.keywords)
                    or parser is None
                    or name not in parser.options
                ):
                    return None
                value = parser.default(name)
                where = f"{parser.options[name][0]} defaults to {value.value!r} in {shown}"
                found.append(Value(value.known, value.value, name, f"{where} (**vars)"))
        if not found:
            return None
        unknown = next((v for v in found if not v.known), None)
        if unknown is not None:
            return Value(False, None, name, unknown.source)
        if len({repr(v.value) for v in found}) > 1:
            return Value(False, None, name, f"the calls of {function}() elsewhere disagree")
        return found[0]

    def function_elsewhere(self, reader: str, qualname: str) -> Optional[Foreign]:
        """The top-level function `qualname` names in `reader` (`commons.clip_grad_value_`
        with `import commons`; `accuracy` imported by `from utils import *` or `from .utils
        import accuracy`) when one file of the run linked to `reader` defines it, with
        that file's import aliases (foreign_helpers.py); else None."""
        key = (reader, qualname)
        if key not in self._foreign:
            self._foreign[key] = self._function_elsewhere(reader, qualname)
        return self._foreign[key]

    def _function_elsewhere(self, reader: str, qualname: str) -> Optional[Foreign]:
        found = self._defined_elsewhere(reader, qualname, self.functions)
        if found is None:
            return None
        shown, name = found
        # a package's API re-exported by its `__init__` (torchdiffeq's `odeint`): its own
        # body is read, not the package internals it calls (input checks of a solver,
        # which the user does not change)
        exported = self._defined_elsewhere(reader, qualname, self.functions, MAX_REEXPORTS)
        return Foreign(
            shown,
            self.functions[shown][name],
            self.aliases[shown],
            resolve=functools.partial(self.called_function, shown) if exported else None,
        )

    def called_function(self, reader: str, qualname: str) -> Optional[Foreign]:
        """The function a call in `reader`, a file of the run read for a step's syncs,
        names (foreign_helpers.py): a top-level function of `reader` itself, else one
        of another file (function_elsewhere); None when out of sight."""
        own = self.functions.get(reader, {}).get(qualname)
        if own is None:
            return self.function_elsewhere(reader, qualname)
        key = (reader, f"{qualname}()")
        if key not in self._foreign:
            resolve = functools.partial(self.called_function, reader)
            self._foreign[key] = Foreign(reader, own, self.aliases[reader], resolve=resolve)
        return self._foreign[key]

    def _defined_elsewhere(
        self, reader: str, qualname: str, defined: Mapping[str, Container[str]], depth: int = 0
    ) -> Optional[tuple[str, str]]:
        """(file, name) of the definition `qualname` names in `reader`: `commons.f` with
        `import commons`, `f` imported from a module or by `from utils import *`; or
        re-exported by the module it names (`from utils import cal_text_score` where
        utils/__init__.py does `from .util import *` or `from .util import
        cal_text_score`), through at most MAX_REEXPORTS such modules."""
        candidates = [qualname]
        if "." not in qualname:
            origin = self.from_imports.get(reader, {}).get(qualname)
            candidates = [f"{origin[0]}.{origin[1]}"] if origin is not None else []
            candidates += [f"{m}.{qualname}" for m in self.star_imports.get(reader, [])]
        for candidate in candidates:
            shown = self._defining_file(reader, candidate, defined)
            if shown is not None:
                return shown, candidate.rpartition(".")[2]
        if depth >= MAX_REEXPORTS:
            return None
        for candidate in candidates:
            # the one module of the run it names, importing the name from another
            module, _, name = candidate.rpartition(".")
            exporters = [
                shown
                for shown, imported in self.from_imports.items()
                if shown != reader
                and module
                and (name in imported or self.star_imports.get(shown))
                and name not in self.definitions.get(shown, ())
                and file_of_module(shown, module)
                and self.linked(reader, shown)
            ]
            if len(exporters) == 1:
                found = self._defined_elsewhere(exporters[0], name, defined, depth + 1)
                if found is not None:
                    return found
        return None

    def method_elsewhere(
        self, reader: str, qualname: str, names: tuple[str, ...]
    ) -> Optional[Foreign]:
        """The first of the methods `names` of the class `qualname` names in `reader`
        (`utils.MetricLogger`, `DiceLoss` from `from utils import DiceLoss`) that the one
        file of the run linked to `reader` defining it defines (its class or a base
        class of that file), read as `function_elsewhere`'s are; else None."""
        key = (reader, f"{qualname}:{','.join(names)}")
        if key not in self._foreign:
            self._foreign[key] = self._method_elsewhere(reader, qualname, names)
        return self._foreign[key]

    def _method_elsewhere(
        self, reader: str, qualname: str, names: tuple[str, ...]
    ) -> Optional[Foreign]:
        found = self._defined_elsewhere(reader, qualname, self.classes)
        if found is None:
            return None
        shown, name = found
        exported = self._defined_elsewhere(reader, qualname, self.classes, MAX_REEXPORTS)
        methods = class_methods(self.modules[shown], self.classes[shown][name])
        for method in names:
            if method in methods:
                # a re-exported class's methods are read, not what they call (see above)
                resolve = functools.partial(self.called_function, shown) if exported else None
                return Foreign(shown, methods[method], self.aliases[shown], methods, resolve)
        return None

    def handed_method(
        self,
        reader: str,
        function: str,
        position: Optional[int],
        parameter: str,
        names: tuple[str, ...],
    ) -> Optional[Foreign]:
        """The first of the methods `names` of the one class that the files of the run
        importing `reader` hand the parameter of its top-level `function` (VideoMAE's
        run_class_finetuning.py calling `train_one_epoch(..., loss_scaler, ...)` with
        `loss_scaler = NativeScaler()`, handed_instances.py), read in the file defining
        that class (method_elsewhere); None when no such file calls it, or they hand
        different classes or anything else."""
        found: set[tuple[str, str]] = set()
        for shown, module in self.modules.items():
            if shown == reader or not self.linked(reader, shown):
                continue
            if function not in self.called.get(shown, set()):
                continue
            aliases = self.aliases.get(shown, {})

            def calls_function(call: ast.Call, aliases: dict[str, str] = aliases) -> bool:
                qualname = _qualified(call.func, aliases)
                module_name, _, name = qualname.rpartition(".")
                return (
                    name == function and bool(module_name) and file_of_module(reader, module_name)
                )

            cls = handed_class(
                module, calls_function, position, parameter, functools.partial(_dotted, aliases)
            )
            if cls is None:
                if any(isinstance(n, ast.Call) and calls_function(n) for n in module_nodes(module)):
                    return None  # a caller handing something else: which one runs is unknown
                continue
            found.add((shown, cls))
        if len(found) != 1:
            return None
        ((shown, cls),) = found
        return self.method_elsewhere(shown, cls, names)

    def _defining_file(
        self, reader: str, qualname: str, defined: Mapping[str, Container[str]]
    ) -> Optional[str]:
        """The one file of the run, linked to `reader`, whose module `qualname` names and
        whose entry in `defined` (file -> the names it defines) holds its last part."""
        module, _, name = qualname.rpartition(".")
        if not module or not name:
            return None
        # only the files of `reader`'s group: scanning all of `defined` per lookup took N²
        # when every file of a run of N imports the same library name (`from
        # torch.utils.data import DataLoader` in N `data.py`)
        files = [
            shown
            for shown in self._group_files(reader)
            if shown != reader and name in defined.get(shown, ()) and file_of_module(shown, module)
        ]
        return files[0] if len(files) == 1 else None

    def _group_files(self, reader: str) -> list[str]:
        """The files linked to `reader` by imports (its group), itself included."""
        groups = self._groups()
        group = groups.get(reader)
        if group is None:
            return []
        if self._members is None:
            members: dict[int, list[str]] = {}
            for shown, number in groups.items():
                members.setdefault(number, []).append(shown)
            self._members = members
        return self._members.get(group, [])

    def _module_constant(self, reader: str, chain: tuple[str, ...], text: str) -> Optional[Value]:
        """`cfg.NUM_WORKERS` with `import config as cfg`: the constant config.py of the
        run, linked to `reader` by that import, sets at its top level (module_constants)."""
        if len(chain) != 2:
            return None
        alias, name = chain
        module = self.aliases.get(reader, {}).get(alias)
        if module is None:
            return None
        files = [
            shown
            for shown, constants in self.constants.items()
            if shown != reader
            and name in constants
            and file_of_module(shown, module)
            and self.linked(reader, shown)
        ]
        if len(files) != 1:
            return None
        value = self.constants[files[0]][name].value
        return Value(True, value, text, f"{name} = {value!r} in {files[0]}")

    def helper_options(self, reader: str) -> dict[str, tuple[str, ast.expr]]:
        """dest -> (option, default) of the options that functions of other files of the
        run add to `reader`'s own parser: `train_util.add_training_arguments(parser,
        False)` where train_util.py's function calls `parser.add_argument(...)` on the
        parameter it is handed (kohya's sd-scripts). A default that file's source does not
        settle to a constant is left out (the option stays unknown), and so are the
        helpers those functions call with the parser in turn."""
        module = self.modules.get(reader)
        if module is None:
            return {}
        parsers = parser_names(module)
        found: dict[str, tuple[str, ast.expr]] = {}
        for node in module_nodes(module):
            if not isinstance(node, ast.Call) or not isinstance(
                node.func, (ast.Name, ast.Attribute)
            ):
                continue
            handed = [
                place
                for place, arg in enumerate(node.args)
                if isinstance(arg, ast.Name) and arg.id in parsers
            ]
            if not handed:
                continue
            located = self._defined_elsewhere(
                reader, _qualified(node.func, self.aliases.get(reader, {})), self.functions
            )
            if located is None:
                continue
            shown, name = located
            function = self.functions[shown][name]
            params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
            if handed[0] >= len(params):
                continue
            found.update(self._added_by(shown, function, params[handed[0]]))
        return found

    def _added_by(
        self, shown: str, function: Function, parameter: str
    ) -> dict[str, tuple[str, ast.expr]]:
        """The options `function` (of the run's file `shown`) adds to the parser it gets
        as `parameter`, with the defaults that file settles to constants."""
        body = ast.Module(body=list(function.body), type_ignores=[])
        if not any(
            isinstance(n, ast.Attribute)
            and n.attr in ("add_argument", "add_argument_group", "add_mutually_exclusive_group")
            and isinstance(n.value, ast.Name)
            and n.value.id == parameter
            for n in ast.walk(body)
        ):
            return {}
        scope = self.module_scope(shown)
        found: dict[str, tuple[str, ast.expr]] = {}
        for dest, (option, expr) in option_defaults(body).items():
            value = resolve(expr, scope, 1)
            if value.known and isinstance(value.value, (bool, int, float, str, type(None))):
                found[dest] = (f"{option} (in {shown})", ast.Constant(value.value))
        return found

    def lookup(
        self, reader: str, dest: str, text: str, caller: Optional[str] = None
    ) -> Optional[Value]:
        """The value of `dest` for the file `reader` (shown path), or None when no other
        file of the run defines that option. `caller`: the top-level function of `reader`
        it is read in, which narrows the entry points read only for their imports to
        those calling it (_shared_lookup)."""
        key = (reader, dest, caller)
        if key not in self._found:
            self._found[key] = self._lookup(reader, dest, caller)
        found = self._found[key]
        return None if found is None else Value(found.known, found.value, text, found.source)

    def linked(self, a: str, b: str) -> bool:
        """Whether files `a` and `b` of the run are linked by imports (one imports the
        other, or a chain of files of the run links them)."""
        group = self._groups().get(a)
        return group is not None and group == self._groups().get(b)

    def called_elsewhere(self, reader: str, name: str) -> bool:
        """Whether a file of the run other than `reader`, linked to it by imports, calls
        `name`: a function whose `**kwargs` no call in `reader` fills may be handed worker
        settings there (`make_data_loader(args, **kwargs)` in train.py)."""
        return any(
            name in names and path != reader and self.linked(reader, path)
            for path, names in self.called.items()
        )

    def _groups(self) -> dict[str, int]:
        if self._linked is None:
            self._linked = import_groups(self.imports, widened_importers(self), self.links)
        return self._linked

    def _linked_parsers(self, reader: str, dest: str) -> list[_Parser]:
        """The other files' parsers of `dest` linked to `reader` by imports, indexed by
        group once per option: comparing every file of a run of N with every parser took
        N² time."""
        groups = self._groups()
        if dest not in self._by_group:
            index: dict[int, list[_Parser]] = {}
            for parser in self.parsers:
                group = groups.get(parser.shown)
                if dest in parser.options and group is not None:
                    index.setdefault(group, []).append(parser)
            self._by_group[dest] = index
        group = groups.get(reader)
        if group is None:
            return []
        return [p for p in self._by_group[dest].get(group, []) if p.shown != reader]

    def _lookup(self, reader: str, dest: str, caller: Optional[str] = None) -> Optional[Value]:
        text = f"--{dest}"
        others = self._linked_parsers(reader, dest)
        if not others:
            return self._shared_lookup(reader, dest, text, caller)
        candidates = nearest(reader, others)
        found = [(p, p.default(dest)) for p in candidates]
        unknowns = [(p, v) for p, v in found if not v.known]
        if unknowns:
            parser, value = unknowns[0]
            option = parser.options[dest][0]
            return Value(
                False,
                None,
                text,
                f"{option} in {parser.shown}: default not determined ({value.source})",
            )
        values = {repr(v.value) for _, v in found}
        places = _places(
            [f"{p.options[dest][0]} defaults to {v.value!r} in {p.shown}" for p, v in found]
        )
        if len(values) > 1:
            return Value(False, None, text, f"the parsers of this run disagree: {places}")
        return Value(True, found[0][1].value, text, f"argparse {places}")

    def _shared_lookup(
        self, reader: str, dest: str, text: str, caller: Optional[str] = None
    ) -> Optional[Value]:
        """`dest` when only entry points read for their imports define it (several import
        `reader`: deep-text-recognition's train.py, test.py and demo.py, each with
        `--workers` default 4): which one runs is not in sight, so a value only when every
        such entry point linked to `reader` defines the option with the same default its
        source settles (whichever runs, that is the value); else None. Read in a function
        `caller` that some of them call and no other file of the run does (BIT_CD's
        `utils.get_loaders(args)`, called by main_cd.py only; demo.py, with its own
        `--num_workers`, calls another), only those callers' parsers count: the others
        never run that code."""
        shared = [
            (shown, parser)
            for shown, parser in self.shared_parsers.items()
            if shown != reader and self.linked(reader, shown)
        ]
        if caller is not None:
            callers = [(s, p) for s, p in shared if caller in self.called.get(s, set())]
            entries = {s for s, _ in shared}
            elsewhere = any(
                caller in names and path != reader and path not in entries
                for path, names in self.called.items()
            )
            if callers and not elsewhere:
                shared = callers
        if not shared or any(p is None or dest not in p.options for _, p in shared):
            return None
        found = [(p, p.default(dest)) for _, p in shared if p is not None]
        if not all(v.known for _, v in found) or len({repr(v.value) for _, v in found}) > 1:
            return None
        places = _places(
            [f"{p.options[dest][0]} defaults to {v.value!r} in {p.shown}" for p, v in found]
        )
        return Value(True, found[0][1].value, text, f"argparse {places}")


def _sets_member(methods: Mapping[str, Function], name: str) -> bool:
    """A method of the class assigns `self.<name>` (`self.train_step =
    tf.function(self._train_step)`)."""
    return any(
        isinstance(node, ast.Assign)
        and any(
            isinstance(t, ast.Attribute)
            and t.attr == name
            and isinstance(t.value, ast.Name)
            and t.value.id == "self"
            for t in node.targets
        )
        for function in methods.values()
        for node in module_nodes(function)
    )


def from_imports(module: ast.Module) -> dict[str, tuple[str, str]]:
    """local name -> (module, name) for each `from module import name [as local]`."""
    found: dict[str, tuple[str, str]] = {}
    for node in module_nodes(module):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if alias.name != "*":
                    found[alias.asname or alias.name] = (node.module, alias.name)
    return found


def called_names(module: ast.Module) -> set[str]:
    """The names a file calls, `f(...)` or `obj.f(...)` alike."""
    names = set()
    for node in module_nodes(module):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if isinstance(name, str):
                names.add(name)
    return names


def imported_modules(module: ast.Module) -> list[str]:
    """The dotted names a file imports: `import a.b` gives a.b, `from a import b` gives
    a and a.b (b may be a module), `from . import params` gives params."""
    found: list[str] = []
    for node in module_nodes(module):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            found += [base] if base else []
            found += [f"{base}.{a.name}" if base else a.name for a in node.names if a.name != "*"]
    return found


# name boundaries in a path: folders, and those of a flattened copy (`repo__a_b.py`)
SEPARATORS = r"[/\\_.-]"
FOLDERS = r"[/\\]"


def _parts(text: str, separators: str) -> tuple[str, ...]:
    """`a.b` -> ("a", "b"): the names of a dotted module (or path) cut at `separators`."""
    return tuple(part for part in re.split(separators, text) if part)


def _index(stems: dict[str, str], separators: str) -> dict[tuple[str, ...], list[tuple[str, str]]]:
    """Every trailing run of names of each file's path (a package's `__init__` dropped)
    -> (the file, the path before that run: the root an import of it is made from)."""
    found: dict[tuple[str, ...], list[tuple[str, str]]] = {}
    for shown, stem in stems.items():
        stem = re.sub(f"{separators}+__init__$", "", stem)
        names = [m for m in re.finditer(f"[^{separators[1:-1]}]+", stem)]
        for start in range(len(names)):
            key = tuple(m.group() for m in names[start:])
            found.setdefault(key, []).append((shown, stem[: names[start].start()]))
    return found


# The module a project's scripts import first to put its library folder on sys.path
# (`import _init_paths`: py-faster-rcnn's idiom, copied by CenterNet, HRNet, FairMOT...).
PATH_SETUP_MODULES = ("_init_paths", "init_paths")


def adds_to_sys_path(module: ast.Module) -> bool:
    """The file puts a folder on the import path (`sys.path.insert(0, lib_path)`)."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("insert", "append")
        and ast.unparse(n.func.value) == "sys.path"
        for n in module_nodes(module)
    )


def widened_importers(run: RunOptions) -> set[str]:
    """Files whose imports may name files of other folders of their project: they put a
    folder on sys.path themselves, or import a module that does (`import _init_paths`
    adding `src/lib`, then `from opts import opts` is `src/lib/opts.py`)."""
    adders = {_parts(re.sub(r"\.pyw?$", "", s), SEPARATORS)[-1] for s in run.path_adders}
    return {
        shown
        for shown, modules in run.imports.items()
        if shown in run.path_adders
        or any(m.rsplit(".", 1)[-1] in (*PATH_SETUP_MODULES, *adders) for m in modules)
    }


def project_root(shown: str) -> Optional[str]:
    """Where a sys.path folder of the file's project may lie: the folder above the
    file's own (`repo/tools/` adds `repo/lib`), or in a flattened copy the project's
    prefix (`repo__` of `repo__src_main.py`); None for a file with no folder."""
    if "__" in re.split(FOLDERS, shown)[-1]:
        return shown[: shown.rindex("__") + 2]
    folders = re.split(FOLDERS, shown)[:-2]
    return "/".join(folders) + "/" if folders and any(folders) else None


def import_groups(
    imports: dict[str, list[str]],
    widened: Optional[set[str]] = None,
    links: Sequence[tuple[str, str]] = (),
) -> dict[str, int]:
    """file -> a number shared by the files linked by imports (undirected). An import
    `a.b` names the file of the run whose path ends with folders `a/b` (or `a/b/
    __init__`), else, in a flattened copy of a project (`repo__a_b.py` for repo/a/b.py),
    the one whose name ends with the names `a`, `b` at name boundaries; either only when
    the importer lives under the root that path leaves (`repo/`, `repo__`: another
    project's `utils.py` is not the `utils` it imports), the nearest to the importer by
    path when several are. A `widened` importer (one that extends sys.path) may also
    name a file anywhere under its project's root (project_root). `links` are imports
    already resolved on disk (project_context.py)."""
    stems = {shown: re.sub(r"\.pyw?$", "", shown) for shown in imports}
    strict, loose = _index(stems, FOLDERS), _index(stems, SEPARATORS)
    parent = {shown: shown for shown in imports}

    def root(shown: str) -> str:
        while parent[shown] != shown:
            parent[shown] = parent[parent[shown]]
            shown = parent[shown]
        return shown

    for importer, modules in imports.items():
        wide = project_root(importer) if importer in (widened or set()) else None
        for dotted in modules:
            matches = [
                found
                for index, separators in ((strict, r"\."), (loose, SEPARATORS))
                for found, under in index.get(_parts(dotted, separators), [])
                if found != importer
                and (importer.startswith(under) or (wide is not None and under.startswith(wide)))
            ]
            if not matches:
                continue
            best = max(shared_prefix(importer, f) for f in matches)
            for found in matches:
                if shared_prefix(importer, found) == best:
                    parent[root(found)] = root(importer)
    for importer, imported in links:
        if importer in parent and imported in parent:
            parent[root(imported)] = root(importer)
    roots = sorted({root(shown) for shown in imports})
    numbers = {r: index for index, r in enumerate(roots)}
    return {shown: numbers[root(shown)] for shown in imports}


MAX_PLACES = 3  # the parsers (or trees) a value's source names, the rest counted


def _places(places: list[str]) -> str:
    """The places a value comes from, the first MAX_PLACES named: every file of a run of
    N, each naming the N parsers it agrees with, made N² of report."""
    shown = ", ".join(places[:MAX_PLACES])
    more = len(places) - MAX_PLACES
    return shown if more <= 0 else f"{shown} and {more} more"


def _in_memory_datasets(module: ast.Module) -> dict[str, str]:
    """The file's Dataset classes (a base named `...Dataset`) whose samples come from
    memory, with why (datasets.in_memory)."""
    found: dict[str, str] = {}
    for node in module_nodes(module):
        if isinstance(node, ast.ClassDef) and any(
            ast.unparse(b).endswith("Dataset") for b in node.bases
        ):
            why = in_memory(node, module)
            if why:
                found[node.name] = why
    return found


TORCH_DATALOADERS = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")


def forwarding_makers(module: ast.Module) -> dict[str, frozenset[str]]:
    """The file's top-level functions that build each of their DataLoaders with their own
    `**kwargs` passed on whole (`def make_data_loader(args, **kwargs): ...
    DataLoader(train_set, batch_size=args.batch_size, shuffle=True, **kwargs)`), with the
    keywords those DataLoaders set themselves: what the caller does not hand over, and
    the maker does not set, is DataLoader's default. A function that reads or changes
    its kwargs otherwise (`kwargs.setdefault(...)`, `kwargs["persistent_workers"] =
    True`), or builds a DataLoader without them, is left out: its settings are not only
    the caller's."""
    aliases = module_aliases(module)
    found: dict[str, frozenset[str]] = {}
    for node in module.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.args.kwarg:
            continue
        forwarded = node.args.kwarg.arg
        loaders = [
            n
            for n in ast.walk(node)
            if isinstance(n, ast.Call) and _qualified(n.func, aliases) in TORCH_DATALOADERS
        ]
        passes = [
            k
            for call in loaders
            for k in call.keywords
            if k.arg is None and isinstance(k.value, ast.Name) and k.value.id == forwarded
        ]
        uses = [n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == forwarded]
        if not loaders or len(passes) != len(loaders) or len(uses) != len(passes):
            continue
        if any(len([k for k in c.keywords if k.arg is None]) != 1 for c in loaders):
            continue  # another `**dict` merged in: settings from elsewhere too
        found[node.name] = frozenset(k.arg for c in loaders for k in c.keywords if k.arg)
    return found


def worker_parameters(module: ast.Module) -> dict[str, tuple[int, str]]:
    """The file's top-level functions every DataLoader of which gets `num_workers=` one
    parameter of the function as it is (`def _create_validation_data_loader(img_path,
    batch_size, img_size, n_cpu): ... DataLoader(..., num_workers=n_cpu)`): function ->
    (the parameter's position, -1 for a keyword-only one, its name). A caller's argument
    there is the loaders' worker count."""
    aliases = module_aliases(module)
    found: dict[str, tuple[int, str]] = {}
    for node in module.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        loaders = [
            n
            for n in ast.walk(node)
            if isinstance(n, ast.Call) and _qualified(n.func, aliases) in TORCH_DATALOADERS
        ]
        workers = {
            ast.unparse(k.value) if isinstance(k.value, ast.Name) else ""
            for call in loaders
            for k in call.keywords
            if k.arg == "num_workers"
        }
        if (
            not loaders
            or len(workers) != 1
            or any(not any(k.arg == "num_workers" for k in call.keywords) for call in loaders)
        ):
            continue
        (parameter,) = workers
        if any(
            isinstance(n, ast.Name) and n.id == parameter and isinstance(n.ctx, ast.Store)
            for n in ast.walk(node)
        ):
            continue  # `n_cpu = min(n_cpu, 4)`: not the caller's value as it is
        positional = [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
        if parameter in positional:
            found[node.name] = (positional.index(parameter), parameter)
        elif parameter in [a.arg for a in node.args.kwonlyargs]:
            found[node.name] = (-1, parameter)
    return found


def parser_names(module: ast.Module) -> set[str]:
    """Names the module binds to an argparse parser (`parser = argparse.ArgumentParser()`)."""
    found: set[str] = set()
    for node in module_nodes(module):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and ast.unparse(node.value.func).endswith("ArgumentParser")
        ):
            found.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return found


CUDNN_BENCHMARK = "torch.backends.cudnn.benchmark"


def _dotted(aliases: dict[str, str], node: ast.AST) -> Optional[str]:
    """`_qualified` for a name or attribute chain only."""
    probe = node
    while isinstance(probe, ast.Attribute):
        probe = probe.value
    return _qualified(node, aliases) if isinstance(probe, ast.Name) else None  # type: ignore[arg-type]


def _no_root(folder: Path) -> Optional[Path]:
    return None


def _plain(value: Any) -> bool:
    """A value a rule can weigh: a scalar, or a list of scalars."""
    if isinstance(value, (list, tuple)):
        return all(isinstance(v, (bool, int, float, str, type(None))) for v in value)
    return isinstance(value, (bool, int, float, str, type(None)))


def _qualified(node: ast.expr, aliases: dict[str, str]) -> str:
    """`DataLoader` with `from torch.utils.data import DataLoader` -> its dotted name."""
    head, _, rest = ast.unparse(node).partition(".")
    return aliases.get(head, head) + (f".{rest}" if rest else "")
