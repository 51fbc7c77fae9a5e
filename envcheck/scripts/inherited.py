"""`self.x` set by a base class's `__init__` of the same file.

torchgeo's `GeoDataModule.__init__(..., num_workers=0)` hands `num_workers` to
`super().__init__(dataset_class, batch_size, num_workers)`, and `BaseDataModule.__init__`
stores it: `self.num_workers` in a method of the subclass is that value. The walker
(analyze.py) reads a class's own `__init__`; this module adds what its base classes'
constructors in the file assign, each parameter bound to what the subclass passes up
(`super().__init__(...)` or `Base.__init__(self, ...)`) and otherwise to its default. A
parameter a `*args`/`**kwargs` may carry is left unknown; a subclass `__init__` that never
calls its base's gets nothing from it. A base named through the module's own alias
(`d2l = sys.modules[__name__]`, `class FashionMNIST(d2l.DataModule)`) is the file's class.
A constructor's `self.x = value` assignments are read here for the walker too, with the
arguments a `self.save_hyperparameters()` of the file keeps as attributes, and those
Lightning's keeps in `self.hparams` (key `hparams.<name>`).

Size: base-class constructors, Lightning hyperparameters and constructor arguments
passed back are one question (what `self.x` holds), kept in one module.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from envcheck.scripts.assignments import guarded_self_assignments, simple_assignments
from envcheck.scripts.device import LIGHTNING_ROOTS
from envcheck.scripts.index import function_owners, module_nodes, qualified_base
from envcheck.scripts.returns import self_aliases
from envcheck.scripts.values import HPARAMS, Scope, resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

Attributes = dict[str, tuple[ast.expr, Scope]]
MAX_DEPTH = 6
# Methods of `self.hparams` (a dict) that leave it as it is.
READ_ONLY = ("get", "items", "keys", "values", "copy")


@dataclass(frozen=True)
class Passed:
    """What the file's calls of one name pass, all together: the keywords, the most
    positional arguments one passes, and whether one spreads `*args` or `**kwargs`.
    Gathered once per name (analyze.Walker.passed_to): read anew for each of N functions
    of one name (a helper defined again before each call), N calls took N² time."""

    keywords: frozenset[str] = frozenset()
    positional: int = 0
    spread: bool = False

    @classmethod
    def of(cls, calls: list[ast.Call]) -> Passed:
        return cls(
            frozenset(k.arg for c in calls for k in c.keywords if k.arg is not None),
            max((len(c.args) for c in calls), default=0),
            any(
                any(k.arg is None for k in c.keywords)
                or any(isinstance(a, ast.Starred) for a in c.args)
                for c in calls
            ),
        )


def parameter_defaults(init: ast.FunctionDef, passed: Passed, skip: int = 1) -> dict[str, ast.expr]:
    """An `__init__`'s parameter defaults, less those the file's constructions of the class
    pass (`Model(workers=8)`, `passed`); none at all when one passes `*args` or
    `**kwargs`. With `skip=0`, a plain function's, less those its calls pass."""
    if passed.spread:
        return {}  # *args or **kwargs: not known which
    positional = [a.arg for a in [*init.args.posonlyargs, *init.args.args]]
    with_default = positional[len(positional) - len(init.args.defaults) :]
    defaults = dict(zip(with_default, init.args.defaults, strict=True))
    for arg, default in zip(init.args.kwonlyargs, init.args.kw_defaults, strict=True):
        if default is not None:
            defaults[arg.arg] = default
    for name in [*passed.keywords, *positional[skip : skip + passed.positional]]:  # after self
        defaults.pop(name, None)
    return defaults


