"""What kind of model a project's class builds, read from its definition in another file.

`model = UNetGenerator(cfg)` in train.py names a class of the project's models/ package:
out of sight, only its name could tell whether it convolves (model_names.py). When the
file that defines it is read as context (project_context.py), its layers decide: a class
that builds `nn.Conv2d` or Keras' `layers.Conv2D` (or a torchvision/timm model, or a class
of its own module that does) is convolutional; one that builds only `nn.Linear`,
recurrent or attention layers is matmul-bound; a class named for an embedding
(`PatchEmbed`, `TokenEmbedding`) whose one conv projects patches or tokens, and a timm
model named for a vision transformer (`timm.create_model("swin_base_...")`), are
matmul-bound parts too. A factory function (`def build_model(cfg):
return Net(cfg)`) is the kind of the classes it builds. Anything else says nothing (None),
never a guess.

`linear_model` tells a class that is one `nn.Linear` layer and nothing else (a logistic
regression, a linear probe on features): matmul-bound, but a single GEMM per step.

Size: every trait of a model class read in another file (its kind, recurrent cells,
graph layers, the widths of an RNN model's Linear layers) comes from one reading of
the class, kept in one module.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Optional

from envcheck.scripts.model_names import VISION_TRANSFORMERS, architecture, model_like

# PyTorch's `nn.Conv2d`, `nn.LazyConvTranspose3d`; Keras' `layers.Conv2D`,
# `Conv2DTranspose`, `Convolution2D`, `SeparableConv2D`, `DepthwiseConv2D`
CONV_LAYER = re.compile(
    r"^((Lazy)?Conv(Transpose)?[123]d|(Separable|Depthwise)?Conv(olution)?[123]D(Transpose)?)$"
)
CONV_BUILDERS = ("torchvision.models.", "timm.create_model", "models.resnet", "models.vgg")
MATMUL_LAYER_NAMES = {
    "Linear",
    "Bilinear",
    "LSTM",
    "GRU",
    "RNN",
    "LSTMCell",
    "GRUCell",
    "RNNCell",
    "MultiheadAttention",
    "Transformer",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
}
MAX_DEPTH = 3
# Layers of Hugging Face transformers named like a convolution that are none: GPT-2's
# `Conv1D` is a Linear with its weight transposed (transformers' pytorch_utils).
TRANSFORMERS_LINEAR = {"Conv1D"}

# A class named for an embedding (`PatchEmbed`, `TokenEmbedding`, `patch_embed`): one conv
# there projects patches or tokens into a transformer's width (a ViT's stride-p Conv2d is
# a linear map of each patch), no convolutional network.
EMBEDDING_NAME = re.compile(r"(Embed(ding)?s?|_embed(ding)?s?)(\d*D)?$")

# (module of the run, a name it imports) -> that name's kind in its defining file
Elsewhere = Callable[[str, int], Optional[str]]


def definition_kind(
    module: ast.Module, name: str, elsewhere: Elsewhere, depth: int = 0
) -> Optional[str]:
    """ "conv", "matmul" or None for the class or factory function `name` defined at the
    top level of `module`; `elsewhere(name, depth)` gives the kind of a name the module
    imports from another file of the run. Matmul only when every model-like part is in
    sight: a class with a `nn.Linear` head on a backbone built out of sight is no MLP."""
    if depth > MAX_DEPTH:
        return None
    definitions = {
        node.name: node
        for node in module.body
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    }
    found = definitions.get(name)
    if found is None or _data_class(found) or _trainer_class(found):
        return None
    torch_names = _torch_imports(module)
    linears = _imported_from(module, "transformers")
    matmul, unseen = False, False
    handed = _parameters(found)
    tables = _table_picks(module, found)
    heads = _handed_heads(found, handed)
    modules = _project_modules(module)
    values = _local_values(found) - set(definitions) - set(tables)
    projection = EMBEDDING_NAME.search(name) is not None and _conv_layers(found) == 1
    for node in ast.walk(found):
        if not isinstance(node, ast.Call):
            continue
        if id(node) in heads:
            # `model.fc = nn.Linear(...)` on a model handed in: a new head on a model built
            # elsewhere (a pretrained-weights loader), whose body is out of sight
            unseen = True
            continue
        text = ast.unparse(node.func)
        short = text.rsplit(".", 1)[-1]
        if isinstance(node.func, ast.Name) and node.func.id in handed:
            # `self.encoder = base_encoder(num_classes=dim)`: a model the caller hands in
            # (SimSiam's backbone, a torchvision ResNet picked by name), out of sight
            unseen = True
            continue
        if isinstance(node.func, ast.Name) and node.func.id in values:
            # `for conv_func in self.convs: x = conv_func(x)`: a layer the class holds,
            # built where it is named; its name says nothing of its kind
            continue
        if isinstance(node.func, ast.Name) and node.func.id in tables:
            picked = _picked_kind(module, tables[node.func.id], name, elsewhere, depth)
            if picked == "conv":
                return "conv"
            matmul, unseen = matmul or picked == "matmul", unseen or picked is None
            continue
        if short in linears and short in TRANSFORMERS_LINEAR:
            matmul = True  # Hugging Face's GPT-2 `Conv1D` is a Linear with its weight transposed
            continue
        if CONV_LAYER.match(short) and projection:
            matmul = True  # a patch or token embedding's one conv: a projection
            continue
        if text == "timm.create_model" and _timm_transformer(node):
            matmul = True  # `timm.create_model("swin_base_patch4_window12_384")`
            continue
        if CONV_LAYER.match(short) or (text.startswith(CONV_BUILDERS) and "(" not in text):
            # (not a method of the model a builder returned: `timm.create_model(...)
            # .state_dict()` is read as the builder's own call)
            return "conv"
        if short in MATMUL_LAYER_NAMES:
            matmul = True
            continue
        kind: Optional[str] = None
        if isinstance(node.func, ast.Name) and short in definitions:
            if short != name:
                kind = definition_kind(module, short, elsewhere, depth + 1)
        elif isinstance(node.func, ast.Name) and short not in torch_names:
            kind = elsewhere(short, depth + 1) or architecture(short)
            unseen = unseen or (kind is None and short[:1].isupper())
        elif isinstance(node.func, ast.Attribute) and _held(node.func):
            continue  # `self.resnet(x)`: a layer the class holds, built where it is named
        elif (
            isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in definitions
        ):
            # `ResNet.make_baseline(...)`: a constructor of a class of this module
            if node.func.value.id != name:
                kind = definition_kind(module, node.func.value.id, elsewhere, depth + 1)
        elif isinstance(node.func, ast.Attribute) and _root(node.func) in modules:
            # `resnet.generate_model(...)` with `from models import resnet`: the factory of
            # another file of the run decides, else its name
            kind = elsewhere(text, depth + 1)
            if kind is None and (model_like(short) or short[:1].islower()):
                kind = architecture(short)
        elif isinstance(node.func, ast.Attribute):
            kind = architecture(short) if model_like(short) or short[:1].islower() else None
        if kind == "conv":
            return "conv"
        matmul = matmul or kind == "matmul"
    return "matmul" if matmul and not unseen else None


def _conv_layers(definition: ast.AST) -> int:
    """How many convolution layers a definition builds by their class (`nn.Conv2d(...)`)."""
    return sum(
        1
        for node in ast.walk(definition)
        if isinstance(node, ast.Call)
        and CONV_LAYER.match(ast.unparse(node.func).rsplit(".", 1)[-1])
    )


def _timm_transformer(node: ast.Call) -> bool:
    """`timm.create_model("vit_base_patch16_224")`: a timm model whose name, in sight,
    is a vision transformer's."""
    given = node.args[0] if node.args else None
    for keyword in node.keywords:
        if keyword.arg == "model_name":
            given = keyword.value
    return (
        isinstance(given, ast.Constant)
        and isinstance(given.value, str)
        and given.value.lower().startswith(VISION_TRANSFORMERS)
    )


