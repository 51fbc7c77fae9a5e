"""Mixed precision and convolutional models in a PyTorch script, read from the source.

`read` returns file facts:

- `autocast`: True when mixed precision is on in a default run: `torch.autocast` or a
  GradScaler used (called, or referenced: `functools.partial(torch.autocast, ...)`,
  `ctx = torch.autocast`), Accelerate `mixed_precision="fp16"`, Lightning
  `precision="16-mixed"`, `TrainingArguments(fp16=True)`, `model.half()`, apex
  `amp.initialize`, a precision setting handed to the project's own classes
  (`MixedPrecisionTrainer(use_fp16=True)`);
- `amp_gate`: when every use sits behind a condition (`if args.amp:`, `... if args.amp
  else None`, `enabled=args.amp`): `{"text", "option", "default"}` — the flag and its
  default, e.g. option "--amp", default False: AMP is off unless --amp is passed;
- `conv_layers`: the model has convolutions: `nn.Conv*`, `torchvision.models.*` (not the
  transformers among them), `timm.create_model` of a convolutional architecture, or a
  model of the project built out of sight whose name says it (`ResNet18()`, `SSD300()`,
  `modeling.__dict__["deeplabv3plus_mobilenet"]`);
- `matmul_layers`: matmul-bound layers or architectures in sight (`nn.Linear`, `nn.LSTM`,
  `nn.Transformer*`, a Hugging Face model, `RNNModel()`, `TransformerModel()`), with
  `toy_model` True when the only ones are a few small `nn.Linear` of constant size
  (nothing for tensor cores to speed up). Neither conv nor matmul: the model is built out
  of sight and the rules that depend on its kind say unknown.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any, Optional, Union

from envcheck.scripts.values import Scope, resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

AMP_NAMES = {
    "torch.autocast",
    "torch.cuda.amp.autocast",
    "torch.amp.autocast",
    "torch.cpu.amp.autocast",
    "torch.cuda.amp.GradScaler",
    "torch.amp.GradScaler",
}
# NVIDIA apex AMP (before torch.autocast): `model, opt = amp.initialize(model, opt, ...)`
APEX_AMP = {"apex.amp.initialize", "apex.amp.scale_loss"}
HALF_METHODS = ("half", "bfloat16")
# Precision settings handed to a project's own trainer or model class.
PROJECT_KEYWORDS = ("precision", "fp16", "bf16", "use_fp16", "use_bf16", "amp", "use_amp")
# `self.use_fp16 = use_fp16 in __init__`: a constructor parameter, set by the caller (its
# default is not the run's value)
CALLER_DECIDES = re.compile(r"self\.\w+ = [A-Za-z_]\w* in __init__")
# Libraries whose `precision=`-like arguments mean something else (print precision, a
# metric), and the calls read above with their own meaning.
LIBRARIES = ("torch.", "numpy.", "torchmetrics.", "sklearn.", "tensorflow.", "keras.")
HANDLED = ("Accelerator", "Trainer", "Fabric", "TrainingArguments", "Seq2SeqTrainingArguments")
# Accelerator() without mixed_precision reads it from `accelerate launch` or its config.
LAUNCH_CONFIG = "accelerate launch --mixed_precision or accelerate config"
# Calls whose mixed precision comes from a configuration outside the source.
EXTERNAL_CONFIG = ("deepspeed.initialize",)
MIXED_VALUES = ("fp16", "bf16", "16", "bf16-mixed", "16-mixed", "16-true", "bf16-true", "fp8")
# Architectures among torchvision/timm models that are transformers, not convolutional.
TRANSFORMERS = ("vit", "deit", "swin", "beit", "maxvit", "eva", "cait", "xcit", "mvit")
# Their matmuls, not convolutions, dominate: TF32 matters there.
# Layers whose matmuls dominate the model's compute.
MATMUL_LAYERS = {
    f"torch.nn.{n}"
    for n in (
        "Linear",
        "Bilinear",
        "LSTM",
        "GRU",
        "RNN",
        "LSTMCell",
        "GRUCell",
        "RNNCell",
        "Transformer",
        "TransformerEncoder",
        "TransformerDecoder",
        "TransformerEncoderLayer",
        "TransformerDecoderLayer",
        "MultiheadAttention",
    )
} | {"torch.nn.functional.linear"}
# Words that name an architecture in a model's class or factory name (`ResNet18`,
# `create_yolov3_model`, `RNNModel`): matched at the start of a name or of a `_` part.
CONV_WORDS = (
    "resnet",
    "resnext",
    "wide_resnet",
    "vgg",
    "conv",
    "cnn",
    "unet",
    "deeplab",
    "ssd",
    "yolo",
    "darknet",
    "efficientnet",
    "mobilenet",
    "densenet",
    "inception",
    "alexnet",
    "googlenet",
    "regnet",
    "shufflenet",
    "squeezenet",
    "fcn",
    "retinanet",
    "fasterrcnn",
    "maskrcnn",
    "dcgan",
    "espcn",
    "lenet",
    "senet",
    "dpn",
    "preactresnet",
)
MATMUL_WORDS = (
    "rnn",
    "lstm",
    "gru",
    "transformer",
    "bert",
    "gpt",
    "mlp",
    "llama",
    "t5",
    "bart",
    "roberta",
    "vit",
)
# A model made only of nn.Linear layers with fewer weights than this is a toy: there is
# nothing for tensor cores to speed up (nn.Linear(20, 1) of the DDP tutorial).
TOY_WEIGHTS = 10_000
# Functions that build a model by architecture name.
MODEL_FACTORIES = {"timm.create_model", "timm.models.create_model", "torchvision.models.get_model"}


def read(walker: Walker) -> dict[str, Any]:
    reader = _Reader(walker)
    reader.visit(walker.module, [], walker.module_scope)
    return reader.facts()


# A condition in the source, or a description of a setting made outside it.
Gate = Union[ast.expr, str]


class _Reader:
    def __init__(self, walker: Walker):
        self.walker = walker
        self.ungated: Optional[str] = None
        self.gates: list[tuple[Gate, Scope]] = []
        self.conv = False
        self.matmul: list[str] = []  # what shows matmul-bound layers
        self.linear_weights: Optional[int] = 0  # constant nn.Linear weights; None: not known

    def visit(self, node: ast.AST, gates: list[ast.expr], scope: Scope) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = self.walker.scope_of(node)
            gates = []
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = self.walker.qualname(node)
            if name in AMP_NAMES:
                self._use(ast.unparse(node), gates, scope)
        if isinstance(node, ast.Call) and self._call(node, gates, scope):
            for child in [*node.args, *node.keywords]:
                self.visit(child, gates, scope)
            return  # the callee is gated by its `enabled=`
        if isinstance(node, (ast.If, ast.IfExp, ast.While)):
            self.visit(node.test, gates, scope)
            for child in _as_list(node.body):
                self.visit(child, [*gates, node.test], scope)
            for child in _as_list(node.orelse):
                self.visit(child, gates, scope)
            return
        for child in ast.iter_child_nodes(node):
            self.visit(child, gates, scope)

    def _use(self, what: str, gates: list[ast.expr], scope: Scope) -> None:
        if gates:
            self.gates.append((gates[-1], scope))
        elif self.ungated is None:
            self.ungated = what

    def _call(self, node: ast.Call, gates: list[ast.expr], scope: Scope) -> bool:
        """Read one call; True when AMP is gated by its `enabled=` argument."""
        name = self.walker.qualname(node.func) or ""
        short = name.rsplit(".", 1)[-1]
        enabled = _keyword(node, "enabled")
        if name in APEX_AMP:
            self._use(f"apex {ast.unparse(node.func)}", gates, scope)
        if name in AMP_NAMES and enabled is not None:
            value = resolve(enabled, scope)
            if not (value.known and value.value is True):
                self.gates.append((enabled, scope))
                return True
        accelerate = name.startswith("accelerate.") and short == "Accelerator"
        for key in ("mixed_precision", "precision"):
            setting = _keyword(node, key)
            if short not in ("Accelerator", "Trainer", "Fabric"):
                continue
            if setting is None:
                if accelerate and key == "mixed_precision":
                    # left to `accelerate launch --mixed_precision` / `accelerate config`
                    self.gates.append((LAUNCH_CONFIG, scope))
                continue
            value = resolve(setting, scope)
            if value.known and str(value.value) in MIXED_VALUES:
                self._use(f"{short}({key}={ast.unparse(setting)})", gates, scope)
            elif not value.known or (accelerate and value.value is None):
                self.gates.append((setting, scope))
            elif value.source.startswith("argparse "):
                self.gates.append((setting, scope))  # "no" by default: off unless passed
        for key in ("fp16", "bf16"):
            setting = _keyword(node, key)
            if setting is not None and short in ("TrainingArguments", "Seq2SeqTrainingArguments"):
                value = resolve(setting, scope)
                if value.known and value.value is True:
                    self._use(f"{short}({key}=True)", gates, scope)
                elif not value.known:
                    self.gates.append((setting, scope))
        if name.startswith(EXTERNAL_CONFIG) or (
            short == "HfArgumentParser" and name.startswith("transformers.")
        ):
            # TrainingArguments parsed from the command line, a DeepSpeed JSON config:
            # mixed precision is set outside the source
            where = "--fp16/--bf16 on the command line" if "Hf" in short else "the DeepSpeed config"
            self.gates.append((where, scope))
        if not name.startswith(LIBRARIES) and short not in HANDLED:
            self._project_setting(node, gates, scope)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in HALF_METHODS and not node.args:
            self._use(f".{func.attr}()", gates, scope)
        if self._convolutional(node, name, scope):
            self.conv = True
        self._matmul(node, name, scope)
        return False

    def _project_setting(self, node: ast.Call, gates: list[ast.expr], scope: Scope) -> None:
        """A precision setting handed to the project's own code (`MixedPrecisionTrainer(
        use_fp16=args.use_fp16)`, `DeepSpeech(precision=cfg.trainer.precision)`): mixed
        precision when it says so, a gate when the source does not settle it."""
        for keyword in node.keywords:
            if keyword.arg not in PROJECT_KEYWORDS:
                continue
            value = resolve(keyword.value, scope)
            if (
                not value.known
                or value.source.startswith("argparse ")
                or CALLER_DECIDES.match(value.source)
            ):
                self.gates.append((keyword.value, scope))
            elif value.value is True or str(value.value) in MIXED_VALUES:
                self._use(f"{ast.unparse(node.func)}({keyword.arg}=...)", gates, scope)

    def _matmul(self, node: ast.Call, name: str, scope: Scope) -> None:
        short = name.rsplit(".", 1)[-1]
        if name in MATMUL_LAYERS:
            self.matmul.append(short)
            sizes = [resolve(a, scope) for a in node.args[:2]]
            if (
                short == "Linear"
                and len(sizes) == 2
                and all(v.known and isinstance(v.value, int) for v in sizes)
                and self.linear_weights is not None
            ):
                self.linear_weights += int(sizes[0].value) * int(sizes[1].value)
            else:
                self.linear_weights = None
        elif name.startswith("transformers.") and ("Model" in short or "For" in short):
            self.matmul.append(short)
            self.linear_weights = None
        elif (
            not name.startswith(("torch.", "torchvision.", "timm."))
            and _architecture(_callee(node) or "") == "matmul"
        ):
            self.matmul.append(_callee(node) or short)
            self.linear_weights = None

    def _convolutional(self, node: ast.Call, name: str, scope: Scope) -> bool:
        if ".Conv" in name or name.startswith("torch.nn.functional.conv"):
            return True
        architecture: Optional[str] = None
        if name.startswith("torchvision.models.") and name != "torchvision.models.get_model":
            architecture = name.rsplit(".", 1)[-1]
        elif name in MODEL_FACTORIES and node.args:
            value = resolve(node.args[0], scope)
            architecture = str(value.value) if value.known else None
        elif isinstance(node.func, ast.Subscript):  # models.__dict__[args.arch](...)
            owner = self.walker.qualname(node.func.value) or ""
            value = resolve(node.func.slice, scope)
            if owner == "torchvision.models.__dict__":
                architecture = str(value.value) if value.known else None
            elif owner.endswith(".__dict__") and value.known:  # modeling.__dict__[opts.model]
                return _architecture(str(value.value)) == "conv"
        if architecture is None:
            # a model class or factory of the project, out of sight: `ResNet18()`, or an
            # op of a project module named for convolutions (`conv2d_gradfix.f()`)
            callee = _callee(node)
            project = not name.startswith(("torch.", "torchvision."))
            modules = [_architecture(p) for p in name.split(".")[:-1] if p.startswith("conv")]
            return project and (
                (callee is not None and _architecture(callee) == "conv") or "conv" in modules
            )
        return not architecture.lower().startswith(TRANSFORMERS)

    def facts(self) -> dict[str, Any]:
        found: dict[str, Any] = {"autocast": self.ungated is not None, "amp_gate": None}
        found["conv_layers"] = self.conv
        found["matmul_layers"] = sorted(set(self.matmul))
        found["toy_model"] = bool(
            self.matmul
            and set(self.matmul) == {"Linear"}
            and self.linear_weights is not None
            and self.linear_weights < TOY_WEIGHTS
        )
        if self.ungated is not None or not self.gates:
            return found
        gates = [self._gate(expr, scope) for expr, scope in self.gates]
        if any(g["default"] is True for g in gates):
            found["autocast"] = True  # on by default
            return found
        off = [g for g in gates if g["option"] is not None]
        found["amp_gate"] = off[0] if off else gates[0]
        return found

    def _gate(self, expr: Gate, scope: Scope) -> dict[str, Any]:
        """The condition AMP sits behind, and its default where the source shows it."""
        if isinstance(expr, str):  # set outside the source (a launcher, a config file)
            return {"text": expr, "option": None, "default": None}
        text = ast.unparse(expr)
        value = resolve(expr, scope)
        option = None
        if value.source.startswith("argparse "):
            option = value.source.split()[1]
        default = value.value if value.known else None
        if value.known and value.value is None and option is not None:
            # Accelerator(mixed_precision=args.mixed_precision), default None: the launcher
            # decides
            return {
                "text": f"{text} (default None: accelerate launch or config)",
                "option": None,
                "default": None,
            }
        if value.known and not isinstance(default, bool):
            default = str(default).lower() in MIXED_VALUES or default is True
        return {"text": text, "option": option, "default": default}


def _callee(node: ast.Call) -> Optional[str]:
    """The called name: `ResNet18` for ResNet18() and models.ResNet18()."""
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


# Where a word of a name starts: the start, after `_`, or a capital after a lower-case
# letter or digit (`GeneratorResNet` -> Generator, ResNet; `conv2d_gradfix` -> conv2d).
WORD_START = re.compile(r"(?:^|_|(?<=[a-z0-9])(?=[A-Z]))")
# `convert_image()`, `converter`: not a convolution
NOT_CONV = ("conver",)


def _architecture(name: str) -> Optional[str]:
    """'conv' or 'matmul' when a model's class or factory name says which, else None: an
    architecture word at the start of the name or of one of its words, `_`-separated or
    CamelCase (`GeneratorResNet`: convolutional; `GPT`, `TransformerModel`: matmul)."""
    parts = _tails(name)
    for part in parts:
        if part.startswith(CONV_WORDS) and not part.startswith(NOT_CONV):
            return "conv"
    for part in parts:
        if part.startswith(MATMUL_WORDS):
            return "matmul"
    return None


def _tails(name: str) -> list[str]:
    """The name from each of its word starts on, lower-cased, `_` dropped:
    `GeneratorResNet` -> ["generatorresnet", "resnet"]."""
    starts = sorted({m.end() for m in WORD_START.finditer(name)})
    return [t for t in (name[i:].lower().lstrip("_") for i in starts) if t]


def _as_list(node: Any) -> list[ast.AST]:
    return node if isinstance(node, list) else [node]


def _keyword(call: ast.Call, name: str) -> Optional[ast.expr]:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    return None