def passed_back(
    walker: Walker, init: ast.FunctionDef, calls: list[ast.Call]
) -> dict[str, ast.expr]:
    """The defaults of parameters that the class's constructions of the file pass only
    from the class's own methods, each as what the object already holds for it
    (`Net(self.preprocessor, self.workers)` in a `copy()`, with `self.workers = workers`
    in `__init__`): the copy brings no value of its own, so the parameter keeps its
    default. Nothing when a call spreads `*args`/`**kwargs`."""
    positional = [a.arg for a in [*init.args.posonlyargs, *init.args.args]][1:]  # after self
    stored = {
        s.targets[0].attr: s.value.id
        for s in init.body
        if isinstance(s, ast.Assign)
        and len(s.targets) == 1
        and isinstance(s.targets[0], ast.Attribute)
        and isinstance(s.targets[0].value, ast.Name)
        and s.targets[0].value.id == "self"
        and isinstance(s.value, ast.Name)
    }
    cls = walker.owner_class(init)
    if cls is None or not stored:
        return {}
    methods = {id(s) for s in cls.body}
    owners = function_owners(walker.module, walker.index().function_nodes)
    given: dict[str, list[tuple[ast.expr, bool]]] = {}  # parameter -> (argument, own method)
    for call in calls:
        if any(k.arg is None for k in call.keywords) or any(
            isinstance(a, ast.Starred) for a in call.args
        ):
            return {}
        own = id(owners.get(id(call))) in methods
        pairs = [*zip(positional, call.args, strict=False)]
        pairs += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
        for name, value in pairs:
            given.setdefault(name, []).append((value, own))
    defaults = dict(
        zip(
            positional[len(positional) - len(init.args.defaults) :],
            init.args.defaults,
            strict=False,
        )
    )
    back: dict[str, ast.expr] = {}
    for name, arguments in given.items():
        if name in defaults and all(
            own
            and isinstance(value, ast.Attribute)
            and isinstance(value.value, ast.Name)
            and value.value.id == "self"
            and stored.get(value.attr) == name
            for value, own in arguments
        ):
            back[name] = defaults[name]
    return back


def constructed_values(
    walker: Walker, init: ast.FunctionDef, calls: list[ast.Call]
) -> dict[str, ast.expr]:
    """What the file's one construction of a class passes by keyword to its `__init__`,
    settled where the call is made (`CombinedLoss(target_str=self.targets)` in a trainer
    whose `targets="ef"` by default), as constants: the object's `self.x` then read at
    the run's defaults, so its branches off by default (`if "m" in self.target_str`)
    stay off (a `**kwargs` beside them cannot pass them again). A class built twice, or
    with positional arguments, gets nothing."""
    if len(calls) != 1 or calls[0].args:
        return {}
    call = calls[0]
    caller = function_owners(walker.module, walker.index().function_nodes).get(id(call))
    if caller is init or caller is None:
        return {}
    names = {a.arg for a in [*init.args.args, *init.args.kwonlyargs]}
    scope = walker.scope_of(caller)
    found: dict[str, ast.expr] = {}
    for keyword in call.keywords:
        if keyword.arg is None or keyword.arg not in names:
            continue
        value = resolve(keyword.value, scope)
        if value.known and isinstance(value.value, (str, int, float, bool, type(None))):
            found[keyword.arg] = ast.copy_location(ast.Constant(value.value), keyword.value)
    return found