def _table_picks(module: ast.Module, definition: ast.AST) -> dict[str, list[str]]:
    """The local names a definition binds to a pick from a dict of the module's top level
    (`model_fun, dim_in = model_dict[name]` with `model_dict = {"resnet18": [resnet18,
    512], ...}`): each name with every definition the dict could give it, by position in
    the entries (`resnet18`, `resnet50`, ...); a name some entry gives no name is absent."""
    dicts = {
        target.id: node.value
        for node in module.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    picks: dict[str, list[str]] = {}
    for node in ast.walk(definition):
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.value, ast.Subscript)
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id in dicts
        ):
            continue
        table = dicts[node.value.value.id]
        target = node.targets[0]
        names: list[tuple[int, str]] = []
        if isinstance(target, ast.Name):
            names = [(-1, target.id)]
        elif isinstance(target, (ast.Tuple, ast.List)):
            names = [(i, t.id) for i, t in enumerate(target.elts) if isinstance(t, ast.Name)]
        for position, local in names:
            entries = [_entry(value, position) for value in table.values]
            if entries and all(e is not None for e in entries):
                picks[local] = sorted({e for e in entries if e is not None})
    return picks


def _entry(value: ast.expr, position: int) -> Optional[str]:
    """The name at `position` of a dict entry (`[resnet50, 2048]`, -1: the entry itself)."""
    if position >= 0:
        if not isinstance(value, (ast.Tuple, ast.List)) or position >= len(value.elts):
            return None
        value = value.elts[position]
    return value.id if isinstance(value, ast.Name) else None


