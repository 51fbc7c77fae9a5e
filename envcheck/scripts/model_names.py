"""What a model's name says about its kind: convolutional or matmul-bound.

A model built out of sight (`ResNet18()`, `create_yolov3_model()`, `RNNModel()`) is
judged by the architecture word in its class or factory name (precision.py reads the
names; the rules EC506-EC508 depend on the kind). Graph neural networks are matmul
models: their message-passing layers (PyG's `GCNConv`, DGL's `dgl.nn.SAGEConv`) are a
Linear transform and a sparse aggregation over the edges, no cuDNN convolution,
whatever "Conv" in their names says.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from envcheck.scripts.assignments import statements

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
    "efficientdet",
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
    # point-cloud networks: PointNet's shared per-point MLPs are 1x1 convolutions over
    # the points (Conv1d/Conv2d of kernel 1 in the reference implementations)
    "pointnet",
    # image generators and restorers built from convolutions
    "vqgan",
    "stylegan",
    "cyclegan",
    "pix2pix",
    "srgan",
    "esrgan",
    "srresnet",
    "edsr",
)
# A name that starts with one of these converts or exports data, whatever it converts
# to (`convert_coco_dataset_to_yolo`): it does not name the model.
NOT_MODEL = ("convert", "export")
# timm's vision transformers by their architecture's name (`swin_base_patch4_window12_384`,
# `vit_base_patch16_224`): their matmuls, not the one patch-embedding conv, dominate.
VISION_TRANSFORMERS = ("vit", "deit", "swin", "beit", "maxvit", "eva", "cait", "xcit", "mvit")
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
# Graph neural networks named by their acronym (`GCN`, `GIN`, `GraphSAGE`, `DeepGCN`,
# `GATNet`, `build_gnn`): whole words only, as `gather`, `gate` or `engine` are none,
# and in lower case only those no other word spells (`write_gin_config` is gin's).
GRAPH_MODEL = re.compile(
    r"(?:^|_|(?<=[a-z0-9]))(?:GCN|GAT|GIN|GNN|SAGE|MPNN)(?=$|_|\d|[A-Z][a-z])"
    r"|(?:^|_)(?:gcn|gnn|mpnn)(?=$|_|\d)"
)
# The libraries of graph layers (PyG, DGL): their `*Conv` layers pass messages.
GRAPH_LAYERS = ("torch_geometric.nn.", "dgl.nn.")
# Graph layers that wrap a network given to them (`GINConv(mlp)`): their widths are
# that network's, read where it is built.
GRAPH_WRAPPERS = ("GINConv", "GINEConv", "EdgeConv", "DynamicEdgeConv")
# The size keywords of PyG's (`in_channels`) and DGL's (`in_feats`) graph layers.
GRAPH_INPUT = ("in_channels", "in_feats")
GRAPH_OUTPUT = ("out_channels", "out_feats")
# The hidden width handed to a model built out of sight (`nhid`, `hidden_channels`,
# `hid_size`, `n_hidden`, `hidden_dim`).
HIDDEN_KEYWORD = re.compile(r"^(n_?|num_)?hid(den)?(_(dim|size|channels|units|feats|features))?s?$")
# The number of attention heads a transformer is built with (`num_heads`, `n_heads`,
# `nhead`, `num_attention_heads`).
ATTENTION_HEADS = re.compile(r"^(num_|n_?)(attention_)?heads?$")
# Where a word of a name starts: the start, after `_`, or a capital after a lower-case
# letter or digit (`GeneratorResNet` -> Generator, ResNet; `conv2d_gradfix` -> conv2d).
WORD_START = re.compile(r"(?:^|_|(?<=[a-z0-9])(?=[A-Z]))")
# Words of a name also after an acronym (`GINDataset` -> GIN, Dataset).
CAMEL_WORDS = re.compile(r"_|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# An acronym in capitals that ends in CNN (`DGCNN`, Dynamic Graph CNN), where no case
# change marks the word: CNN starts a word as in `TextCNN`.
ACRONYM_CNN = re.compile(r"(?<=[A-Z])CNN(?![a-z])")
# `convert_image()`, `converter`: not a convolution
NOT_CONV = ("conver",)
# A name whose first word is one of these checks, switches, reports or trims something
# (`check_keras_bert()`, `activate_transformer(...)`, transformers' `prune_conv1d_layer`):
# it builds no model.
NOT_MODEL_VERBS = {
    "check", "activate", "is", "has", "validate", "verify", "print", "log", "prune",
}  # fmt: skip
# A name with one of these words handles data, not a model (`bert_data_tuple(...)`), or
# chat text (FastChat's `get_conv_template("vicuna")`: "conv" there is a conversation).
DATA_WORDS = {
    "data", "dataset", "loader", "tuple", "preprocess", "preprocessor", "tokenizer",
    "template", "prompt", "conversation",
}  # fmt: skip
# The last word of a class that wraps a model handed to it (`DecisionTransformerInference
# Wrapper(policy=actor)`): the model is built elsewhere, and its own construction names
# its kind and size, not the wrapper around it.
WRAPPER_WORDS = {"wrapper"}


def architecture(name: str) -> Optional[str]:
    """'conv' or 'matmul' when a model's class or factory name says which, else None: an
    architecture word at the start of the name or of one of its words, `_`-separated or
    CamelCase (`GeneratorResNet`, `DGCNN`: convolutional; `GPT`, `TransformerModel`,
    `GCN`: matmul)."""
    if name.lower().lstrip("_").startswith(NOT_MODEL):  # `convert_coco_to_yolo()`
        return None
    words = [w.lower() for w in WORD_START.split(name) if w]
    if words and (words[0] in NOT_MODEL_VERBS or DATA_WORDS.intersection(words)):
        return None
    if words and words[-1] in WRAPPER_WORDS:
        return None  # wraps a model built elsewhere: that one's name says its kind
    if DATA_WORDS.intersection(w.lower() for w in CAMEL_WORDS.split(name)):
        return None  # `GINDataset`: the data of a graph network, no model
    parts = tails(name)
    if words and words[0] == "graph" and len(words) > 1:
        return "matmul"  # `GraphCNN` (GIN's powerful-gnns): message passing, not cuDNN
    for part in parts:
        if part.startswith(CONV_WORDS) and not part.startswith(NOT_CONV):
            return "conv"
    for part in parts:
        if part.startswith(MATMUL_WORDS):
            return "matmul"
    return "matmul" if GRAPH_MODEL.search(name) else None


# A module named for diffusion (`models.diffusion`, `gaussian_diffusion`): the noise
# predictor of an image diffusion model (DDPM, DDIM, score-SDE, guided-diffusion) is a
# UNet of convolutions; a diffusion transformer names itself (`DiT`, `DiffusionTransformer`).
DIFFUSION = "diffusion"


def module_architecture(part: str) -> Optional[str]:
    """The kind a module of the project names (`models.yolo`: conv; `models.diffusion`:
    conv, an image diffusion UNet), else None."""
    kind = architecture(part)
    if kind is None and any(t.startswith(DIFFUSION) for t in tails(part)):
        return "conv"
    return kind


def named_file(text: str) -> Optional[str]:
    """The kind the architecture named by a model definition file or name says
    (`config/yolov3.cfg`: yolov3, conv; `"resnet50"`: conv; `gpt2-medium`: matmul), else
    None: the file's stem, its extension dropped."""
    stem = re.split(r"[/\\]", text.strip())[-1]
    stem = re.sub(r"\.\w+$", "", stem)
    return architecture(stem) if stem else None


