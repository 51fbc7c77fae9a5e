"""Which function of the file a call made inside a training step runs, beyond what
`callees.Callees` resolves alone: `self.f(...)` inside a method runs the method of that
method's class (or of a base class of the file), and `obj.f(...)` on an object the file
never builds itself (`self.model = model`, a parameter) runs the one method `f` of the
file's class hierarchy (`Module.training_step`, overridden by its subclasses), and a
module-level lambda that copies its argument to the host (`numpy = lambda x: x.numpy()`)
is a host read of that argument. Training code hides its per-step host reads in such
helpers (`self.model.training_step(batch)` -> `self.plot("loss", l)` -> `d2l.numpy(l)`).
"""

from __future__ import annotations

import ast
from typing import Optional, Union

from envcheck.scripts.callees import Callees
from envcheck.scripts.index import FileIndex, function_owners, module_nodes, own_nodes
from envcheck.scripts.tensors import dotted

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


class StepHelpers:
    """Calls of one file resolved to its functions and methods, for the step readers."""

    def __init__(self, module: ast.Module, files: FileIndex, callees: Callees):
        self.files = files
        self.callees = callees
        self.owner: dict[int, ast.ClassDef] = {  # id(method) -> its class
            id(item): cls
            for cls in files.class_nodes
            for item in cls.body
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self.built: set[str] = set()  # names the file assigns from a call or a literal
        for node in module_nodes(module):
            if isinstance(node, ast.Assign) and not isinstance(node.value, ast.Name):
                for target in node.targets:
                    key = dotted(target)
                    if key is not None:
                        self.built.add(key)
        self.module = module
        self._instances: Optional[dict[str, Optional[str]]] = None
        # caller -> its nested functions by name, read once per caller (each call of a
        # step loop asks, and walking the caller per call took a third of the audit)
        self._nested_by_caller: dict[int, dict[str, list[Function]]] = {}
        self.lambdas = {  # module-level `name = lambda x, ...: ...`
            target.id: node.value
            for node in module.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda)
            for target in node.targets
            if isinstance(target, ast.Name)
        }

    def _nested(self, caller: Function, name: str) -> Optional[Function]:
        """The function `caller` itself defines as `name` (`def closure(): ...
        loss.backward()` inside `take_step`), which a call of `name` there runs, whatever
        other functions of the file share the name (each step function its own closure)."""
        defined = self._nested_by_caller.get(id(caller))
        if defined is None:
            defined = self._nested_by_caller[id(caller)] = nested_functions(caller)
        found = defined.get(name, [])
        return found[0] if len(found) == 1 else None

    def function(self, call: ast.Call, caller: Optional[Function]) -> Optional[Function]:
        """The function or method of the file `call` (made in `caller`) runs, or None."""
        func = call.func
        if isinstance(func, ast.Name) and caller is not None:
            nested = self._nested(caller, func.id)
            if nested is not None:
                return nested
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls")
            and caller is not None
        ):
            cls = self.owner.get(id(caller))
            found = self.method(cls.name, func.attr) if cls is not None else None
            if found is not None:
                return found
        found = self.callees.function(call) or self.module_call(call, caller)
        if found is not None or not isinstance(func, ast.Attribute):
            return found
        base = dotted(func.value)
        if base is None or base in ("self", "cls") or base in self.built:
            return None  # an object the file builds from something else (an optimizer)
        if isinstance(func.value, ast.Name) and func.value.id in self.callees.itself:
            return None
        found = self._only_method(func.attr)
        if found is not None and not accepts(call, found):
            # `self.model.train()` in a Trainer whose own `train(self, train_data,
            # valid_data)` is the epoch loop: the call cannot bind to that method, so the
            # object is another one (an nn.Module switching to training mode)
            return None
        return found

    def module_call(self, call: ast.Call, caller: Optional[Function]) -> Optional[Function]:
        """`self.criterion(y, p)` in a method whose class only ever sets `self.criterion`
        to an instance of one class of the file (`self.criterion = MaskedLoss()`), or a
        name the file only binds to one (`criterion = YoloLoss()`): calling
        the object runs that class's `forward` (an `nn.Module`) or `__call__`, whose
        syncs (a loss's boolean-mask indexing) run every step like a helper's."""
        func = call.func
        if isinstance(func, ast.Name) and self.instances().get(func.id):
            # `criterion(pred, target)` with `criterion = YoloLoss()`: its forward runs
            instance = self.instances()[func.id] or ""
            return self.method(instance, "forward") or self.method(instance, "__call__")
        cls = self.owner.get(id(caller)) if caller is not None else None
        if (
            cls is None
            or not isinstance(func, ast.Attribute)
            or not isinstance(func.value, ast.Name)
            or func.value.id != "self"
        ):
            return None
        built = self._attribute_classes(cls, func.attr)
        name = next(iter(built)) if len(built) == 1 else None
        if name is None:
            return None
        return self.method(name, "forward") or self.method(name, "__call__")

    def instances(self) -> dict[str, Optional[str]]:
        """`criterion = YoloLoss(...)`: names the file binds, everywhere, to instances of
        one class of its own (None when bound to anything else as well); read once, when
        first asked."""
        if self._instances is None:
            self._instances = {}
            if self.files.classes:
                for node in module_nodes(self.module):
                    if isinstance(node, ast.Assign):
                        self._bind(node)
        return self._instances

    def _bind(self, node: ast.Assign) -> None:
        assert self._instances is not None
        func = node.value.func if isinstance(node.value, ast.Call) else None
        cls = func.id if isinstance(func, ast.Name) and func.id in self.files.classes else None
        for target in node.targets:
            if isinstance(target, ast.Name):
                seen = self._instances.get(target.id, cls)
                self._instances[target.id] = cls if seen == cls else None

    def _attribute_classes(self, cls: ast.ClassDef, attr: str) -> set[Optional[str]]:
        """What the methods of `cls` assign to `self.attr`: the names of the classes of
        the file they build, None for anything else (a parameter, a library object)."""
        found: set[Optional[str]] = set()
        for item in cls.body:
            if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in _assignments(item):
                if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if not any(dotted(t) == f"self.{attr}" for t in targets):
                    continue
                func = node.value.func if isinstance(node.value, ast.Call) else None
                is_class = isinstance(func, ast.Name) and func.id in self.files.classes
                found.add(func.id if is_class and isinstance(func, ast.Name) else None)
        return found

    def method(self, cls: str, name: str) -> Optional[Function]:
        """`name` defined in class `cls` of the file or in one of its bases (callees.py)."""
        return self.callees.method(cls, name)

    def _only_method(self, name: str) -> Optional[Function]:
        """The method `name` of the file's classes when every class defining it derives
        from one of them (one method and its overrides), else None."""
        defining = [
            cls.name
            for cls in self.files.class_nodes
            if any(
                isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef)) and i.name == name
                for i in cls.body
            )
        ]
        for root in defining:
            root_method = self.method(root, name)
            if root_method is not None and all(
                self._derives(other, root) for other in defining if other != root
            ):
                return root_method
        return None

    def _derives(self, cls: str, root: str, depth: int = 0) -> bool:
        node = self.files.classes.get(cls)
        if node is None or depth > 4:
            return False
        for base in node.bases:
            name = base.id if isinstance(base, ast.Name) else None
            if (
                isinstance(base, ast.Attribute)
                and isinstance(base.value, ast.Name)
                and base.value.id in self.callees.itself
            ):
                name = base.attr
            if name == root or (name is not None and self._derives(name, root, depth + 1)):
                return True
        return False

    def host_read(self, call: ast.Call) -> Optional[str]:
        """The name of a module-level lambda `call` runs when its body reads its first
        argument on the host (`numpy = lambda x, *a: x.numpy(*a)`), else None."""
        func = call.func
        name = None
        if isinstance(func, ast.Name):
            name = func.id
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in self.callees.itself
        ):
            name = func.attr
        body = self.lambdas.get(name or "")
        if body is None or not body.args.args or not call.args:
            return None
        first = body.args.args[0].arg
        for node in ast.walk(body.body):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("numpy", "item", "tolist")
                and any(isinstance(n, ast.Name) and n.id == first for n in ast.walk(node.func))
            ):
                return name
        return None