def passed_arguments(function: ast.FunctionDef, calls: list[ast.Call]) -> dict[str, ast.expr]:
    """What the file's only call of a plain function passes to its parameters
    (`_create_data_loader(path, 64, args.n_cpu)`), where the argument reads the same
    inside the function: a constant, or a module-level name or attribute of one
    (`args.n_cpu`, `NUM_WORKERS`) that the function does not shadow. Beside `*args` or
    `**kwargs`, only what the call writes out (`main(use_wandb=args.wandb, **config)`:
    the spread cannot pass `use_wandb` again; positions before the `*args`)."""
    if len(calls) != 1:
        return {}
    call = calls[0]
    spread = next((i for i, a in enumerate(call.args) if isinstance(a, ast.Starred)), None)
    positional = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    local = {
        n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    } | {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    passed = dict(zip(positional, call.args[:spread], strict=False))
    passed.update({k.arg: k.value for k in call.keywords if k.arg in {*positional, *local}})
    return {name: expr for name, expr in passed.items() if _portable(expr, local)}


def _portable(expr: ast.expr, local: set[str]) -> bool:
    """A constant, or a name (or attribute chain on one) not bound inside the callee."""
    if isinstance(expr, ast.Constant):
        return True
    root = expr
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(root, ast.Name) and root.id not in local and root.id != "self"


def inherited_attributes(walker: Walker, cls: ast.ClassDef) -> Attributes:
    """`self.x` assignments the base classes' constructors of the file make for an
    instance of `cls`; the class's own `__init__` is not here."""
    if _file_base(walker, cls) is None:
        return {}
    init = _init(cls)
    scope: Optional[Scope] = None
    if init is not None:
        scope = walker.module_scope.inside(init)
        scope.defaults = parameter_defaults(init, walker.passed_to(cls.name))
    return _from_bases(walker, cls, init, scope, 0)


def _from_bases(
    walker: Walker,
    cls: ast.ClassDef,
    init: Optional[ast.FunctionDef],
    scope: Optional[Scope],
    depth: int,
) -> Attributes:
    """What the file base of `cls` assigns when `cls` (whose constructor is `init`, read in
    `scope`) is built."""
    base = _file_base(walker, cls)
    if base is None or depth > MAX_DEPTH:
        return {}
    base_init = _init(base)
    if base_init is None:  # the base's own base builds it
        return _from_bases(walker, base, init, scope, depth + 1)
    base_scope = walker.module_scope.inside(base_init)
    if init is None or scope is None:  # `cls` has no __init__: the base's runs as called
        base_scope.defaults = parameter_defaults(base_init, walker.passed_to(cls.name))
    else:
        call = _super_call(init, base)
        if call is None:
            return {}
        base_scope.defaults = _bound(call, base_init, scope)
    found = _from_bases(walker, base, base_init, base_scope, depth + 1)
    found.update(init_attributes(walker, base_init, base_scope))
    return found


def _bound(call: ast.Call, base_init: ast.FunctionDef, scope: Scope) -> dict[str, ast.expr]:
    """The base constructor's parameters as the subclass's call binds them: the values
    known in the subclass's scope, the base's defaults for the ones not passed."""
    positional = [a.arg for a in [*base_init.args.posonlyargs, *base_init.args.args]][1:]
    given: dict[str, ast.expr] = {}
    starred = any(isinstance(a, ast.Starred) for a in call.args)
    for name, arg in zip(positional, call.args, strict=False):
        if isinstance(arg, ast.Starred):
            break
        given[name] = arg
    spread = starred or any(k.arg is None for k in call.keywords)
    for keyword in call.keywords:
        if keyword.arg is not None:
            given[keyword.arg] = keyword.value
    bound: dict[str, ast.expr] = {}
    if not spread:
        bound = parameter_defaults(base_init, Passed())
    for name, expr in given.items():
        value = resolve(expr, scope)
        if value.known:
            bound[name] = ast.Constant(value.value)
        else:
            bound.pop(name, None)
    return bound


def kept_arguments(walker: Walker, init: ast.FunctionDef, scope: Scope) -> Attributes:
    """`self.save_hyperparameters()` in `init`, where the file's method of that name sets
    every argument of its caller as an attribute (`setattr(self, k, v)` over
    `inspect.getargvalues(inspect.currentframe().f_back)`, d2l's idiom): each parameter of
    `init` (less `ignore=[...]`) as `self.<parameter>`, read in `scope`."""
    calls = [
        (node.func.attr, node)
        for node in ast.walk(init)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    ]
    found: Attributes = {}
    if not calls:
        return found
    keepers = _argument_keepers(walker, {name for name, _ in calls})
    for name, node in calls:
        if name not in keepers:
            continue
        ignored: set[str] = set()
        for keyword in node.keywords:
            if keyword.arg == "ignore" and isinstance(keyword.value, (ast.List, ast.Tuple)):
                ignored |= {str(e.value) for e in keyword.value.elts if isinstance(e, ast.Constant)}
        for arg in [*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs][1:]:
            if arg.arg not in ignored and not arg.arg.startswith("_"):
                found[arg.arg] = (ast.Name(arg.arg, ast.Load()), scope)
    return found


def _argument_keepers(walker: Walker, names: set[str]) -> set[str]:
    """Those of `names` that are the file's methods setting their caller's arguments as
    attributes."""
    found: set[str] = set()
    for cls in walker.index().class_nodes:
        for method in cls.body:
            if not isinstance(method, ast.FunctionDef) or method.name not in names:
                continue
            end = method.end_lineno or method.lineno
            text = "\n".join(walker.lines[method.lineno - 1 : end])
            if "getargvalues" in text and "f_back" in text and "setattr(self" in text:
                found.add(method.name)
    return found


def lightning_hyperparameters(walker: Walker, init: ast.FunctionDef, scope: Scope) -> Attributes:
    """`self.save_hyperparameters()` in the `__init__` of a Lightning class (a
    LightningModule or LightningDataModule, through the file's classes), called on
    every construction (a statement of `init` itself, under no test): Lightning keeps
    each argument of `init` (those named, if any; less `ignore=[...]`) in `self.hparams`,
    so `self.hparams.num_workers` is the parameter, read in `scope` (its default unless
    the file's construction passes it). A parameter `init` reassigns, or one the file
    changes in `self.hparams` (`self.hparams.x = ...`, `self.hparams.update(...)`), is
    left out: what `self.hparams` holds then depends on the order of the calls."""
    cls = walker.owner_class(init)
    if cls is None or _defines(walker, "save_hyperparameters") or not _lightning(walker, cls, 0):
        return {}
    call = next((c for c in _own_calls(init, "save_hyperparameters")), None)
    changed = _changed_hyperparameters(walker.module)
    if call is None or changed is None:
        return {}
    named = [a.value for a in call.args if isinstance(a, ast.Constant)]
    if len(named) != len(call.args) or not all(isinstance(n, str) for n in named):
        return {}  # `save_hyperparameters(config)`: the hparams are that object's
    ignored = _ignored(call)
    reassigned = {
        n.id for n in ast.walk(init) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    found: Attributes = {}
    for arg in [*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs][1:]:
        name = arg.arg
        if (named and name not in named) or name in ignored | reassigned | changed:
            continue
        found[HPARAMS + name] = (ast.Name(name, ast.Load()), scope)
    return found


def _own_calls(init: ast.FunctionDef, method: str) -> list[ast.Call]:
    """`self.<method>(...)` calls made as statements of `init`'s own body."""
    return [
        s.value
        for s in init.body
        if isinstance(s, ast.Expr)
        and isinstance(s.value, ast.Call)
        and isinstance(s.value.func, ast.Attribute)
        and s.value.func.attr == method
        and isinstance(s.value.func.value, ast.Name)
        and s.value.func.value.id == "self"
    ]


def _ignored(call: ast.Call) -> set[str]:
    """The names `ignore=` gives (`ignore=["net"]`, `ignore="net"`)."""
    for keyword in call.keywords:
        if keyword.arg != "ignore":
            continue
        given = keyword.value
        values = given.elts if isinstance(given, (ast.List, ast.Tuple)) else [given]
        return {str(v.value) for v in values if isinstance(v, ast.Constant)}
    return set()


def _changed_hyperparameters(module: ast.Module) -> Optional[set[str]]:
    """The names the file sets in `self.hparams` (`self.hparams.x = ...`,
    `self.hparams["x"] = ...`); None when it changes it otherwise (`self.hparams.update(...)`,
    a key it computes, `self.hparams = ...`), which may touch any name."""
    found: set[str] = set()
    for node in module_nodes(module):
        stored = not isinstance(getattr(node, "ctx", ast.Load()), ast.Load)
        if _is_hparams(node) and stored:
            return None  # `self.hparams = ...`
        if isinstance(node, ast.Attribute) and _is_hparams(node.value) and stored:
            found.add(node.attr)
        if isinstance(node, ast.Subscript) and _is_hparams(node.value) and stored:
            key = node.slice
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None
            found.add(key.value)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and _is_hparams(node.func.value)
            and node.func.attr not in READ_ONLY
        ):
            return None  # `self.hparams.update(...)`, `.pop(...)`, `.setdefault(...)`
    return found


def _is_hparams(node: ast.AST) -> bool:
    """`self.hparams` (or Lightning's own `self._hparams`)."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr in ("hparams", "_hparams")
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _defines(walker: Walker, method: str) -> bool:
    """A class of the file defines `method` itself (the methods of the file's classes
    listed once per file, not once per `__init__` read: N classes took N²)."""
    module = walker.module
    names: Optional[set[str]] = module.__dict__.get("_envcheck_class_methods")
    if names is None:
        names = {
            s.name
            for cls in walker.index().class_nodes
            for s in cls.body
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        setattr(module, "_envcheck_class_methods", names)  # noqa: B010 - AST nodes have no slot
    return method in names


def _lightning(walker: Walker, cls: ast.ClassDef, depth: int) -> bool:
    """`cls` derives from a Lightning class, directly or through classes of the file."""
    if depth > MAX_DEPTH:
        return False
    for base in cls.bases:
        qualified = qualified_base(base, walker.aliases)
        if qualified.startswith(LIGHTNING_ROOTS):
            return True
        parent = walker.index().classes.get(qualified)
        if parent is not None and parent is not cls and _lightning(walker, parent, depth + 1):
            return True
    return False


def init_attributes(walker: Walker, init: ast.FunctionDef, scope: Scope) -> Attributes:
    """`self.x = value` made once in `init` (and the arguments `self.save_hyperparameters()`
    keeps, see kept_arguments), each read in `scope`; one assigned several times, the
    assignment the run at the defaults ends with (`self.num_val_workers =
    self.num_workers`, replaced only `if num_val_workers is not None:`), when the `if`
    tests settle it. `self.y` inside `init` reads what `init` assigns it."""
    by_hyperparameters = kept_arguments(walker, init, scope)
    found: Attributes = {**lightning_hyperparameters(walker, init, scope), **by_hyperparameters}
    assigned: dict[str, int] = {}
    for node in ast.walk(init):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                assigned[target.attr] = assigned.get(target.attr, 0) + 1
                found[target.attr] = (node.value, scope)
    twice = {name for name, count in assigned.items() if count > 1 or name in by_hyperparameters}
    kept = {k: v for k, v in found.items() if k not in twice}
    scope.attributes = {**scope.attributes, **kept}  # read while deciding the tests below
    guarded = guarded_self_assignments(init.body)
    for name in twice:
        candidates = guarded.get(name, [])
        if name in by_hyperparameters or len(candidates) != assigned[name]:
            continue  # also assigned where the path is not read (a nested function)
        chosen = scope.on_the_path(f"self.{name}", candidates)
        if chosen is not None:
            kept[name] = (chosen, scope)
    scope.attributes = {**scope.attributes, **kept}
    return kept


def class_attributes(cls: ast.ClassDef, scope: Scope) -> Attributes:
    """Class-level defaults read through `self` (`class Configs: data_loader_workers = 8`
    ... `num_workers=self.data_loader_workers`), each once, and only those no method of
    the class assigns to `self` (then the class value is not what every run reads)."""
    found = simple_assignments(cls.body)  # a name assigned twice is left out there
    assigned = {
        target.attr
        for method in cls.body
        if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(method)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    }
    return {k: (v, scope) for k, v in found.items() if k not in assigned}


def _init(cls: ast.ClassDef) -> Optional[ast.FunctionDef]:
    return next(
        (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None
    )


def _file_base(walker: Walker, cls: ast.ClassDef) -> Optional[ast.ClassDef]:
    """The one base class of `cls` defined in the file (by name, or through the module's
    own alias), or None."""
    classes, aliases = _classes_and_aliases(walker)
    found: list[ast.ClassDef] = []
    for base in cls.bases:
        name: Optional[str] = None
        if isinstance(base, ast.Name):
            name = base.id
        elif (
            isinstance(base, ast.Attribute)
            and isinstance(base.value, ast.Name)
            and base.value.id in aliases
        ):
            name = base.attr
        if name is not None and len(classes.get(name, [])) == 1 and classes[name][0] is not cls:
            found.append(classes[name][0])
    return found[0] if len(found) == 1 else None


def _classes_and_aliases(walker: Walker) -> tuple[dict[str, list[ast.ClassDef]], set[str]]:
    """The file's classes by name and its names for itself, gathered once per file: each
    base followed up a chain of N classes gathered them anew (N² time)."""
    module = walker.module
    cached: Optional[tuple[dict[str, list[ast.ClassDef]], set[str]]] = module.__dict__.get(
        "_envcheck_classes_and_aliases"
    )
    if cached is None:
        classes: dict[str, list[ast.ClassDef]] = {}
        for node in walker.index().class_nodes:
            classes.setdefault(node.name, []).append(node)
        cached = (classes, set(self_aliases(module)))
        setattr(module, "_envcheck_classes_and_aliases", cached)  # noqa: B010 - AST nodes have no slot
    return cached


def _super_call(init: ast.FunctionDef, base: ast.ClassDef) -> Optional[ast.Call]:
    """`super().__init__(...)` (or `Base.__init__(self, ...)`, the self dropped) in `init`."""
    for node in ast.walk(init):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "__init__"
        ):
            continue
        owner = node.func.value
        if isinstance(owner, ast.Call) and ast.unparse(owner.func) == "super":
            return node
        if ast.unparse(owner).rsplit(".", 1)[-1] == base.name and node.args:
            return ast.Call(node.func, node.args[1:], node.keywords)
    return None