def tails(name: str) -> list[str]:
    """The name from each of its word starts on, lower-cased, `_` dropped:
    `GeneratorResNet` -> ["generatorresnet", "resnet"]; `DGCNN` -> ["dgcnn", "cnn"]."""
    starts = {m.end() for m in WORD_START.finditer(name)}
    starts |= {m.start() for m in ACRONYM_CNN.finditer(name)}
    return [t for t in (name[i:].lower().lstrip("_") for i in sorted(starts)) if t]


def model_like(callee: str) -> bool:
    """A class name that says it is a model (`Model`, `SegmentationModel`, `UNet`)."""
    return "model" in callee.lower() or callee.endswith(("Net", "Network"))


def graph_layer(name: str) -> bool:
    """A message-passing layer of PyG or DGL (`torch_geometric.nn.GCNConv`,
    `dgl.nn.pytorch.conv.GINConv`): Linear transforms over node features, matmul-bound."""
    return name.startswith(GRAPH_LAYERS) and name.rsplit(".", 1)[-1].endswith("Conv")


def graph_library(name: str) -> bool:
    """Anything of the graph libraries' layer namespaces (`dgl.nn.pytorch.conv.*`): no
    cuDNN convolution, whatever its module is called."""
    return name.startswith(GRAPH_LAYERS)


def sized_by_width(name: str) -> bool:
    """A graph network or an MLP (`GCN`, `GraphSAGE`, `MLP`): a stack of layers whose size
    its hidden width sets, unlike a transformer's or a CNN's."""
    if bool(GRAPH_MODEL.search(name)) or any(t.startswith("mlp") for t in tails(name)):
        return True
    words = [w.lower() for w in WORD_START.split(name) if w]
    return len(words) > 1 and words[0] == "graph"  # `GraphCNN`, `GraphConvNet`


def value_names(owner: ast.AST) -> set[str]:
    """The names a function (or the module) binds as values: its parameters, and the
    targets of its assignments, loops and `with` blocks, lambdas included; not a name
    assigned a class or function by reference (`backbone = resnet18`)."""
    names: set[str] = set()
    if isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = owner.args
        names |= {
            a.arg
            for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            + [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        }
    for statement in statements(list(getattr(owner, "body", []))):
        targets: list[ast.AST] = []
        if isinstance(statement, ast.Assign) and not isinstance(
            statement.value, (ast.Name, ast.Attribute)
        ):
            targets = list(statement.targets)
        elif isinstance(statement, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            targets = [statement.target]
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            targets = [i.optional_vars for i in statement.items if i.optional_vars is not None]
        names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def attention_heads(call: ast.Call) -> bool:
    """A call given a number of attention heads (`Translator(num_heads=8)`, `Model(nhead=
    4)`, or positionally an option so named to a class: Informer's `Model(..., args.n_heads)`):
    whatever it is named, it builds (or configures) a transformer."""
    if any(k.arg is not None and ATTENTION_HEADS.match(k.arg) for k in call.keywords):
        return True
    func = call.func
    callee = func.attr if isinstance(func, ast.Attribute) else None
    callee = func.id if isinstance(func, ast.Name) else callee
    if not isinstance(func, ast.Subscript) and not (callee and callee[0].isupper()):
        return False  # positionally, only to a class (or one picked from a dict), never
        # to a function or method (`fname.format(epoch, args.num_heads)`)
    for arg in call.args:
        last = arg.attr if isinstance(arg, ast.Attribute) else None
        last = arg.id if isinstance(arg, ast.Name) else last
        if last is not None and ATTENTION_HEADS.match(last):
            return True
    return False