class StepCallees(Callees):
    """`Callees` whose `function` also resolves what `StepHelpers` does, knowing each
    call's enclosing function; `calls_of` still counts the plain resolution, so a helper
    is "shared" only when the file calls it by a name that surely means it."""

    def __init__(
        self,
        module: ast.Module,
        files: FileIndex,
        assignments: list[tuple[ast.expr, ast.expr]],
        calls: list[ast.Call],
    ):
        super().__init__(module, files, assignments, calls)
        self.plain = Callees(module, files, assignments, calls)
        self.helpers = StepHelpers(module, files, self.plain)
        self.owners = function_owners(module, files.function_nodes)

    def function(self, call: ast.Call) -> Optional[Function]:
        caller = self.owners.get(id(call))
        if not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)):
            caller = None
        return self.helpers.function(call, caller)

    def calls_of(self, function: Function) -> int:
        return self.plain.calls_of(function)


def accepts(call: ast.Call, method: Function) -> bool:
    """Whether `call` (`obj.f(...)`, bound: `self` is not passed) can bind to `method`'s
    parameters: not too many positional arguments, no unknown keyword, every required
    parameter given. True when the call unpacks (`*args`, `**kwargs`): out of sight."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return True
    arguments = method.args
    positional = [*arguments.posonlyargs, *arguments.args]
    decorators = {dotted(d) for d in method.decorator_list}
    if "staticmethod" not in decorators and positional:
        positional = positional[1:]  # self or cls
    if len(call.args) > len(positional) and arguments.vararg is None:
        return False
    names = {a.arg for a in [*arguments.args, *arguments.kwonlyargs]}
    given = {k.arg for k in call.keywords if k.arg is not None}
    if arguments.kwarg is None and not given <= names:
        return False
    defaults = len(arguments.defaults)
    required = positional[: len(positional) - defaults] if defaults else positional
    for index, parameter in enumerate(required):
        if index >= len(call.args) and parameter.arg not in given:
            return False
    kw_required = [
        a.arg
        for a, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
        if default is None
    ]
    return all(name in given for name in kw_required)


def nested_functions(caller: Function) -> dict[str, list[Function]]:
    """The functions `caller` itself defines, by name."""
    found: dict[str, list[Function]] = {}
    for node in own_nodes(caller):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.setdefault(node.name, []).append(node)
    return found


def host_wrapper(callees: Callees, call: ast.Call) -> Optional[str]:
    """`StepHelpers.host_read` when `callees` resolves through step helpers, else None."""
    return callees.helpers.host_read(call) if isinstance(callees, StepCallees) else None


def _assignments(function: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> list[ast.AST]:
    """The assignments under a method, listed once per method: every attribute asked
    about walked the whole class anew."""
    cached: Optional[list[ast.AST]] = function.__dict__.get("_envcheck_method_assignments")
    if cached is None:
        cached = [n for n in ast.walk(function) if isinstance(n, (ast.Assign, ast.AnnAssign))]
        setattr(function, "_envcheck_method_assignments", cached)  # noqa: B010 - AST nodes have no slot
    return cached