def _picked_kind(
    module: ast.Module, names: list[str], own: str, elsewhere: Elsewhere, depth: int
) -> Optional[str]:
    """The kind every definition a dict pick could call shares ("conv" for SupContrast's
    ResNet factories), else None: which entry the caller picks is not in sight."""
    kinds = {definition_kind(module, n, elsewhere, depth + 1) if n != own else None for n in names}
    return kinds.pop() if len(kinds) == 1 else None


# Recurrent layers (a CRNN's BiLSTMs over its conv features). Attention beside
# convolutions of another file is left to the convolutions: such a model (SASRec's
# attention over kernel-1 Conv1d feed-forwards) is often a narrow transformer whose
# widths that file does not show.
SEQUENCE_LAYERS = {"LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"}
# Those of them stepped by hand, one cuBLAS matmul per step: more than a head beside
# convolutions. The full-sequence `nn.LSTM`/`nn.GRU`/`nn.RNN` run in cuDNN, under its
# TF32 switch, as the convolutions do.
RNN_CELLS = {"LSTMCell", "GRUCell", "RNNCell"}
CUDNN_RNN_LAYERS = SEQUENCE_LAYERS - RNN_CELLS
# Sparse aggregations over a graph's edges (`h.index_add_(0, dst, msg)`, `torch.spmm`).
AGGREGATIONS = {"scatter_add", "scatter_add_", "index_add", "index_add_", "spmm"}
# A parameter holding the indices of a graph's neighbours or edges (`nbr_fea_idx`,
# `edge_index`): features gathered by it are messages passed along the edges.
EDGE_INDEX = re.compile(r"(^|_)(idx|index|indices|edges?)(_|$)|neighbo|nbr")


def layer_traits(module: ast.Module, name: str, depth: int = 0) -> set[str]:
    """What the class `name` defined at the top level of `module` builds beyond its kind,
    following the classes of the module it builds: "recurrent" for recurrent layers (a
    CRNN's conv stack feeding `BidirectionalLSTM`s: those layers, not the
    convolutions, bound it), "graph" for message passing (features gathered by a
    parameter of neighbour or edge indices, `atom_in_fea[nbr_fea_idx, :]`, or summed
    over the edges, `torch.spmm`): a graph network of nn.Linear, whatever "Conv" in its
    layers' names says; "cells" too for RNN cells (`nn.LSTMCell`: cuBLAS matmuls, where
    `nn.LSTM` runs in cuDNN)."""
    definitions = {
        node.name: node
        for node in module.body
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    }
    found = definitions.get(name)
    if found is None or depth > MAX_DEPTH or _data_class(found):
        return set()
    traits: set[str] = set()
    handed = _parameters(found)
    for node in ast.walk(found):
        if isinstance(node, ast.Subscript) and _gathered(node, handed):
            traits.add("graph")
        if not isinstance(node, ast.Call):
            continue
        short = ast.unparse(node.func).rsplit(".", 1)[-1]
        if short in SEQUENCE_LAYERS:
            traits.add("recurrent")
            if short in RNN_CELLS:
                traits.add("cells")
        elif short in AGGREGATIONS:
            traits.add("graph")
        elif isinstance(node.func, ast.Name) and short in definitions and short != name:
            traits |= layer_traits(module, short, depth + 1)
    return traits


