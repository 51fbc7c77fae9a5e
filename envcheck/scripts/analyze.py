"""Reading a training script's input-pipeline settings with `ast`, never executing it.

One pass over each file records *observations*: every DataLoader construction with its
argument values (followed as far as the source allows, see values.py), and file-level
settings (the `__main__` guard, the multiprocessing start method, CUDA use, cuDNN
benchmark, autocast, TF32); tf_keras.py adds tf.data and Keras observations, and
torch_loops.py what PyTorch training-step loops do every step. Rules turn observations
into findings; nothing here judges.
"""

from __future__ import annotations

import ast
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from envcheck import safefile
from envcheck.scripts import tf_keras, torch_loops
from envcheck.scripts.values import Scope, keyword_values, resolve

MAX_BYTES = 2_000_000  # larger files are generated code, not training scripts
DATALOADERS = {
    "torch.utils.data.DataLoader",
    "torch.utils.data.dataloader.DataLoader",
}
LOADER_ARGS = ("batch_size", "num_workers", "pin_memory", "persistent_workers", "prefetch_factor")


@dataclass
class FileReport:
    path: str
    error: Optional[dict[str, Any]] = None
    facts: dict[str, Any] = field(default_factory=dict)
    loaders: list[dict[str, Any]] = field(default_factory=list)
    tf_pipelines: list[dict[str, Any]] = field(default_factory=list)
    keras_calls: list[dict[str, Any]] = field(default_factory=list)
    torch_calls: list[dict[str, Any]] = field(default_factory=list)


def analyze_file(path: Path, shown: str) -> FileReport:
    """Observations of one file; a file that cannot be read or parsed gets `error`."""
    report = FileReport(shown)
    not_regular = safefile.problem(path, limit=2**63)  # a FIFO or a link to /dev/zero blocks
    if not_regular:
        report.error = _error(f"{not_regular}; skipped")
        return report
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            report.error = _error(
                f"{size:,} bytes: too large for a training script (limit {MAX_BYTES:,}); skipped"
            )
            return report
        with tokenize.open(path) as handle:  # honours a PEP 263 coding cookie
            text = handle.read()
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as exc:
        report.error = _error(f"cannot read it as Python source ({_short(exc)})")
        return report
    if "\x00" in text:
        report.error = _error("not a Python source file (binary content)")
        return report
    try:
        module = ast.parse(text, filename=shown)
    except SyntaxError as exc:
        report.error = _error(f"syntax error: {exc.msg}", exc.lineno, exc.offset)
        return report
    except (ValueError, RecursionError) as exc:
        report.error = _error(f"cannot parse it ({_short(exc)})")
        return report
    _Walker(module, text.splitlines(), report).run()
    return report


def _error(reason: str, line: Optional[int] = None, column: Optional[int] = None) -> dict[str, Any]:
    return {"reason": reason, "line": line, "column": column}