# Layers an RNN-only model may build beside its cuDNN RNNs and Linear layers: nothing
# of them is matmul work (`nn.Embedding` is a lookup).
RNN_COMPANIONS = {
    "Embedding",
    "Dropout",
    "ReLU",
    "Tanh",
    "Sigmoid",
    "Softmax",
    "LogSoftmax",
    "LayerNorm",
    "BatchNorm1d",
    "Sequential",
    "ModuleList",
    "Parameter",
    "Identity",
}
# A project's dropout around the RNN's weights or outputs (`WeightDrop`, `LockedDropout`).
DROPOUT_NAME = re.compile(r"Drop")
# a Linear's output width as the class writes it -> "projection", "head", None
LinearWidth = Callable[[ast.expr], Optional[str]]


def rnn_linears(
    module: ast.Module, name: str, read: LinearWidth, depth: int = 0
) -> Optional[list[tuple[Optional[str], str]]]:
    """The Linear layers of an RNN-only model class `name` defined at the top level of
    `module` (a word LM of `nn.LSTM` layers and its `nn.Linear(nhid, ntoken)` decoder),
    each with what `read` makes of its output width ("projection", "head", None) and its
    text; None for a class that builds anything else (convolutions, attention, RNN
    cells, a class of another module whose layers are out of sight) or no cuDNN RNN
    (`nn.LSTM`, `nn.GRU`, `nn.RNN`)."""
    definitions = {
        node.name: node
        for node in module.body
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    }
    found = definitions.get(name)
    if not isinstance(found, ast.ClassDef) or depth > MAX_DEPTH:
        return None
    linears: list[tuple[Optional[str], str]] = []
    rnn = False
    built = [
        node
        for method in found.body
        if isinstance(method, ast.FunctionDef) and method.name == "__init__"
        for node in ast.walk(method)
    ]
    if not built:
        return None
    for node in built:
        if not isinstance(node, ast.Call):
            continue
        short = ast.unparse(node.func).rsplit(".", 1)[-1]
        if not short[:1].isupper() or short.endswith(("Error", "Exception", "Warning")):
            continue  # a function or method, or an error raised: no layer
        if short in CUDNN_RNN_LAYERS:
            rnn = True
        elif short == "Linear":
            written = node.args[1] if len(node.args) > 1 else None
            written = next((k.value for k in node.keywords if k.arg == "out_features"), written)
            linears.append((read(written) if written is not None else None, ast.unparse(node)))
        elif short in definitions and short != name:
            inner = rnn_linears(module, short, read, depth + 1)
            if inner is None:
                return None
            linears += inner
        elif not (short in RNN_COMPANIONS or DROPOUT_NAME.search(short)):
            return None
    if depth == 0 and not rnn:
        return None
    return linears


def _gathered(node: ast.Subscript, handed: set[str]) -> bool:
    """`x[nbr_idx]`, `x[edge_index, :]`: features handed in, indexed by neighbour or edge
    indices handed in."""
    index = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) else node.slice
    return (
        isinstance(node.value, ast.Name)
        and node.value.id in handed
        and isinstance(index, ast.Name)
        and index.id in handed
        and bool(EDGE_INDEX.search(index.id))
    )


def _local_values(definition: ast.AST) -> set[str]:
    """The names a definition binds to values: loop and comprehension targets (`for
    conv_func in self.convs`), and names assigned a call's result or an item or attribute
    of something (`layer = self.layers[i]`). A name assigned another name (`block =
    BasicBlock`) may be a class by reference: not a value."""
    names: set[str] = set()
    for node in ast.walk(definition):
        targets: list[ast.expr] = []
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            targets = [node.target]
        elif isinstance(node, ast.Assign) and isinstance(
            node.value, (ast.Call, ast.Subscript, ast.Attribute)
        ):
            targets = list(node.targets)
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Name):
                    names.add(leaf.id)
    return names


def _imported_from(module: ast.Module, root: str) -> set[str]:
    """Names the module imports from the package `root` (`from transformers.modeling_utils
    import Conv1D`)."""
    return {
        alias.asname or alias.name
        for node in ast.walk(module)
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == root
        for alias in node.names
    }