def _short(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class _Walker(ast.NodeVisitor):
    def __init__(self, module: ast.Module, lines: list[str], report: FileReport):
        self.module = module
        self.lines = lines
        self.report = report
        self.aliases = _import_aliases(module)
        self.loader_classes = set(DATALOADERS) | _subclasses(module, self.aliases, DATALOADERS)
        self.module_scope = Scope.of_module(module)
        self.functions: list[ast.AST] = []
        self._scopes: dict[int, Scope] = {}
        self.in_main_guard = False
        self.facts: dict[str, Any] = {
            "main_guard": False,
            "start_method": None,
            "uses_cuda": False,
            "cudnn_benchmark": None,
            "autocast": False,
            "tf32": None,
            "conv_layers": False,
        }

    def run(self) -> None:
        self.visit(self.module)
        files = tf_keras.finish(self, self.report)
        torch_loops.finish(self, self.report, files)
        self.report.facts = self.facts

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
        if _is_main_guard(node.test):
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
        for target in node.targets:
            name = self.qualname(target)
            value = resolve(node.value, self.scope())
            if name == "torch.backends.cudnn.benchmark" and value.known:
                self.facts["cudnn_benchmark"] = bool(value.value)
            elif (
                name in ("torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.allow_tf32")
                and value.known
            ):
                self.facts["tf32"] = bool(value.value) or bool(self.facts["tf32"])
        self.generic_visit(node)

    # -- calls -----------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        name = self.qualname(node.func)
        if name in self.loader_classes:
            self._loader(node, name)
        elif name in ("multiprocessing.set_start_method", "torch.multiprocessing.set_start_method"):
            if node.args:
                method = resolve(node.args[0], self.scope())
                if method.known:
                    self.facts["start_method"] = method.value
        elif name in (
            "torch.autocast",
            "torch.cuda.amp.autocast",
            "torch.amp.autocast",
            "torch.cuda.amp.GradScaler",
            "torch.amp.GradScaler",
        ):
            self.facts["autocast"] = True
        elif name == "torch.set_float32_matmul_precision" and node.args:
            precision = resolve(node.args[0], self.scope())
            if precision.known:
                self.facts["tf32"] = precision.value in ("high", "medium")
        if name and (".Conv" in name or name.startswith("torchvision.models.")):
            self.facts["conv_layers"] = True
        tf_keras.observe_call(self, node, name)
        self._note_cuda(node, name)
        self.generic_visit(node)

    def _note_cuda(self, node: ast.Call, name: Optional[str]) -> None:
        if isinstance(node.func, ast.Attribute) and node.func.attr == "cuda" and not node.args:
            self.facts["uses_cuda"] = True
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if (
                isinstance(arg, ast.Constant)
                and isinstance(arg.value, str)
                and (arg.value in ("cuda", "gpu") or arg.value.startswith("cuda:"))
            ):
                self.facts["uses_cuda"] = True
        if name in ("torch.cuda.is_available", "torch.cuda.device_count"):
            self.facts["uses_cuda"] = True

    def _loader(self, node: ast.Call, name: str) -> None:
        values, opaque = keyword_values(node, self.scope())
        # DataLoader(dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
        #            num_workers=0, ...): positional use beyond the dataset is rare; map the
        # documented order for the ones rules need.
        positional = [
            "dataset",
            "batch_size",
            "shuffle",
            "sampler",
            "batch_sampler",
            "num_workers",
            "collate_fn",
            "pin_memory",
        ]
        for index, arg in enumerate(node.args[: len(positional)]):
            values.setdefault(positional[index], resolve(arg, self.scope()))
        function = self.functions[-1] if self.functions else None
        self.report.loaders.append(
            {
                "kind": "torch.DataLoader",
                "callee": name,
                "path": self.report.path,
                "line": node.lineno,
                "column": node.col_offset + 1,
                "code": self.lines[node.lineno - 1].strip()
                if node.lineno <= len(self.lines)
                else "",
                "function": getattr(function, "name", None),
                "module_level": function is None,
                "in_main_guard": self.in_main_guard,
                "args": {k: values[k].to_json() for k in LOADER_ARGS if k in values},
                "opaque_kwargs": opaque,
            }
        )

    # -- names -----------------------------------------------------------------------------

    def qualname(self, node: ast.AST) -> Optional[str]:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.aliases.get(node.id, node.id)
        return ".".join([base, *reversed(parts)])

    def scope(self) -> Scope:
        function = self.functions[-1] if self.functions else None
        if function is None:
            return self.module_scope
        key = id(function)
        if key not in self._scopes:
            self._scopes[key] = self.module_scope.inside(function)
        return self._scopes[key]


def _import_aliases(module: ast.Module) -> dict[str, str]:
    """Local name -> qualified name, from every import in the file."""
    aliases: dict[str, str] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    aliases.setdefault(top, top)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _subclasses(module: ast.Module, aliases: dict[str, str], bases: set[str]) -> set[str]:
    """Classes defined in the file that derive from one of `bases` (by local name)."""
    found: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                text = ast.unparse(base)
                head, _, rest = text.partition(".")
                qualified = aliases.get(head, head) + (f".{rest}" if rest else "")
                if qualified in bases:
                    found.add(node.name)
    return found


def _is_main_guard(test: ast.expr) -> bool:
    if not isinstance(test, ast.Compare) or len(test.comparators) != 1:
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    strings = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return bool(names and strings and isinstance(test.ops[0], ast.Eq))