def _parameters(definition: ast.AST) -> set[str]:
    """The parameters of a function, or of a class's methods."""
    names: set[str] = set()
    for node in ast.walk(definition):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            names |= {a.arg for a in every if a.arg not in ("self", "cls")}
    return names


def _data_class(definition: ast.AST) -> bool:
    """A Dataset or DataLoader class (`class AudioDataset(Dataset)`): whatever layers it
    builds (an STFT of `F.conv1d` computing features) make samples, no model trained."""
    if not isinstance(definition, ast.ClassDef):
        return False
    bases = [ast.unparse(base).rsplit(".", 1)[-1] for base in definition.bases]
    return any(base.endswith(("Dataset", "DataLoader")) for base in bases)


def _trainer_class(definition: ast.AST) -> bool:
    """A plain class (no base: `class TrainLoop:`) whose methods run backward passes: the
    project's trainer, handed the model it trains; the networks it builds for evaluation
    (a feature extractor for metrics) are not that model."""
    if not isinstance(definition, ast.ClassDef):
        return False
    if any(ast.unparse(base) != "object" for base in definition.bases):
        return False
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "backward"
        for node in ast.walk(definition)
    )


def _handed_heads(definition: ast.AST, handed: set[str]) -> set[int]:
    """The calls a definition assigns to an attribute of a model handed in (`model.fc =
    nn.Linear(model.fc.in_features, n)`, also through a local bound to it: `tmp = model`):
    a head replaced on a model built elsewhere, no model the definition builds."""
    names = set(handed)
    for node in ast.walk(definition):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name)
            and node.value.id in names
        ):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    found: set[int] = set()
    for node in ast.walk(definition):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and any(isinstance(t, ast.Attribute) and _root(t) in names for t in node.targets)
        ):
            found.add(id(node.value))
    return found


def _root(node: ast.expr) -> Optional[str]:
    """The name an attribute chain starts from (`resnet` of `resnet.generate_model`)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _project_modules(module: ast.Module) -> set[str]:
    """The names the module binds to imports not of torch (`from models import resnet`,
    `import utils.nets as nets`): a call through one may reach a file of the run."""
    names: set[str] = set()
    for node in module.body:
        if isinstance(node, ast.Import):
            names |= {
                alias.asname or alias.name.split(".")[0]
                for alias in node.names
                if alias.name.split(".")[0] != "torch"
            }
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] != "torch":
            names |= {alias.asname or alias.name for alias in node.names if alias.name != "*"}
    return names


def _held(func: ast.Attribute) -> bool:
    """A call of something the instance holds or of its own method (`self.resnet(x)`,
    `self.blocks[0](x)`): a value named alike says nothing of its kind (model_names.py);
    the layers it holds are built, and its methods defined, in the class walked."""
    value: ast.expr = func.value
    while isinstance(value, (ast.Attribute, ast.Subscript)):
        value = value.value
    return isinstance(value, ast.Name) and value.id == "self"


def _torch_imports(module: ast.Module) -> set[str]:
    """Names the module imports from torch (`from torch.nn import Linear, ReLU`)."""
    return {
        alias.asname or alias.name
        for node in module.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch"
        for alias in node.names
    }


def linear_model(module: ast.Module, name: str) -> bool:
    """Whether the class `name` defined at the top level of `module` is one `nn.Linear`
    layer (`self.model = nn.Linear(n_features, n_classes)`) and nothing else: no other
    layer or model, no call of the project's (a helper could build layers); calls on its
    own attributes (`self.model(x)`), torch's functions (`torch.sigmoid(x)`) and methods
    of the tensors its methods are given (`x.view(x.shape[0], -1)`) run it."""
    found = next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == name), None)
    if found is None:
        return False
    torch_names = _torch_imports(module) | {"torch", "nn", "F"}
    handed = _parameters(found)
    linear = 0
    for node in ast.walk(found):
        if not isinstance(node, ast.Call):
            continue
        text = ast.unparse(node.func)
        short = text.rsplit(".", 1)[-1]
        if short == "Linear":
            linear += 1
        elif text == "super" or short == "__init__" or text.startswith("self."):
            continue
        elif isinstance(node.func, ast.Attribute) and _root(node.func) in handed:
            continue  # `x.view(x.shape[0], -1)` in forward: a method of the tensor given
        elif not (short[:1].islower() and text.split(".")[0] in torch_names):
            return False
    return linear == 1
