"""Mixed precision and convolutional models in a PyTorch script, read from the source.

`read` returns file facts:

- `autocast`: True when mixed precision is on in a default run: `torch.autocast` or a
  GradScaler used (called, or referenced: `functools.partial(torch.autocast, ...)`,
  `ctx = torch.autocast`), Accelerate `mixed_precision="fp16"`, Lightning
  `precision="16-mixed"`, `TrainingArguments(fp16=True)`, `model.half()` (or a project
  model's own cast, `model.convert_to_fp16()`, for hand-rolled mixed precision), apex
  `amp.initialize`, a precision setting handed to the project's own classes
  (`MixedPrecisionTrainer(use_fp16=True)`) or precision helpers
  (`get_autocast(args.precision)`), a model built or loaded in half precision
  (`set_default_dtype(torch.bfloat16)`, `from_pretrained(torch_dtype=torch.bfloat16)`,
  `model.to(dtype=torch.bfloat16)`), an FSDP policy casting the parameters to a half
  dtype (`MixedPrecisionPolicy(param_dtype=torch.bfloat16)`, `MixedPrecision(...)`);
- `amp_gate`: when every use sits behind a condition (`if args.amp:`, `... if args.amp
  else None`, `enabled=args.amp`, a parameter `use_amp=False`, an autocast whose dtype is
  float32 unless `--dtype` says otherwise) or a setting the source does not show (a recipe's
  `set_default_dtype(cfg_dtype)`, the Trainer of a LightningModule defined elsewhere,
  `accelerate launch`): `{"text", "option", "default"}` — the flag and its default, e.g.
  option "--amp", default False: AMP is off unless --amp is passed (option "--dt bfloat16"
  for `if args.dt == "bfloat16":`); default None: not known; `"outside": True` for a setting
  made outside the source. `Accelerator()` without mixed_precision (or given `**kwargs`, a
  dict the source spells out without it) is Accelerate's float32 default
  (`"framework_default": True`), as Fabric() and a Lightning Trainer's precision are,
  unless the script branches on `accelerator.mixed_precision` (then the launcher's);
  a LightningCLI runs the file's LightningModule wherever it is called
  (lightning_runner.py); a Trainer built from a settings dict out of sight
  (`Trainer.from_argparse_args(argparse.Namespace(**trainer_config))`) or from a Hydra
  config and fitted (`trainer = hydra.utils.instantiate(cfg.trainer)`) is set outside
  (not known), one from the parsed options (`Trainer.from_argparse_args(args)`) keeps
  Lightning's default unless `--precision` is passed;
- `conv_layers`: the model has convolutions: `nn.Conv*`, `torchvision.models.*` (not the
  transformers among them), `timm.create_model` of a convolutional architecture, or a
  model of the project built out of sight whose name says it (`ResNet18()`, `DGCNN()`,
  `modeling.__dict__["deeplabv3plus_mobilenet"]`, Lightning's
  `get_torchvision_model("resnet50")`, a factory picked into a variable, a
  model class imported from a module named after it: `models.yolo.Model`, or a
  diffusion model's: `models.diffusion.Model`, a UNet; a model a project function loads
  from a definition named for it: `load_model("config/yolov3.cfg")`, or one made by a
  module imported by a name that names it: `importlib.import_module(args.model)` with
  --model "pointnet_cls"), or a model
  put in the channels-last layout that only convolutions use; TensorFlow's raw ops
  (`tf.nn.conv2d`, `tf.matmul` on the script's own variables) and graph layers (PyG's
  `GCNConv`, DGL's `dgl.nn.SAGEConv`: message passing) are no such model. Names are
  read on constructors and classes, not on values (`loss_fcn(...)`, `self.conv1(x)`),
  nor on a class of the file whose layers are in sight (its own `class MLP`, any
  nn.Module of the file); a class subclassing a layer (`class Layer(nn.Linear)`) is
  that layer;
  A model built and kept frozen (frozen_models.py: in eval mode, trained by no optimizer,
  run in no loop of backward passes) is not read;
- `matmul_layers`: matmul-bound layers or architectures in sight (`nn.Linear`, `nn.LSTM`,
  `nn.Transformer*`, a Hugging Face model, graph layers, `RNNModel()`, `GCN()`, a model
  of the project given attention heads: `Translator(num_heads=8)`, one picked from a
  registry of model builders by an architecture's name: `sam_model_registry["vit_b"]`, or
  from a registry dict by a key the source settles: `ENCODERS[args.encoder]()` building
  `MLPEncoder` by the option's default (registries.py)), with
  `cudnn_rnns` those of them that are `nn.LSTM`/`nn.GRU`/`nn.RNN` (run in cuDNN, under
  its TF32 switch; `nn.LSTMCell` and the other cells are not), `attention_classes` the
  file's classes named for attention that build `nn.Linear` (an attention of Linear
  layers, no head), with
  `toy_model` True when the only ones are a few small `nn.Linear` of constant size, or an
  MLP/RNN/graph network of two or more layers whose widths in sight are all small
  (`nn.Linear(n_obs, 64)`: the input width from the environment is not in sight; widths
  passed to the file's own class, `Net(7, 16, 2)`, read by widths.py; nothing convolutional
  but, for a toy CNN, `nn.Conv*` layers of at most TOY_CHANNELS channels in sight under
  nn.Linear layers of at most TOY_HEAD_WEIGHTS weights: a LeNet's 6 and 16 channels;
  no named architecture: a ResNet-50 under a 2048x1 head is none), or a graph network or
  MLP built out of sight and given a small
  hidden width (`GCN(nhid=16)`), or a transformer so given a small width and a few layers
  (`DecisionTransformer(hidden_size=128, n_layer=3)`): nothing for tensor cores to speed
  up. Neither conv nor matmul: the model is built out of sight and the rules that depend
  on its kind say unknown; `toy_cnn` True for the toy CNN (a LeNet);
- `rl_environment`: the file imports Gym or Gymnasium (or an RL library on them:
  TorchRL, Tianshou, Stable-Baselines3, dm_env, PettingZoo) or samples a replay memory
  or reads a rollout storage in a file of actions (`mem.sample(batch_size)`,
  `rollouts.feed_forward_generator(...)`), a reinforcement-learning agent whose
  network (its policy, when out of sight) is the caller's choice; `env_rollouts`: the
  `envs.step(...)` call of such an agent's training loop (the loop of its backward pass
  steps the environment: each update waits for the simulator), or None; `caller_widths`:
  such an agent's MLP/RNN in sight has its widths passed by a caller out of sight;
- `feature_embeddings`: for a model out of sight, where the file keys embedding tables by
  its input's features (a CTR/recommender base model: `create_embedding_matrix(
  feature_columns)`, `nn.Embedding` tables of `feature_map.feature_specs`), or None;
- `graph_batches`: for a model out of sight, what shows it is fed graphs (an import of
  PyG, DGL or TorchDrug; `self.model(graphs, ...)`), or None;
- `quantized_model`: a pretrained model loaded quantized (`from_pretrained(...,
  load_in_8bit=True)`, `load_in_4bit=True`, `quantization_config=BitsAndBytesConfig(...)`):
  `{"text", "matmuls"}`, matmuls "int8" (8-bit), "half" (4-bit computing in
  bfloat16/float16) or None (not known: float32 compute by default, a load under a
  condition, a config out of sight), or None;
- `benchmark_elsewhere`: for a LightningModule whose Trainer is built in another file
  (and no cuDNN setting in this one), that the Trainer there sets cuDNN autotuning.

Size: one reader, one walk. Each call is read once for the precision it switches on and
the model it builds, under the conditions in force at that point (the gates) and the
scope of its function; what a name says of a model's kind is model_names.py's, the
widths of layers through constructors widths.py's.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any, Optional, Union

from envcheck.scripts.class_kinds import MATMUL_LAYER_NAMES
from envcheck.scripts.device import LIGHTNING_ROOTS
from envcheck.scripts.frozen_models import frozen_builds
from envcheck.scripts.hf_trainers import TRAINER_ROOTS
from envcheck.scripts.index import keyword_arg, module_nodes, qualified_base
from envcheck.scripts.lightning_runner import benchmark, runner_kind, trainer_settings, trains
from envcheck.scripts.model_names import (
    GRAPH_INPUT,
    GRAPH_MODEL,
    GRAPH_OUTPUT,
    GRAPH_WRAPPERS,
    HIDDEN_KEYWORD,
    VISION_TRANSFORMERS,
    WORD_START,
    architecture,
    attention_heads,
    graph_layer,
    graph_library,
    model_like,
    module_architecture,
    named_file,
    sized_by_width,
    value_names,
)
from envcheck.scripts.padded_batches import padding_collates
from envcheck.scripts.parameters import handed_value, parameter_default
from envcheck.scripts.projections import output_width
from envcheck.scripts.registries import picked_name
from envcheck.scripts.training_calls import outside_step
from envcheck.scripts.values import Scope, Value, keyword_values, resolve
from envcheck.scripts.widths import data_widths, width

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
# A project model's own method casting it to half precision, as `.half()` does
# (improved-diffusion's `model.convert_to_fp16()`, beside master parameters in float32
# and a hand-rolled loss scale): mixed precision by hand.
HALF_CONVERSION = re.compile(r"^(convert_)?to_(fp16|bf16|half|float16|bfloat16)$")
# Precision settings handed to a project's own trainer or model class.
PROJECT_KEYWORDS = ("precision", "fp16", "bf16", "use_fp16", "use_bf16", "amp", "use_amp")
# `self.use_fp16 = use_fp16 in __init__`: a constructor parameter, set by the caller (its
# default is not the run's value)
CALLER_DECIDES = re.compile(r"self\.\w+ = [A-Za-z_]\w* in __init__")
# Libraries whose `precision=`-like arguments mean something else (print precision, a
# metric), and the calls read above with their own meaning.
# TensorFlow's raw ops (`tf.nn.conv2d(x, w1, ...)` on the script's own `tf.Variable`s):
# named for what they compute, they are no model of the project, and a Keras
# mixed-precision policy, which casts only Keras layers, leaves them in float32.
RAW_TF_OPS = (
    "tensorflow.nn.",
    "tensorflow.raw_ops.",
    "tensorflow.compat.v1.nn.",
    "tensorflow.matmul",
    "tensorflow.linalg.",
)
LIBRARIES = ("torch.", "numpy.", "torchmetrics.", "sklearn.", "tensorflow.", "keras.")
HANDLED = ("Accelerator", "Trainer", "Fabric", "TrainingArguments", "Seq2SeqTrainingArguments")
# Accelerator(**kwargs), or a flag defaulting to None: `accelerate launch` or its config
# decides; without them the run is float32.
LAUNCH_CONFIG = "accelerate launch --mixed_precision or accelerate config"
# Accelerator() with no mixed_precision at all: Accelerate's own default, float32, as
# Fabric() and a Lightning Trainer are.
FRAMEWORK_DEFAULT = (
    "Accelerator() at Accelerate's default mixed_precision 'no' (unless `accelerate launch "
    "--mixed_precision` or `accelerate config` changes it)"
)
# `accelerator.autocast()` on an Accelerator built out of sight: Accelerate's autocast
# follows that Accelerator's mixed_precision (a no-op under "no").
ACCELERATOR_ELSEWHERE = (
    "the mixed_precision of the Accelerator {call}() uses (built out of this file)"
)
# TrainingArguments from the command line: fp16/bf16 default to False.
HF_COMMAND_LINE = "--fp16/--bf16 on the command line"
# A Lightning Trainer built from a Hydra config (`hydra.utils.instantiate(cfg.trainer)`):
# its precision is set outside the source.
HYDRA_RUNNER = "the precision in the Hydra config the trainer is built from ({config})"
HYDRA_INSTANTIATE = ("hydra.utils.instantiate", "hydra.utils.call")
# Trainer()/Fabric() of Lightning given no precision: its float32 default.
LIGHTNING_DEFAULT_TAIL = "at Lightning's default precision '32-true'"
LIGHTNING_DEFAULT = "{short}() " + LIGHTNING_DEFAULT_TAIL
# TrainingArguments(...) given neither fp16 nor bf16: transformers' float32 default.
HF_DEFAULT = "TrainingArguments() at transformers' default fp16=False, bf16=False"
# Set outside the source, and float32 when not set (the default run is float32).
OFF_UNLESS_SET = (LAUNCH_CONFIG, HF_COMMAND_LINE)
# A Hugging Face Trainer subclass of the file (MeZO's `OurTrainer(Trainer)` copying
# `_inner_training_loop`, its GradScaler under the inherited `self.do_grad_scaling`) that
# the file gives no TrainingArguments: the caller's arguments set its precision.
HF_SUBCLASS = (
    "the fp16/bf16 of the TrainingArguments its caller hands the Trainer subclass {name} "
    "(the parent class turns on autocast and the GradScaler from them)"
)
# A LightningModule whose Trainer is created elsewhere: that Trainer sets the precision.
LIGHTNING_ELSEWHERE = (
    "the Lightning Trainer that runs this LightningModule (not in this file) sets its precision"
)
# ... and cuDNN autotuning, with its `benchmark=`: a run-level setting of that file.
BENCHMARK_ELSEWHERE = (
    "the Lightning Trainer that runs this LightningModule (not in this file) sets cuDNN "
    "autotuning with its benchmark="
)
# Half-precision dtypes, and full ones, as written (`torch.bfloat16`, `"bf16"`).
HALF_DTYPES = ("bfloat16", "float16", "half", "bf16", "fp16")
FULL_DTYPES = ("float32", "float64", "float", "double", "fp32", "tf32")
# Project helpers that take the precision setting positionally (`get_autocast(args.precision)`).
PRECISION_HELPERS = ("autocast", "precision", "amp", "dtype", "scaler", "fp16", "bf16", "half")
# Calls whose mixed precision comes from a configuration outside the source.
EXTERNAL_CONFIG = ("deepspeed.initialize",)
# FSDP's mixed-precision policies (FSDP2's `fully_shard(mp_policy=MixedPrecisionPolicy(
# ...))`, FSDP1's `FullyShardedDataParallel(mixed_precision=MixedPrecision(...))`): the
# parameters are cast to `param_dtype` for the forward and backward, so a half dtype
# runs the matmuls and convolutions in it, as autocast does.
FSDP_POLICIES = ("MixedPrecisionPolicy", "MixedPrecision")
MIXED_VALUES = (
    "fp16",
    "bf16",
    "16",
    "bf16-mixed",
    "16-mixed",
    "16-true",
    "bf16-true",
    "fp8",
    # the projects' own precision settings (open_clip's --precision choices)
    "amp",
    "amp_bf16",
    "amp_bfloat16",
    "pure_bf16",
    "pure_fp16",
)
# Architectures among torchvision/timm models that are transformers, not convolutional.
TRANSFORMERS = VISION_TRANSFORMERS
# Their matmuls, not convolutions, dominate: TF32 matters there.
# Layers whose matmuls dominate the model's compute.
MATMUL_LAYERS = {f"torch.nn.{n}" for n in MATMUL_LAYER_NAMES} | {"torch.nn.functional.linear"}
# The full-sequence recurrent modules PyTorch runs through cuDNN on a GPU; their cells
# (`nn.LSTMCell`) are cuBLAS matmuls.
CUDNN_RNNS = {"LSTM", "GRU", "RNN"}
# A class of the file named for attention (`Attention`, `BahdanauAttention`, `AttnDecoder`).
ATTENTION_CLASS = re.compile(r"Attention|Attn")
# A convolution layer or block by its class name (`nn.Conv2d`, `ConvTranspose2d`, a
# project's `common.Conv`, `ConvBNReLU`), not a word that only starts alike
# (`transforms.ConvertImageDtype` converts a tensor's dtype).
CONV_CLASS = re.compile(r"\.(Lazy)?Conv(?![a-z])|\.Convolution")
# Parameters that hold the model a trainer trains (`model`, `student_model`, `net`).
MODEL_PARAMETER = re.compile(r"^(\w+_)?(model|net|network)$")
# The base of PyTorch models (a LightningModule is one): a class of the file deriving from
# it shows its layers in its body, whatever its name says (`class GraphConvNet(nn.Module)`
# of the file's own matmul layers).
TORCH_MODULES = {
    "torch.nn.Module",
    *(f"{root}LightningModule" for root in ("lightning.pytorch.", "pytorch_lightning.")),
    "lightning.LightningModule",
}
# The memory layouts PyTorch offers for convolutional models (channels-last tutorial).
CHANNELS_LAST = ("torch.channels_last", "torch.channels_last_3d")
# A model made only of nn.Linear layers with fewer weights than this is a toy: there is
# nothing for tensor cores to speed up (nn.Linear(20, 1) of the DDP tutorial).
TOY_WEIGHTS = 10_000
# An MLP or small RNN whose layer widths in sight are all at most this wide (hidden sizes
# 64, 120, 128 of RL agents and tutorials; the input width may come from the environment
# or the data) is a toy too: its matmuls are too narrow to gain from tensor cores.
TOY_WIDTH = 128
# A transformer given a width of at most TOY_WIDTH is a toy when its depth in sight is at
# most this many layers (`n_layer=3`): `n_layer`, `num_layers`, `n_layers`, `depth`.
TOY_DEPTH = 6
# Convolutions of at most this many channels, in and out, in sight (a LeNet's 6 and 16 on
# 32x32 images), under an MLP head of small widths, make a toy CNN: its steps are bound
# by kernel launches, not by the arithmetic autotuning or tensor cores speed up.
TOY_CHANNELS = 16
# torch.nn's convolution layers, whose first two sizes are their channels.
# ... and the weights of their nn.Linear head at most this many (a LeNet's 400x120, 120x84
# and 84x10: 59,000), the widths read through the file's constructors (widths.py).
TOY_HEAD_WEIGHTS = 100_000
NN_CONV = re.compile(r"^torch\.nn\.(modules\.conv\.)?Conv[123]d$")
LAYER_COUNT = re.compile(r"^((n|num)_?(hidden_)?layers?|depth)$")
# The matmul layers whose widths the toy test reads: their size keywords.
SIZED_LAYERS = {
    "Linear": ("in_features", "out_features"),
    "RNN": ("input_size", "hidden_size"),
    "GRU": ("input_size", "hidden_size"),
    "LSTM": ("input_size", "hidden_size"),
    "RNNCell": ("input_size", "hidden_size"),
    "GRUCell": ("input_size", "hidden_size"),
    "LSTMCell": ("input_size", "hidden_size"),
}
# Reinforcement-learning environment APIs: a file on them trains an agent whose policy
# network, when built out of sight, is the caller's (Stable-Baselines3's `policy=
# "MlpPolicy"`, two 64-unit layers by default).
# Reinforcement-learning environments and the RL libraries built on them (TorchRL's
# envs and collectors, Tianshou, Stable-Baselines3, DeepMind's dm_env / dm_control,
# PettingZoo): a file on one of them is an RL agent.
RL_ENVIRONMENTS = {
    "gym", "gymnasium", "torchrl", "tianshou", "stable_baselines3", "dm_env", "dm_control",
    "pettingzoo",
}  # fmt: skip
# An agent's replay memory, sampled for each update (`mem.sample(batch_size)`,
# `self.replay_buffer.sample(...)`): the receiver's last name.
REPLAY_MEMORY = re.compile(r"(?i)^(mem|memory|\w*replay\w*|\w*_buffer|buffer)$")


# An on-policy agent's rollout storage, read for each update (`rollouts.returns`,
# `rollouts.feed_forward_generator(advantages, ...)`): the name of the value read.
ROLLOUT_STORAGE = re.compile(r"(?i)^(\w+_)?rollouts?(_(storage|buffer|memory))?$")


# Layers a graph network keeps beside its message passing (input encoders, readout MLPs):
# they do not make it matmul-bound.
GRAPH_COMPANIONS = {"Linear", "Bilinear", "Embedding", "MLP"}


def _replay_agent(walker: Walker) -> bool:
    """An RL agent without an environment library in sight (Rainbow's agent.py: its
    `learn(mem)` samples a replay memory and scores actions; a PPO module's
    `update(rollouts)` reads the rollout storage the caller filled): a replay memory
    sampled, or a rollout storage read, in a file that speaks of actions."""
    if not any("action" in line for line in walker.lines):
        return False
    if any("rollout" in line for line in walker.lines) and any(
        isinstance(node, ast.Attribute) and ROLLOUT_STORAGE.match(_last_name(node.value) or "")
        for node in module_nodes(walker.module)
    ):
        return True
    if not any(".sample(" in line for line in walker.lines):
        return False
    for node in module_nodes(walker.module):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "sample"
        ):
            receiver = node.func.value
            last = receiver.attr if isinstance(receiver, ast.Attribute) else None
            last = receiver.id if isinstance(receiver, ast.Name) else last
            if last is not None and REPLAY_MEMORY.match(last):
                return True
    return False


# An environment an agent steps (`envs.step(action)`, `train_env.step(...)`): the
# receiver's last name.
ENVIRONMENT = re.compile(r"^(\w+_)?(env|envs)$")


# The update method of an agent whose class is in another file (`policy.train(
# replay_buffer, batch_size)`, `agent.update(rollouts)`, `agent.learn()`): its backward
# pass is out of sight, called from the loop that steps the environment. The receiver is
# named for an agent (a progress bar's `pbar.update(1)` is none).
AGENT_UPDATES = ("train", "update", "learn", "train_step", "optimize_model", "update_parameters")
AGENT = re.compile(r"(?i)^(\w+_)?(agent|policy|learner|algo|model|td3|ddpg|sac|ppo|dqn)s?$")


def _agent_update(walker: Walker, func: ast.Attribute, node: ast.Call) -> bool:
    """`policy.train(replay_buffer, args.batch_size)`: an agent's update, defined in
    another file (not a method or function of this one), given what to learn from
    (`model.train()`/`model.train(True)` only switches a module's mode)."""
    receiver = _last_name(func.value)
    if (
        func.attr not in AGENT_UPDATES
        or receiver in (None, "self", "super")
        or not AGENT.match(receiver or "")
    ):
        return False
    if func.attr == "train" and (
        not node.args or all(isinstance(a, ast.Constant) for a in node.args)
    ):
        return False
    index = walker.index()
    return func.attr not in index.functions and not any(
        isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == func.attr
        for cls in index.class_nodes
        for item in cls.body
    )


def _environment_rollouts(walker: Walker) -> Optional[str]:
    """The call that steps an environment inside the loop that also runs the backward pass
    (cleanrl's PPO: `envs.step(action.cpu().numpy())` for each rollout step, then the
    update), or calls an agent's update defined in another file (TD3's `policy.train(
    replay_buffer, batch_size)` after each `env.step(action)`), or None: each update waits
    for the simulator on the CPU, and the network's arithmetic is a small part of the
    step."""
    if not any(".step(" in line for line in walker.lines):
        return None  # a look at the text first
    for loop in module_nodes(walker.module):
        if not isinstance(loop, (ast.For, ast.While)):
            continue
        calls = [
            n
            for n in ast.walk(loop)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        ]
        methods = [(n.func, n.lineno) for n in calls if isinstance(n.func, ast.Attribute)]
        if not any(func.attr == "backward" for func, _ in methods) and not any(
            isinstance(n.func, ast.Attribute) and _agent_update(walker, n.func, n) for n in calls
        ):
            continue
        for func, line in methods:
            receiver = _last_name(func.value)
            if func.attr == "step" and receiver is not None and ENVIRONMENT.match(receiver):
                return f"{ast.unparse(func)}(...) at line {line}"
    return None


# Libraries of graph data and message passing (PyG, DGL, TorchDrug), by a part of the
# module imported (a project's vendored `from . import torch_geometric` included).
GRAPH_DATA = {"torch_geometric", "dgl", "torchdrug"}
# A batch of graphs handed to the model (`self.model(graphs, task=...)`).
GRAPH_VALUE = re.compile(r"(?i)^(\w+_)?graphs?$")


def _graph_batches(walker: Walker) -> Optional[str]:
    """What shows the model is fed graphs, or None: an import of a graph library
    (`from torchdrug import data`, `from . import torch_geometric`), or the model called
    on a value named for graphs (`self.model(graphs, task=...)`)."""
    text = "\n".join(walker.lines).lower()
    if "graph" not in text and not any(library in text for library in GRAPH_DATA):
        return None  # a look at the text first
    for node in module_nodes(walker.module):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names]
            if isinstance(node, ast.ImportFrom):
                modules = [f"{node.module or ''}.{m}" for m in modules]
            for module in modules:
                if GRAPH_DATA.intersection(module.split(".")):
                    return f"import {module.lstrip('.')} at line {node.lineno}"
        elif isinstance(node, ast.Call) and _model_fed_graphs(node):
            called = f"{ast.unparse(node.func)}({ast.unparse(node.args[0])}, ...)"
            return f"{called} at line {node.lineno}"
    return None


def _model_fed_graphs(node: ast.Call) -> bool:
    """`self.model(graphs, ...)`, `net(batch_graph)`: a model called on graphs."""
    return bool(MODEL_PARAMETER.match(_last_name(node.func) or "")) and any(
        GRAPH_VALUE.match(_last_name(a) or "") for a in node.args
    )


# Embedding tables (torch's), and a project function that makes them (deepctr's
# `create_embedding_matrix(feature_columns, ...)`): its name's words.
EMBEDDING_LAYERS = ("torch.nn.Embedding", "torch.nn.EmbeddingBag")
EMBEDDING_WORDS = {"embedding", "embeddings", "emb"}
# The schema of a tabular input's features (`feature_columns`, `feature_map`,
# `self._feature_map.feature_specs[k]`, `feature_index`).
FEATURE_SCHEMA = re.compile(r"(?:^|_)feature_(?:columns?|map|specs?|index|names|dict)$")


def _feature_embeddings(walker: Walker) -> Optional[str]:
    """Where the file keys embedding tables by its input's features, or None: one function
    that refers to an embedding table (`nn.Embedding`, or calls a project function making
    them: `create_embedding_matrix(...)`) and to the features' schema (`feature_columns`,
    `feature_map.feature_specs`). That is the base class of CTR and recommender models
    (deepctr, FuxiCTR): each categorical feature is looked up in its own table, then a few
    narrow layers; lookups are gathers bound by memory, not matmuls for tensor cores."""
    text = "\n".join(walker.lines)
    if "feature_" not in text or "mb" not in text:
        return None  # a look at the text first
    for function in module_nodes(walker.module):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        table = schema = None
        for node in ast.walk(function):
            if isinstance(node, (ast.Name, ast.Attribute)):
                if walker.qualname(node) in EMBEDDING_LAYERS:
                    table = table or f"{ast.unparse(node)} at line {node.lineno}"
                word = node.id if isinstance(node, ast.Name) else node.attr
                if FEATURE_SCHEMA.search(word):
                    schema = schema or word
            elif isinstance(node, ast.Call) and _makes_embeddings(_callee(node) or ""):
                table = table or f"{ast.unparse(node.func)}(...) at line {node.lineno}"
        if table and schema:
            return f"{table}, keyed by {schema}"
    return None


def _makes_embeddings(callee: str) -> bool:
    """`create_embedding_matrix`, `build_embeddings`: a function that makes embedding
    tables, by its first word and an embedding word."""
    words = [w.lower() for w in WORD_START.split(callee) if w]
    return bool(words) and words[0] in MAKES_MODEL and bool(EMBEDDING_WORDS & set(words))


# Batch samplers that group images of like aspect ratio, each group at its own size
# (torchvision's detection references: GroupedBatchSampler over create_aspect_ratio_groups;
# pytorch-retinanet's AspectRatioBasedSampler): the input shape changes between batches.
ASPECT_RATIO_BATCHES = re.compile(r"AspectRatio|aspect_ratio|GroupedBatchSampler")


def _varying_batches(walker: Walker) -> Optional[str]:
    """What changes the input's shape between batches, so that cuDNN autotuning would
    re-run for each new shape: a sampler batching images by aspect ratio
    (`AspectRatioBasedSampler(dataset, ...)`), or a collate function or class of the
    project, defined in this file or another of the run, padding each batch to its longest
    sample (`collate_fn = TextMelCollate(1)`, `AudioDataLoader(...)` installing one:
    padded_batches.py); None if none."""
    aspect = any(ASPECT_RATIO_BATCHES.search(line) for line in walker.lines)
    loads = any("collate" in line or "DataLoader" in line for line in walker.lines)
    own = padding_collates(walker.module, "\n".join(walker.lines)) if loads else {}
    elsewhere = walker.padded_elsewhere if loads else None
    if not (aspect or own or elsewhere):
        return None  # a look at the text first: the walk is for files that name one
    for node in module_nodes(walker.module):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else None
        name = func.id if isinstance(func, ast.Name) else name
        if aspect and name and ASPECT_RATIO_BATCHES.search(name):
            return f"{name}(...) at line {node.lineno}: images batched by aspect ratio"
        collates = [node.func, *[k.value for k in node.keywords if k.arg == "collate_fn"]]
        for collate in collates:
            why = own.get(collate.id) if isinstance(collate, ast.Name) else None
            qualname = walker.qualname(collate) if elsewhere is not None and not why else None
            why = elsewhere(qualname) if elsewhere is not None and qualname else why
            if why:
                return (
                    f"{ast.unparse(collate)} at line {node.lineno} pads each batch to its "
                    f"longest sample: {why}"
                )
    return None


# Functions that build a library model by architecture name (Lightning's helper builds
# the torchvision model of that name).
MODEL_FACTORIES = {
    "timm.create_model",
    "timm.models.create_model",
    "torchvision.models.get_model",
    *(f"{root}utilities.model_helpers.get_torchvision_model" for root in LIGHTNING_ROOTS),
}


def constant_width(node: Optional[ast.expr], scope: Scope) -> Optional[int]:
    """A layer size the source shows (`64`, `HIDDEN = 64`), or None."""
    value = resolve(node, scope) if node is not None else None
    if value is None or not value.known or isinstance(value.value, bool):
        return None
    return int(value.value) if isinstance(value.value, int) else None


def small_layer(widths: list[Optional[int]]) -> Optional[int]:
    """The widest size of a toy's matmul layer, or None. A layer's sizes in sight must
    all be at most TOY_WIDTH, and one at least must be in sight: `nn.Linear(n_obs, 64)`
    and Keras's `Dense(action_dim)` after a `Dense(16)` (a 16 x action_dim matrix) take
    one width from the environment; a layer with none in sight may be of any size."""
    known = [w for w in widths if w is not None]
    if not known or max(known) > TOY_WIDTH:
        return None
    return max(known)


def read(walker: Walker) -> dict[str, Any]:
    reader = _Reader(walker)
    reader.visit(walker.module, [], walker.module_scope)
    found = reader.facts()
    if reader.benchmark is not None and not walker.facts.get("cudnn_benchmark"):
        # Lightning sets torch.backends.cudnn.benchmark to its Trainer's `benchmark=`
        found["cudnn_benchmark"] = reader.benchmark
    if (
        reader.lightning_module
        and not reader.lightning_runner
        and walker.facts.get("cudnn_benchmark") is None
    ):
        # the Trainer built in another file sets cuDNN autotuning with its `benchmark=`
        found["benchmark_elsewhere"] = BENCHMARK_ELSEWHERE
    return found


# A condition in the source, or a description of a setting made outside it.
Gate = Union[ast.expr, str]


class _Reader:
    def __init__(self, walker: Walker):
        self.walker = walker
        self.ungated: Optional[str] = None
        self.gates: list[tuple[Gate, Scope]] = []
        self.conv = False
        self.matmul: list[str] = []  # what shows matmul-bound layers
        self.graph: list[str] = []  # those of them that are message-passing layers or models
        self.cudnn_rnns: list[str] = []  # those of them that are cuDNN RNNs (`nn.LSTM`)
        # the file's classes named for attention that build nn.Linear (Bahdanau's
        # `class Attention` scoring every source position at each decoder step)
        self.attention_classes: list[str] = []
        # nn.Linear layers by their output width (projections.py): "projection" (onto a
        # vocabulary, or wider than a head), "head", None (not known) -> how written
        self.linears: dict[Optional[str], list[str]] = {}
        self.linear_models: list[str] = []  # those that are one nn.Linear of the project
        self.linear_weights: Optional[int] = 0  # constant nn.Linear weights; None: not known
        # the widths of the small layers the source shows (nn.Linear, nn.RNN); None: a
        # layer with no width in sight, or a layer too wide to be a toy's
        self.small_widths: Optional[list[int]] = []
        # the channels of the nn.Conv* layers the source shows; None: a convolution of
        # another kind, or one whose channels are not in sight or above TOY_CHANNELS
        self.conv_channels: Optional[list[int]] = []
        # the weights of the nn.Linear layers, their widths read by widths.py; None: a
        # matmul layer of another kind, or one whose widths are not in sight
        self.head_weights: Optional[int] = 0
        self.lightning_module = False  # the file defines a LightningModule
        self.hf_subclass: Optional[str] = None  # ... a Hugging Face Trainer subclass
        self.lightning_runner = False  # ... and creates the Trainer/Fabric that runs one
        self.functions: dict[int, ast.AST] = {}  # id(scope) -> its function
        # id(function) -> the names it binds as values (variables, parameters, lambdas)
        self.variables: dict[int, set[str]] = {}
        self.layered_classes: Optional[set[str]] = None  # the file's classes with layers
        self.small_models = 0  # graph nets / MLPs out of sight given a small hidden width
        # matmul layers whose widths are small or parameters the caller fills (True), one
        # wide or of a width from elsewhere (False), none read (None)
        self.by_caller: Optional[bool] = None
        self.frozen = frozen_builds(walker)  # calls building models trained by nothing
        self.library_model = False  # a torchvision/timm model built by name: no toy
        self.benchmark: Optional[bool] = None  # a Lightning Trainer's `benchmark=`
        self.classes: list[ast.ClassDef] = []  # the classes the walk is in
        # name -> functions or classes assigned to it by reference, as the walk meets them
        self.references: dict[str, set[str]] = {}
        # a pretrained model loaded quantized (`load_in_8bit=True`): what loads it, and
        # whether its large matmuls run in low precision ("int8", "half") or not known
        self.quantized: Optional[dict[str, Any]] = None

    def visit(self, node: ast.AST, gates: list[ast.expr], scope: Scope) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = self.walker.scope_of(node)
            self.functions[id(scope)] = node
            gates = []
            self._annotated_model(node)
            if lightning_hook(node):
                self.lightning_module = True
        elif isinstance(node, ast.Assign):
            _reference(node, self.references)
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            self._hydra_runner(node, scope)
        elif isinstance(node, ast.ClassDef):
            self._lightning_module(node)
            self._hf_subclass(node)
            self.classes.append(node)
            for child in ast.iter_child_nodes(node):
                self.visit(child, gates, scope)
            self.classes.pop()
            return
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
            # the innermost condition about precision (`if use_amp:` around `elif
            # device_type == "cuda":`), else the innermost one
            about = [g for g in gates if _about_precision(g)]
            self.gates.append(((about or gates)[-1], scope))
        elif self.ungated is None:
            self.ungated = what

    def _call(self, node: ast.Call, gates: list[ast.expr], scope: Scope) -> bool:
        """Read one call; True when AMP is gated by its `enabled=` argument."""
        name = self.walker.qualname(node.func) or ""
        short = name.rsplit(".", 1)[-1]
        enabled = keyword_arg(node, "enabled")
        if name in APEX_AMP:
            self._use(f"apex {ast.unparse(node.func)}", gates, scope)
        full = self._full_autocast(node, scope) if name in AMP_NAMES else None
        if full is not None:
            self.gates.append((full, scope))  # autocast to float32 by default: no AMP
            return True
        if name in AMP_NAMES and enabled is not None:
            value = resolve(enabled, scope)
            if not (value.known and value.value is True):
                self.gates.append((enabled, scope))
                return True
        accelerate = name.startswith("accelerate.") and short == "Accelerator"
        if self._accelerator_elsewhere(node, name):
            # `with accelerator.autocast():` on an Accelerator another file builds
            # (`accelerator = train_util.prepare_accelerator(args)`): its mixed_precision,
            # and so whether this autocast casts anything, is set out of sight
            where = ACCELERATOR_ELSEWHERE.format(call=ast.unparse(node.func))
            self.gates.append((where, scope))
        self._argparse_trainer(node, name, gates, scope)
        for key in ("mixed_precision", "precision"):
            setting = keyword_arg(node, key)
            if short not in ("Accelerator", "Trainer", "Fabric"):
                continue
            if setting is None:
                if key == "precision" and name.startswith(LIGHTNING_ROOTS):
                    self._spread_settings(node, short, scope)
                    if not any(k.arg is None for k in node.keywords) and not self._inference_runner(
                        scope
                    ):
                        self.gates.append((LIGHTNING_DEFAULT.format(short=short), scope))
                if accelerate and key == "mixed_precision":
                    self._accelerator_spread(node, gates, scope)
                continue
            value = resolve(setting, scope)
            if value.known and str(value.value) in MIXED_VALUES:
                self._use(f"{short}({key}={ast.unparse(setting)})", gates, scope)
            elif not value.known or (accelerate and value.value is None):
                self.gates.append((setting, scope))
            elif value.source.startswith("argparse "):
                self.gates.append((setting, scope))  # "no" by default: off unless passed
        hf_arguments = short in ("TrainingArguments", "Seq2SeqTrainingArguments")
        if hf_arguments and name.startswith("transformers."):
            given = {k.arg for k in node.keywords}
            spreads = [k.value for k in node.keywords if k.arg is None]
            if spreads and not given & {"fp16", "bf16"}:
                self.gates.append((spreads[0], scope))  # **overrides may set them
            elif not given & {"fp16", "bf16"}:
                self.gates.append((HF_DEFAULT, scope))
        for key in ("fp16", "bf16"):
            setting = keyword_arg(node, key)
            if setting is not None and hf_arguments:
                value = resolve(setting, scope)
                if value.known and value.value is True:
                    self._use(f"{short}({key}=True)", gates, scope)
                elif not value.known or value.source.startswith("argparse "):
                    # `fp16=args.fp16` from a store_true option: off unless passed
                    self.gates.append((setting, scope))
        if name.startswith(EXTERNAL_CONFIG) or (
            short == "HfArgumentParser" and name.startswith("transformers.")
        ):
            # TrainingArguments parsed from the command line, a DeepSpeed JSON config:
            # mixed precision is set outside the source
            where = HF_COMMAND_LINE if "Hf" in short else "the DeepSpeed config"
            self.gates.append((where, scope))
        if not name.startswith(LIBRARIES) and short not in HANDLED:
            self._project_setting(node, gates, scope)
            self._precision_helper(node, gates, scope)
        if outside_step(self.walker.index(), node):
            # `trainer.train_step(img, bbox, label)`: the step, and any autocast in it,
            # are in another file
            self.gates.append(
                (f"the training step {ast.unparse(node.func)}() (not in this file)", scope)
            )
        self._model_dtype(node, name, gates, scope)
        self._quantized_load(node, name, gates, scope)
        self._fsdp_policy(node, name, short, gates, scope)
        self._runner(node, name, gates, scope)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in HALF_METHODS and not node.args:
            self._use(f".{func.attr}()", gates, scope)
        if (
            isinstance(func, ast.Attribute)
            and HALF_CONVERSION.match(func.attr)
            and not name.startswith(LIBRARIES)
            and not node.args
        ):
            self._use(f".{func.attr}()", gates, scope)
        if self._model_to_half(node, scope):
            self._use(ast.unparse(node), gates, scope)
        if id(node) in self.frozen:
            return False  # a model built and kept frozen: not the one the file trains
        layer = self._subclassed_layer(node)  # `super().__init__(n_in, n_out)`
        if self._convolutional(node, layer or name, scope):
            self.conv = True
            self._channels(node, layer or name, scope)
            if "cells" in self._traits_elsewhere(layer or name):
                # a CRNN of another file stepping RNN cells: cuBLAS matmuls, more than a
                # head (its nn.LSTM layers would run in cuDNN, as the convolutions do)
                self.matmul.append(_callee(node) or ast.unparse(node.func))
        if self._library_model(node, name, scope) is not None:
            self.small_widths = None  # a named architecture: no toy, whatever its head
            self.library_model = True
        if not name.startswith(LIBRARIES) and self._handed_backbone(node, scope):
            self.conv = True
            self.conv_channels = None
            self.small_widths = None
            self.library_model = True
        self._matmul(node, layer or name, scope)
        return False

    def _accelerator_elsewhere(self, node: ast.Call, name: str) -> bool:
        """`accelerator.autocast()` (Accelerate's context, a no-op under mixed_precision
        "no") in a file that builds no Accelerate Accelerator itself; or the autocast
        method of another wrapper (`accel.autocast()` on descript-audio-codec's
        `Accelerator = argbind.bind(ml.Accelerator)`, audiotools' wrapper whose `amp=` the
        run's config sets), whose precision its construction, not this call, decides."""
        func = node.func
        if not (
            isinstance(func, ast.Attribute)
            and func.attr == "autocast"
            and not name.startswith(LIBRARIES)
            and "accel" in ast.unparse(func.value).lower()
        ):
            return False
        built = [
            self.walker.qualname(n.func) or ""
            for n in module_nodes(self.walker.module)
            if isinstance(n, ast.Call)
        ]
        if "accelerator" not in ast.unparse(func.value).lower():
            # another wrapper: Accelerate's own, built here, is read at its call
            return not any(b.startswith("accelerate.") for b in built)
        return not any(b.rsplit(".", 1)[-1] == "Accelerator" for b in built)

    def _subclassed_layer(self, node: ast.Call) -> Optional[str]:
        """The torch.nn layer a class of the file subclasses (`class Layer(nn.Linear)`,
        `class WSConv2d(nn.Conv2d)`) when `node` is its `super().__init__(n_in, n_out)`:
        the layer's own construction, with the widths the subclass passes up."""
        func = node.func
        if not (
            self.classes
            and self.classes[-1].bases
            and isinstance(func, ast.Attribute)
            and func.attr == "__init__"
            and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "super"
        ):
            return None
        base = qualified_base(self.classes[-1].bases[0], self.walker.aliases)
        layer = base.startswith("torch.nn.") and (base in MATMUL_LAYERS or CONV_CLASS.search(base))
        return base if layer else None

    def _model_to_half(self, node: ast.Call, scope: Scope) -> bool:
        """`model.to(dtype=torch.bfloat16)` (or `.to(torch.float16)`): the model cast to
        half precision, as `model.half()` does; a cast of data (`features.to(...)`) is not
        the model's precision."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "to"):
            return False
        owner = ast.unparse(func.value).rsplit(".", 1)[-1]
        if not MODEL_PARAMETER.match(owner):
            return False
        given = [*node.args, *[k.value for k in node.keywords if k.arg == "dtype"]]
        return any(self._dtype_kind(g, scope) == "half" for g in given)

    def _full_autocast(self, node: ast.Call, scope: Scope) -> Optional[ast.expr]:
        """The setting behind an autocast whose dtype is float32 by default (`dtype=
        ptdtype`, `ptdtype = {"float32": torch.float32, ...}[args.dtype]` with --dtype
        defaulting to float32): autocast to float32 is no mixed precision, so the flag is
        a gate off by default. None for a half dtype, or one the source does not show."""
        dtype = keyword_arg(node, "dtype")
        if dtype is None:
            return None
        expr = scope.lookup(dtype.id) if isinstance(dtype, ast.Name) else None
        expr = expr if expr is not None else dtype
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Dict):
            key = resolve(expr.slice, scope)
            for k, v in zip(expr.value.keys, expr.value.values, strict=True):
                if (
                    key.known
                    and isinstance(k, ast.Constant)
                    and k.value == key.value
                    and self._dtype_kind(v, scope) == "full"
                ):
                    return expr.slice
            return None
        return dtype if self._dtype_kind(dtype, scope) == "full" else None

    def _accelerator_spread(self, node: ast.Call, gates: list[ast.expr], scope: Scope) -> None:
        """Accelerator() given no mixed_precision keyword: Accelerate's float32 default.
        `Accelerator(**kwargs)` is read through the dict where the source spells it out
        (`kwargs = {}; kwargs["log_with"] = ...`): a dict without mixed_precision is the
        same default, one with it is that setting; a dict out of sight, or a script that
        reads the precision the launcher gave (`pad_to_multiple_of = 16 if
        accelerator.mixed_precision == "fp8" else ...`: Accelerator() then takes it from
        `accelerate launch --mixed_precision` or the accelerate config): not known. A
        script that only reports it (`{"mixed_precision": accelerator.mixed_precision}`)
        keeps the default."""
        spread = any(k.arg is None for k in node.keywords)
        values, opaque = keyword_values(node, scope)
        setting = values.get("mixed_precision")
        deepspeed = self._deepspeed_precision(node, scope)
        if setting is None and deepspeed is not None:
            if deepspeed:
                self._use(deepspeed, gates, scope)
            else:
                self.gates.append((LAUNCH_CONFIG, scope))
        elif setting is None:
            module = self.walker.module
            launched = opaque or (
                _reads_launch_precision(module) if spread else _branches_on_launch_precision(module)
            )
            self.gates.append((LAUNCH_CONFIG if launched else FRAMEWORK_DEFAULT, scope))
        elif setting.known and str(setting.value) in MIXED_VALUES:
            self._use(f"Accelerator(mixed_precision={setting.text})", gates, scope)
        else:
            self.gates.append((LAUNCH_CONFIG, scope))

    def _deepspeed_precision(self, node: ast.Call, scope: Scope) -> Optional[str]:
        """`Accelerator(deepspeed_plugin=DeepSpeedPlugin(hf_ds_config="ds_config.json"))`:
        the DeepSpeed JSON config then sets the precision. What turns mixed precision on
        (`"bf16": {"enabled": true}` in the project's file); "" when the config is out of
        sight or does not settle it (`"enabled": "auto"` follows the launcher); None with
        no DeepSpeed plugin."""
        plugin: Optional[ast.expr] = keyword_arg(node, "deepspeed_plugin")
        if isinstance(plugin, ast.Name):
            plugin = scope.lookup(plugin.id)
        if not isinstance(plugin, ast.Call):
            return None if plugin is None else ""
        name = self.walker.qualname(plugin.func) or ""
        if not name.startswith("accelerate.") or not name.endswith("DeepSpeedPlugin"):
            return ""
        given = keyword_arg(plugin, "hf_ds_config")
        path = resolve(given, scope) if given is not None else None
        read = self.walker.config_data
        if path is None or not (path.known and isinstance(path.value, str)) or read is None:
            return ""
        data = read(path.value)
        for key in ("bf16", "fp16"):
            section = data.get(key) if data is not None else None
            if isinstance(section, dict) and section.get("enabled") is True:
                return f"{key} enabled in the DeepSpeed config {path.value}"
        return ""

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

    def _precision_helper(self, node: ast.Call, gates: list[ast.expr], scope: Scope) -> None:
        """The precision setting handed positionally to a project's precision helper
        (`get_autocast(args.precision)`, `get_input_dtype(args.precision)`): the source
        does not show what the helper turns on, so it is a gate unless the setting is
        known to be mixed."""
        callee = (_callee(node) or "").lower()
        if not set(callee.split("_")) & set(PRECISION_HELPERS):
            return
        for argument in node.args:
            last = ast.unparse(argument).rsplit(".", 1)[-1]
            if not isinstance(argument, (ast.Name, ast.Attribute)) or last not in PROJECT_KEYWORDS:
                continue
            value = resolve(argument, scope)
            if value.known and (value.value is True or str(value.value) in MIXED_VALUES):
                self._use(f"{ast.unparse(node.func)}({ast.unparse(argument)})", gates, scope)
            elif not value.known or value.source.startswith("argparse "):
                self.gates.append((argument, scope))

    def _model_dtype(self, node: ast.Call, name: str, gates: list[ast.expr], scope: Scope) -> None:
        """The dtype the model is built or loaded in: `set_default_dtype(dtype)` (torch's,
        or a project's context manager around the model's construction) and
        `from_pretrained(..., torch_dtype=dtype)` (or `dtype=`, its newer spelling in
        transformers), a project's model builder given the
        dtype (`build_model(..., dtype=config.model.dtype)`: its parameters are made in
        it). bfloat16/float16 is low precision on
        the tensor cores; a dtype the source does not show (a recipe's config) is a gate."""
        expr: Optional[ast.expr] = None
        if name.rsplit(".", 1)[-1] == "set_default_dtype" and node.args:
            expr = node.args[0]
        elif keyword_arg(node, "torch_dtype") is not None:
            expr = keyword_arg(node, "torch_dtype")
        elif name.rsplit(".", 1)[-1] in PRETRAINED_LOADERS:
            # transformers >= 4.56 (and diffusers) spell torch_dtype `dtype`
            expr = keyword_arg(node, "dtype")
        elif _model_builder(node, name):
            expr = keyword_arg(node, "dtype")
        if expr is None:
            return
        kind = self._dtype_kind(expr, scope)
        if kind == "half":
            self._use(f"{ast.unparse(node.func)}({ast.unparse(expr)})", gates, scope)
        elif kind is None:
            self.gates.append((expr, scope))

    def _quantized_load(
        self, node: ast.Call, name: str, gates: list[ast.expr], scope: Scope
    ) -> None:
        """A pretrained model loaded quantized by bitsandbytes (`from_pretrained(...,
        load_in_8bit=True)`, `load_in_4bit=True`, `quantization_config=
        BitsAndBytesConfig(...)`; also another quantization config: GPTQ, AWQ), the
        base of a LoRA/QLoRA fine-tune. Its large matmuls are the quantized kernels':
        int8 (LLM.int8, with float16 for the outliers and the other modules), or 4-bit
        weights dequantized to `bnb_4bit_compute_dtype` (float32 unless set: then the
        matmuls are float32, and whether the run gains from autocast or TF32 is not
        known). A load under a condition, or with a setting the source does not show,
        is not known either."""
        if name.rsplit(".", 1)[-1] not in PRETRAINED_LOADERS:
            return
        text = f"{ast.unparse(node.func)}(...)"
        kind: Optional[str] = None
        found = False
        for key, low in (("load_in_8bit", "int8"), ("load_in_4bit", None)):
            setting = keyword_arg(node, key)
            if setting is None:
                continue
            value = resolve(setting, scope)
            if value.known and not value.value:
                continue  # not quantized: a float32 load stays float32
            found = True
            text = f"{ast.unparse(node.func)}({key}={ast.unparse(setting)})"
            kind = low if value.known else None
        config = keyword_arg(node, "quantization_config")
        if config is not None and not found:
            found = True
            text = f"{ast.unparse(node.func)}(quantization_config={ast.unparse(config)})"
            kind = self._quantization_kind(config, scope)
        if found and self.quantized is None:
            self.quantized = {"text": text, "matmuls": None if gates else kind}

    def _quantization_kind(self, config: ast.expr, scope: Scope) -> Optional[str]:
        """'int8' or 'half' for a BitsAndBytesConfig the source spells out (8-bit, or
        4-bit computing in bfloat16/float16); None otherwise."""
        expr = scope.lookup(config.id) if isinstance(config, ast.Name) else config
        if not isinstance(expr, ast.Call):
            return None
        if (self.walker.qualname(expr.func) or "").rsplit(".", 1)[-1] != "BitsAndBytesConfig":
            return None
        for key in ("load_in_8bit", "load_in_4bit"):
            setting = keyword_arg(expr, key)
            value = resolve(setting, scope) if setting is not None else None
            if value is None or not (value.known and value.value is True):
                continue
            if key == "load_in_8bit":
                return "int8"
            dtype = keyword_arg(expr, "bnb_4bit_compute_dtype")
            if dtype is not None and self._dtype_kind(dtype, scope) == "half":
                return "half"
        return None

    def _fsdp_policy(
        self, node: ast.Call, name: str, short: str, gates: list[ast.expr], scope: Scope
    ) -> None:
        """An FSDP mixed-precision policy (`MixedPrecisionPolicy(param_dtype=
        torch.bfloat16)`, `MixedPrecision(torch.float16, ...)`): mixed precision when its
        parameters are cast to a half dtype, under the conditions around it (`if
        args.mixed_precision:`); a dtype the source does not show is a gate."""
        if short not in FSDP_POLICIES or not name.startswith("torch.distributed."):
            return
        dtype = keyword_arg(node, "param_dtype") or (node.args[0] if node.args else None)
        if dtype is None:
            return  # no param_dtype: the parameters stay in their own (float32) dtype
        kind = self._dtype_kind(dtype, scope)
        if kind == "half":
            self._use(f"{short}(param_dtype={ast.unparse(dtype)})", gates, scope)
        elif kind is None:
            self.gates.append((dtype, scope))

    def _dtype_kind(self, expr: ast.expr, scope: Scope, depth: int = 0) -> Optional[str]:
        """'half', 'full' (float32 or wider), or None when the source does not say."""
        value = resolve(expr, scope)
        if value.known:
            if value.value is None:
                return "full"  # the default dtype
            text = str(value.value).lower()
        elif isinstance(expr, (ast.Name, ast.Attribute)):
            text = ast.unparse(expr).rsplit(".", 1)[-1].lower()
        else:
            return None
        if text in HALF_DTYPES:
            return "half"
        if text in FULL_DTYPES:
            return "full"
        assigned: Optional[tuple[ast.expr, Scope]] = None
        looked = scope.lookup(expr.id) if isinstance(expr, ast.Name) else None
        if looked is not None:
            assigned = (looked, scope)
        elif (
            isinstance(expr, ast.Attribute)
            and isinstance(expr.value, ast.Name)
            and expr.value.id == "self"
            and expr.attr in scope.attributes
        ):
            assigned = scope.attributes[expr.attr]
        if assigned is None or depth > 4:
            return None
        return self._dtype_kind(assigned[0], assigned[1], depth + 1)

    def _annotated_model(self, function: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> None:
        """A model parameter declared with the project's model class (`model:
        SentenceTransformer`): the class names the kind of model the file trains."""
        arguments = function.args
        for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            if argument.annotation is None or not MODEL_PARAMETER.match(argument.arg):
                continue
            name = self.walker.qualname(argument.annotation) or ""
            if not name or name.startswith(("torch.", "typing.", "lightning", "pytorch_lightning")):
                continue
            cls = name.rsplit(".", 1)[-1]
            kind = architecture(cls)
            if kind == "conv":
                self.conv = True
                self.conv_channels = None
            elif kind == "matmul":
                self.matmul.append(name.rsplit(".", 1)[-1])
                self.linear_weights = None
                self.small_widths = None

    def _hf_subclass(self, node: ast.ClassDef) -> None:
        """A class of the file deriving from a Hugging Face Trainer (transformers', trl's)."""
        for base in node.bases:
            name = self.walker.qualname(base) or ""
            if name.startswith(TRAINER_ROOTS) and name.endswith("Trainer"):
                self.hf_subclass = self.hf_subclass or node.name

    def _lightning_module(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            name = self.walker.qualname(base) or ""
            if name.startswith(LIGHTNING_ROOTS) and name.endswith("LightningModule"):
                self.lightning_module = True

    def _spread_settings(self, node: ast.Call, short: str, scope: Scope) -> None:
        """`Trainer(**trainer_params)`: the precision a dict in sight holds, or, for a dict
        the source does not show, the caller's settings decide it."""
        values, opaque = keyword_values(node, scope)
        found = values.get("precision")
        if found is not None and found.known and str(found.value) in MIXED_VALUES:
            self._use(f"{short}(precision={found.value!r}, {found.source})", [], scope)
        elif found is not None and not found.known:
            text = f"the precision {short}(**...) gets ({found.source})"
            self.gates.append((text, scope))
        for spread in opaque if found is None else []:
            self.gates.append((f"the precision in the settings {short}(**{spread}) gets", scope))

    def _runner(self, node: ast.Call, name: str, gates: list[ast.expr], scope: Scope) -> None:
        """A Lightning Trainer, Fabric or LightningCLI that trains the file's
        LightningModule (it owns the precision), and the cuDNN autotuning it sets; a
        LightningCLI's precision is its `trainer_defaults`' (Trainer's keywords are read
        in _call)."""
        kind = runner_kind(self.walker, name)
        if kind == "LightningCLI" and self._cli_configured(gates, scope):
            self.lightning_runner = True
            return
        if kind is None or not trains(node, kind, self.functions.get(id(scope))):
            return
        self.lightning_runner = True
        tuned = benchmark(node, kind, scope)
        if tuned is not None:
            self.benchmark = tuned if self.benchmark is None else self.benchmark or tuned
        if kind != "LightningCLI":
            return
        settings, opaque = trainer_settings(node, kind, scope)
        chosen = settings.get("precision")
        if chosen is not None and chosen.known and str(chosen.value) in MIXED_VALUES:
            what = f"LightningCLI(trainer_defaults={{'precision': {chosen.text}}})"
            self._use(what, gates, scope)
        elif (chosen is not None and not chosen.known) or (chosen is None and opaque):
            self.gates.append((f"the precision in the trainer_defaults {kind}() gets", scope))

    def _cli_configured(self, gates: list[ast.expr], scope: Scope) -> bool:
        """A LightningCLI whose shipped configs set the Trainer's precision (cli_configs.py:
        every one of them alike, else unknown): the run's precision is theirs, whether
        the CLI runs its subcommand or the file fits `cli.trainer`."""
        found = self.walker.cli_trainer("precision") if self.walker.cli_trainer else None
        if found is None:
            return False
        known, value, where = found
        if known and str(value) in MIXED_VALUES:
            self._use(f"LightningCLI with {where}", gates, scope)
        elif not known:
            self.gates.append((f"the precision of the LightningCLI ({where})", scope))
        return True

    def _argparse_trainer(
        self, node: ast.Call, name: str, gates: list[ast.expr], scope: Scope
    ) -> None:
        """`Trainer.from_argparse_args(namespace, **kwargs)` (Lightning 1.x): a precision
        the keywords set wins. A namespace built from a settings dict
        (`argparse.Namespace(**trainer_config)`, taming-transformers merging its YAML
        config's `lightning.trainer` with the command line) gives the precision those
        settings hold, out of sight. The parsed options themselves (`parser.parse_args()`
        after `Trainer.add_argparse_args(parser)`) keep `--precision` at its default, 32,
        unless it is passed: Lightning's float32 default, as for `Trainer()`."""
        parts = name.split(".")
        if not (
            name.startswith(LIGHTNING_ROOTS)
            and len(parts) >= 2
            and parts[-1] == "from_argparse_args"
            and parts[-2] == "Trainer"
        ):
            return
        setting = keyword_arg(node, "precision")
        if setting is not None:
            value = resolve(setting, scope)
            if value.known and str(value.value) in MIXED_VALUES:
                text = f"Trainer.from_argparse_args(precision={ast.unparse(setting)})"
                self._use(text, gates, scope)
            elif not value.known:
                self.gates.append((setting, scope))
            return
        given = node.args[0] if node.args else None
        bound = scope.lookup(given.id) if isinstance(given, ast.Name) else None
        if (
            isinstance(bound, ast.Call)
            and self.walker.qualname(bound.func) == "argparse.Namespace"
            and any(k.arg is None for k in bound.keywords)
        ):
            self._spread_settings(bound, "Trainer", scope)  # the dict's, where in sight

    def _hydra_runner(self, node: Union[ast.Assign, ast.AnnAssign], scope: Scope) -> None:
        """`trainer = hydra.utils.instantiate(cfg.trainer, callbacks=...)` then
        `trainer.fit(...)`: the runner, its precision included, is built from a config the
        source does not show (lightning-hydra-template), as for `Trainer(**settings)`."""
        value = node.value
        if not (isinstance(value, ast.Call) and value.args):
            return
        if self.walker.qualname(value.func) not in HYDRA_INSTANTIATE:
            return
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = {ast.unparse(t) for t in targets}
        owner = self.functions.get(id(scope)) or self.walker.module
        fitted = any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "fit"
            and ast.unparse(n.func.value) in names
            for n in ast.walk(owner)
        )
        if fitted:
            config = ast.unparse(value.args[0])
            self.gates.append((HYDRA_RUNNER.format(config=config), scope))

    def _inference_runner(self, scope: Scope) -> bool:
        """A Trainer built in a function that fits nothing (`Trainer(...).predict(self,
        loader)`): it runs inference, the training Trainer is elsewhere."""
        function = self.functions.get(id(scope))
        if function is None:
            return False
        return not any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "fit"
            for n in ast.walk(function)
        )

    def _matmul(self, node: ast.Call, name: str, scope: Scope) -> None:
        short = name.rsplit(".", 1)[-1]
        if name in MATMUL_LAYERS:
            self.matmul.append(short)
            if short in CUDNN_RNNS:
                self.cudnn_rnns.append(short)
            if (
                short in ("Linear", "Bilinear")
                and self.classes
                and ATTENTION_CLASS.search(self.classes[-1].name)
            ):
                self.attention_classes.append(self.classes[-1].name)
            if short == "Linear":
                kind, text = output_width(self.walker, node, self.functions.get(id(scope)))
                self.linears.setdefault(kind, []).append(text)
            written = [*node.args[:2]]
            written += [k.value for k in node.keywords if k.arg in SIZED_LAYERS.get(short, ())]
            self._widths(written if short in SIZED_LAYERS else [], scope)
            self._head_weights(short, written, scope)
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
        elif graph_layer(name):
            self.matmul.append(short)
            self.graph.append(short)
            self.linear_weights = None
            if short not in GRAPH_WRAPPERS:  # GINConv(mlp): the widths are the MLP's
                self._graph_widths(node, short, scope)
        elif name.startswith("transformers.") and ("Model" in short or "For" in short):
            self.matmul.append(short)
            self.linear_weights = None
            self.small_widths = None
        elif _pretrained_transformer(name):
            self.matmul.append(name.split(".")[-2])
            self.linear_weights = None
            self.small_widths = None
        elif (
            not name.startswith(("torch.", "torchvision.", "timm.", *RAW_TF_OPS))
            and not self._read_by_layers(node, scope)
        ) and (
            architecture(_callee(node) or picked_name(node, scope) or "") == "matmul"
            or _named_elsewhere(node, name, self.references) == "matmul"
            or _named_definition(node, name, scope) == "matmul"
            or self._module_by_name(node, scope) == "matmul"
            or self._attention_model(node, name)
            or self._registry_kind(node, scope) == "matmul"
            or self._kind_elsewhere(name) == "matmul"
        ):
            self.matmul.append(_callee(node) or picked_name(node, scope) or ast.unparse(node.func))
            if GRAPH_MODEL.search(_callee(node) or "") or "graph" in self._traits_elsewhere(name):
                # `GCN(...)`, `GIN(...)`, a class of another file passing messages: a graph
                # network
                self.graph.append(self.matmul[-1])
            self.linear_weights = None
            if self._linear_elsewhere(name):
                self.small_models += 1  # one nn.Linear layer: a linear model is small
                self.linear_models.append(self.matmul[-1])
            else:
                self._sized_model(node, scope)
            self._rnn_elsewhere(name)

    def _rnn_elsewhere(self, name: str) -> None:
        """A model class of another file of the run built of cuDNN RNNs and Linear layers
        (a word LM's `RNNModel`): its RNNs run in TF32 as the file's own `nn.LSTM` would,
        its Linear layers are heads or projections by their output widths there."""
        rnn_of = self.walker.rnn_elsewhere
        linears = rnn_of(name) if rnn_of is not None and "." in name else None
        if linears is None:
            return
        self.cudnn_rnns.append(self.matmul[-1])
        for kind, text in linears:
            self.linears.setdefault(kind, []).append(f"{self.matmul[-1]}: {text}")

    def _linear_elsewhere(self, name: str) -> bool:
        """Whether a model class of another file of the run is one nn.Linear layer there
        (a logistic regression trained on features)."""
        linear = self.walker.linear_elsewhere
        return linear is not None and "." in name and linear(name)

    def _traits_elsewhere(self, name: str) -> frozenset[str]:
        """What a model class of another file of the run builds beyond its kind there
        (class_kinds.layer_traits); empty when no such file is in the run."""
        traits = self.walker.traits_elsewhere
        return traits(name) if traits is not None and "." in name else frozenset()

    def _kind_elsewhere(self, name: str) -> Optional[str]:
        """The kind of a model class or factory of another file of the run, by its layers
        there (class_kinds.py); None when no such file is in the run."""
        kind_of = self.walker.kind_elsewhere
        return kind_of(name) if kind_of is not None and "." in name else None

    def _module_by_name(self, node: ast.Call, scope: Scope) -> Optional[str]:
        """The kind of a model made by a module of the project imported by name
        (Pointnet_Pointnet2's `MODEL = importlib.import_module(args.model)` then
        `MODEL.get_model(num_class)`, --model defaulting to "pointnet_cls"): the module
        name the source settles names the architecture, as a model class's module does.
        The call must say it makes a model (`get_model`, `Model`), not a loss."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            return None
        words = [w.lower() for w in WORD_START.split(func.attr) if w]
        makes = func.attr[:1].isupper() or (bool(words) and words[0] in MAKES_MODEL)
        if not (model_like(func.attr) and makes):
            return None
        imported = scope.lookup(func.value.id)
        if not (
            isinstance(imported, ast.Call)
            and self.walker.qualname(imported.func) == "importlib.import_module"
            and imported.args
        ):
            return None
        module = resolve(imported.args[0], scope)
        if not (module.known and isinstance(module.value, str)):
            return None
        kinds = {module_architecture(part) for part in module.value.split(".")} - {None}
        return kinds.pop() if len(kinds) == 1 else None

    def _registry_kind(self, node: ast.Call, scope: Scope) -> Optional[str]:
        """The kind of a model picked by name from a project's registry of model builders
        and built (`modeling.__dict__[opts.model](...)`; segment-anything's
        `sam_model_registry[args.model_type](checkpoint=...)`, --model_type defaulting to
        "vit_b": a ViT): the key the source shows names the architecture. The registry
        must say it holds models (its name, or a module's `__dict__`); a value's own
        parts (`layer["attention"](x)`) are no registry."""
        func = node.func
        if not isinstance(func, ast.Subscript):
            return None
        builders = self._builder_dict_kind(func.value, scope)
        if builders is not None:
            return builders
        owner = self.walker.qualname(func.value) or ""
        last = owner.rsplit(".", 1)[-1]
        named = model_like(last) and not owner.startswith(LIBRARIES)
        if not (owner.endswith(".__dict__") or named):
            return None
        value = resolve(func.slice, scope)
        if not value.known or not isinstance(value.value, str):
            return None
        return named_file(value.value)

    def _builder_dict_kind(self, table: ast.expr, scope: Scope) -> Optional[str]:
        """The kind of a model picked from a dict the file spells out, whose every value
        is a model class or factory (simclr's `encoders = {"resnet18": ResNet18,
        "resnet34": ResNet34}` ... `encoders[args.encoder]()`): the kind all of them
        share, by their names or their layers in another file of the run (class_kinds);
        None when one of them says nothing or they differ."""
        bound = scope.lookup(table.id) if isinstance(table, ast.Name) else None
        if not (isinstance(bound, ast.Dict) and bound.values):
            return None
        kinds: set[Optional[str]] = set()
        for value in bound.values:
            name = self.walker.qualname(value) if value is not None else None
            if name is None:
                return None
            kinds.add(architecture(name.rsplit(".", 1)[-1]) or self._kind_elsewhere(name))
        return kinds.pop() if len(kinds) == 1 else None

    def _attention_model(self, node: ast.Call, name: str) -> bool:
        """A model of the project out of sight, whose name says nothing of its kind, given
        a number of attention heads (`Translator(num_encoder_layers=5, num_heads=8, ...)`):
        a transformer, matmul-bound."""
        callee = _callee(node) or ""
        return (
            not name.startswith(LIBRARIES)
            and architecture(callee) is None
            and _named_elsewhere(node, name, self.references) is None
            and attention_heads(node)
        )

    def _widths(self, written: list[ast.expr], scope: Scope) -> None:
        """The sizes of a small matmul layer the source shows: `nn.Linear(n_obs, 64)` (the
        input width from the environment is not in sight, the hidden one is), `nn.RNN(57,
        128)`, `nn.Linear(d_in, hidden)` in a class the file builds as `Net(7, 16, 2)`. A
        layer with no size in sight, or any size above TOY_WIDTH, is no toy's; one that
        maps the model's input to its output (`nn.Linear(input_dim, output_dim)`, the
        data's features and classes, the constructor's parameters) says nothing of it."""
        function = self.functions.get(id(scope))
        sizes = [width(self.walker, a, function) for a in written]
        if written and sizes == [None] * len(sizes) and data_widths(written, function):
            return  # `nn.Linear(input_dim, output_dim)`: the data's widths, no hidden one
        self._caller_widths(written, sizes, function)
        self._sizes(sizes)

    def _caller_widths(
        self, written: list[ast.expr], sizes: list[Optional[int]], function: Optional[ast.AST]
    ) -> None:
        """Whether a layer's widths are small or the caller's: each size not in sight a
        parameter of the function building it (`nn.Linear(hidden_dim, hidden_dim)` in a
        `Discriminator.__init__(self, input_dim, hidden_dim)` that nothing in the file
        builds), none in sight above TOY_WIDTH."""
        parameters: set[str] = set()
        if isinstance(function, ast.FunctionDef):
            arguments = function.args
            parameters = {a.arg for a in [*arguments.args, *arguments.kwonlyargs]} - {"self"}
        for expr, size in zip(written, sizes, strict=True):
            if size is None and isinstance(expr, ast.Name) and expr.id in parameters:
                self.by_caller = self.by_caller is not False
            elif size is None or size > TOY_WIDTH:
                self.by_caller = False

    def _head_weights(self, short: str, written: list[ast.expr], scope: Scope) -> None:
        """Add an nn.Linear's weights (`nn.Linear(16 * 5 * 5, 120)`: 48,000) to the head's;
        another matmul layer, or a Linear of widths not in sight, leaves them unknown."""
        if self.head_weights is None:
            return
        function = self.functions.get(id(scope))
        sizes = [width(self.walker, w, function) for w in written[:2]]
        if short != "Linear" or len(sizes) < 2 or sizes[0] is None or sizes[1] is None:
            self.head_weights = None
        else:
            self.head_weights += sizes[0] * sizes[1]

    def _channels(self, node: ast.Call, name: str, scope: Scope) -> None:
        """The channels of a convolution in sight: `nn.Conv2d(3, 6, 5)`, `nn.Conv2d(6, 16,
        5)` of a LeNet, each at most TOY_CHANNELS; any other convolution (a project's
        class, a functional conv, a torchvision model), or channels not in sight or wider,
        make the model no toy CNN."""
        if self.conv_channels is None:
            return
        if not NN_CONV.match(name):
            self.conv_channels = None
            return
        function = self.functions.get(id(scope))
        written = [*node.args[:2]]
        for i, key in enumerate(("in_channels", "out_channels")):
            given = keyword_arg(node, key)
            if given is not None and i >= len(written):
                written.append(given)
        sizes = [width(self.walker, w, function) for w in written]
        if len(sizes) < 2 or any(s is None or s > TOY_CHANNELS for s in sizes):
            self.conv_channels = None
        else:
            self.conv_channels.extend(s for s in sizes if s is not None)

    def _sizes(self, sizes: list[Optional[int]]) -> None:
        if self.small_widths is None:
            return
        width = small_layer(sizes)
        if width is None:
            self.small_widths = None
        else:
            self.small_widths.append(width)

    def _graph_widths(self, node: ast.Call, short: str, scope: Scope) -> None:
        """A graph layer's input and output widths (`GCNConv(in_channels, out_channels)`,
        DGL's `SAGEConv(in_feats, out_feats, "mean")`); a graph attention layer outputs
        its width once per head (`GATConv(in_size, 8, num_heads=8)`: 64)."""
        function = self.functions.get(id(scope))
        written = [*node.args[:2]] + [None] * (2 - len(node.args[:2]))
        for i, keys in enumerate((GRAPH_INPUT, GRAPH_OUTPUT)):
            written[i] = next((k.value for k in node.keywords if k.arg in keys), written[i])
        sizes = [width(self.walker, w, function) if w is not None else None for w in written]
        heads = next((k.value for k in node.keywords if k.arg in ("heads", "num_heads")), None)
        if heads is None and short.startswith("GAT") and len(node.args) > 2:
            heads = node.args[2]
        times = width(self.walker, heads, function) if heads is not None else None
        if sizes[1] is not None and times is not None:
            sizes[1] *= times
        self._sizes(sizes)

    def _sized_model(self, node: ast.Call, scope: Scope) -> None:
        """A graph network or MLP of the project, built out of sight and given its hidden
        width (pygcn's `GCN(nfeat=..., nhid=args.hidden)`, --hidden defaulting to 16): a
        whole model, a toy when that width is small. Any other named architecture, or one
        given no width, is of a size the source does not show."""
        given = [k.value for k in node.keywords if k.arg and HIDDEN_KEYWORD.match(k.arg)]
        # positionally, an option so named (`GraphCNN(5, 2, 7, args.hidden_dim, ...)`)
        given += [a for a in node.args if HIDDEN_KEYWORD.match(_last_name(a) or "")]
        function = self.functions.get(id(scope))
        sizes = [width(self.walker, g, function) for g in given]
        callee = _callee(node) or ""
        if (
            self.small_widths is None
            or not sizes
            or any(w is None or w > TOY_WIDTH for w in sizes)
            or not (sized_by_width(callee) or self._narrow_transformer(node, function))
        ):
            self.small_widths = None
            return
        self.small_widths.extend(w for w in sizes if w is not None)
        self.small_models += 1

    def _narrow_transformer(self, node: ast.Call, function: Optional[ast.AST]) -> bool:
        """A transformer of the project given its model width, at most TOY_WIDTH, and a
        few layers (Decision Transformer's `DecisionTransformer(hidden_size=128, n_layer=3,
        ...)` from its options' defaults): every matmul is a few hundred wide at most, too
        narrow for tensor cores to gain. Its depth must be in sight too."""
        callee = _callee(node) or ""
        if architecture(callee) != "matmul" or sized_by_width(callee):
            return False
        depths = [
            width(self.walker, k.value, function)
            for k in node.keywords
            if k.arg and LAYER_COUNT.match(k.arg)
        ]
        return bool(depths) and all(d is not None and d <= TOY_DEPTH for d in depths)

    def _read_by_layers(self, node: ast.Call, scope: Scope) -> bool:
        """A call whose name says nothing of the model's kind: a value called (`self.conv1(
        x)`, `loss_fcn(logits, y)` with `loss_fcn = nn.CrossEntropyLoss()`, a loop's `for
        conv in self.convs`, a lambda, a parameter), or a class of the file whose layers
        are in sight (its own `class MLP(nn.Module)`, a `class GraphConv(nn.Module)` of
        `torch.mm`s, a `TransformerNet` of convolutions): what its layers are decides, not
        the words in its name. A name assigned a model class or factory by reference
        (`backbone = resnet18`) is no value: _named_elsewhere reads it."""
        func = node.func
        if isinstance(func, ast.Attribute):
            return isinstance(func.value, ast.Name) and func.value.id == "self"
        if not isinstance(func, ast.Name):
            return False
        if self.layered_classes is None:
            index = self.walker.index()
            self.layered_classes = {
                c.name for c in index.class_nodes if self._builds_layers(c)
            } | index.derived_from(TORCH_MODULES)
        if func.id in self.layered_classes:
            return True
        function = self.functions.get(id(scope))
        if id(function) not in self.variables:
            self.variables[id(function)] = value_names(function or self.walker.module)
        return func.id in self.variables[id(function)]

    def _imported(self, func: ast.expr) -> bool:
        """The called name starts from an import (`conv2d_gradfix.conv2d`), not from a
        value of the file (`self.convs.append`)."""
        while isinstance(func, ast.Attribute):
            func = func.value
        return isinstance(func, ast.Name) and func.id in self.walker.aliases

    def _builds_layers(self, cls: ast.ClassDef) -> bool:
        """The class builds torch.nn or graph layers in its own body."""
        for node in ast.walk(cls):
            if isinstance(node, ast.Call):
                name = self.walker.qualname(node.func) or ""
                if name.startswith("torch.nn.") or graph_library(name):
                    return True
        return False

    def _convolutional(self, node: ast.Call, name: str, scope: Scope) -> bool:
        if graph_library(name):
            return False  # message passing (`dgl.nn.pytorch.conv.GINConv`): matmuls
        if CONV_CLASS.search(name) or name.startswith("torch.nn.functional.conv"):
            return True
        if _asserted_class(node) is not None:
            # `assert isinstance(vae, VQGanVAE)`: the trainer states its model's class
            return architecture(_asserted_class(node) or "") == "conv"
        layout = keyword_arg(node, "memory_format")
        if layout is not None and self.walker.qualname(layout) in CHANNELS_LAST:
            return True  # `model.to(memory_format=torch.channels_last)`: a layout for CNNs
        parts = name.split(".")
        if len(parts) >= 2 and parts[-1] in PRETRAINED_LOADERS:
            # `ResNetForImageClassification.from_pretrained(...)`, diffusers'
            # `UNet2DConditionModel.from_pretrained(...)`: the class names the kind
            return architecture(parts[-2]) == "conv"
        named = self._library_model(node, name, scope)
        if isinstance(node.func, ast.Subscript) and named is None:
            return self._registry_kind(node, scope) == "conv"
        if named == "":
            return False  # a library model whose architecture the source does not show
        if named is None:
            # a model class or factory of the project, out of sight: `ResNet18()`, or an
            # op of a project module named for convolutions (`conv2d_gradfix.f()`)
            callee = None if self._read_by_layers(node, scope) else _callee(node)
            project = not name.startswith(("torch.", "torchvision.", *RAW_TF_OPS))
            elsewhere = self._kind_elsewhere(name) if callee is not None and project else None
            if elsewhere is not None:
                # a class of another file of the run: its layers there decide, not its
                # name (`ResNetDiffusion`, a tabular MLP-ResNet of nn.Linear)
                return elsewhere == "conv"
            # the modules of an import (not `self.convs.append`: an attribute of a value)
            modules = [architecture(p) for p in name.split(".")[:-1] if p.startswith("conv")]
            modules = modules if self._imported(node.func) else []
            return project and (
                (callee is not None and architecture(callee) == "conv")
                or "conv" in modules
                or (callee is not None and _named_elsewhere(node, name, self.references) == "conv")
                or (callee is not None and _named_definition(node, name, scope) == "conv")
                or self._module_by_name(node, scope) == "conv"
            )
        return not named.lower().startswith(TRANSFORMERS)

    def _handed_backbone(self, node: ast.Call, scope: Scope) -> bool:
        """A torchvision CNN handed by name, uncalled, to the project's class or function
        that builds it (SimSiam's `SimSiam(models.__dict__[args.arch], dim)`, --arch
        defaulting to "resnet50"): the backbone is that architecture. A name the source
        does not settle, or one its name does not call a CNN (a ViT), says nothing."""
        for argument in [*node.args, *(k.value for k in node.keywords)]:
            if not isinstance(argument, (ast.Subscript, ast.Attribute, ast.Call)):
                continue
            picked = ast.Call(func=argument, args=[], keywords=[])
            named = self._library_model(picked, self.walker.qualname(argument) or "", scope)
            if named and architecture(named) == "conv":
                return True
        return False

    def _library_model(self, node: ast.Call, name: str, scope: Scope) -> Optional[str]:
        """The architecture a call builds a torchvision or timm model of, by name:
        `torchvision.models.resnet50()`, `timm.create_model("resnet50")`, Lightning's
        `get_torchvision_model("resnet50")`, `getattr(torchvision.models, "resnet50")()`,
        `torchvision.models.__dict__[arch]()`; "" when the source does not show the name,
        None for any other call."""
        func = node.func
        if name.startswith("torchvision.models.") and name not in MODEL_FACTORIES:
            return name.rsplit(".", 1)[-1]
        given: Optional[ast.expr] = None
        if name in MODEL_FACTORIES:
            given = node.args[0] if node.args else keyword_arg(node, "model_name")
        elif isinstance(func, ast.Subscript):  # models.__dict__[args.arch](...)
            if self.walker.qualname(func.value) != "torchvision.models.__dict__":
                return None
            given = func.slice
        elif (
            isinstance(func, ast.Call)
            and isinstance(func.func, ast.Name)
            and func.func.id == "getattr"
            and len(func.args) >= 2
            and self.walker.qualname(func.args[0]) == "torchvision.models"
        ):
            given = func.args[1]  # getattr(torchvision.models, args.arch)(...)
        else:
            return None
        if given is None:
            return ""
        value: Optional[Value] = resolve(given, scope)
        if value is not None and not value.known:  # `backbone: str = "resnet50"`
            value = handed_value(self.walker, self.functions.get(id(scope)), given)
        return str(value.value) if value is not None and value.known else ""

    def facts(self) -> dict[str, Any]:
        found: dict[str, Any] = {"autocast": self.ungated is not None, "amp_gate": None}
        found["conv_layers"] = self.conv
        found["matmul_layers"] = sorted(set(self.matmul))
        found["cudnn_rnns"] = sorted(set(self.cudnn_rnns))
        found["attention_classes"] = sorted(set(self.attention_classes))
        # beside cuDNN RNNs: the Linear layers projecting onto a vocabulary (or wider than
        # a head), and whether those whose width is not known stand beside no head
        found["rnn_projections"] = (
            sorted(set(self.linears.get("projection", []))) if self.cudnn_rnns else []
        )
        found["rnn_unread_linears"] = (
            sorted(set(self.linears.get(None, [])))
            if self.cudnn_rnns and not self.linears.get("head")
            else []
        )
        # project classes that are one nn.Linear (RepDistiller's `LinearEmbed`): beside a
        # CNN, a head, as `nn.Linear` itself is
        found["linear_models"] = sorted(set(self.linear_models))
        constant_toy = (
            set(self.matmul) == {"Linear"}
            and self.linear_weights is not None
            and self.linear_weights < TOY_WEIGHTS
        )
        # an MLP or RNN of small layers (two at least: one small layer is a head, and the
        # body may be out of sight), nothing convolutional
        small_net = self.small_widths is not None and (
            len(self.small_widths) >= 2 or self.small_models > 0
        )
        # a torchvision/timm model built by name is a whole architecture, whatever its
        # head (`nn.Sequential(*list(resnet50().children())[:-1])` + `nn.Linear(2048, 1)`)
        # a LeNet: a few narrow convolutions in sight under a small MLP head
        small_cnn = (
            bool(self.conv_channels)
            and set(self.matmul) == {"Linear"}
            and self.head_weights is not None
            and self.head_weights <= TOY_HEAD_WEIGHTS
            and not self.library_model
        )
        toy = constant_toy or (small_net and not self.conv) or small_cnn
        found["toy_model"] = bool(self.matmul and toy and not self.library_model)
        found["toy_cnn"] = small_cnn
        roots = {qualified.split(".")[0] for qualified in self.walker.aliases.values()}
        found["rl_environment"] = bool(roots & RL_ENVIRONMENTS) or _replay_agent(self.walker)
        found["env_rollouts"] = (
            _environment_rollouts(self.walker) if found["rl_environment"] else None
        )
        # an agent's MLP/RNN in sight whose widths its caller passes (GAIL's discriminator,
        # `Discriminator(obs_dim + act_dim, 100, device)` in the training script)
        found["caller_widths"] = bool(
            found["rl_environment"]
            and self.by_caller
            and not toy
            and not self.conv
            and not self.library_model
            and set(self.matmul) <= set(SIZED_LAYERS)
        )
        # message passing and nothing else heavy: graph layers or graph models, with at
        # most Linear heads or MLPs beside them (no convolutions, RNNs, transformers)
        others = set(self.matmul) - set(self.graph) - GRAPH_COMPANIONS
        found["graph_network"] = (
            sorted(set(self.graph))
            if self.graph and not (others or self.conv or self.library_model)
            else None
        )
        found["varying_input"] = _varying_batches(self.walker)
        found["quantized_model"] = self.quantized
        found["graph_batches"] = None if self.matmul or self.conv else _graph_batches(self.walker)
        found["feature_embeddings"] = (
            None if self.matmul or self.conv else _feature_embeddings(self.walker)
        )
        if self.lightning_module and not self.lightning_runner:
            self.gates.append((LIGHTNING_ELSEWHERE, self.walker.module_scope))
        if self.hf_subclass and not _builds_training_arguments(self.walker):
            gate = HF_SUBCLASS.format(name=self.hf_subclass)
            self.gates.append((gate, self.walker.module_scope))
        if self.ungated is not None or not self.gates:
            return found
        gates = [self._gate(expr, scope) for expr, scope in self.gates]
        if any(g["default"] is True for g in gates):
            found["autocast"] = True  # on by default
            return found
        # a command-line flag first (its wording is the most useful), then a condition
        # the source does not settle (the rules then say unknown), then settings off by
        # default
        ranked = sorted(gates, key=lambda g: (g["option"] is None, g["default"] is not None))
        found["amp_gate"] = ranked[0]
        return found

    def _gate(self, expr: Gate, scope: Scope) -> dict[str, Any]:
        """The condition AMP sits behind, and its default where the source shows it."""
        if isinstance(expr, str):  # set outside the source (a launcher, a config file)
            if expr in (FRAMEWORK_DEFAULT, HF_DEFAULT) or expr.endswith(LIGHTNING_DEFAULT_TAIL):
                return {"text": expr, "option": None, "default": False, "framework_default": True}
            return {
                "text": expr,
                "option": None,
                "default": False if expr in OFF_UNLESS_SET else None,
                "outside": True,
            }
        text = ast.unparse(expr)
        value = resolve(expr, scope)
        default_expr = None
        if not value.known and isinstance(expr, ast.Name):
            default_expr = parameter_default(self.functions.get(id(scope)), expr.id, scope)
        if default_expr is not None:
            # `if use_amp:` in `def fit(..., use_amp=False)`: the caller decides, and the
            # default is what a caller that does not say gets
            found = resolve(default_expr, scope)
            if found.known:
                on = found.value is True or str(found.value).lower() in MIXED_VALUES
                return {
                    "text": f"{text} (a parameter, default {ast.unparse(default_expr)})",
                    "option": None,
                    "default": on,
                }
        option = None
        if value.source.startswith("argparse "):
            option = _option_choice(expr, value.source.split()[1])
        default = value.value if value.known else None
        if value.known and value.value is None and option is not None:
            # Accelerator(mixed_precision=args.mixed_precision), default None: the launcher
            # decides
            return {
                "text": f"{text} (default None: accelerate launch or config)",
                "option": None,
                "default": False,  # float32 unless the launcher's config sets it
            }
        if value.known and value.value is None and not _about_precision(expr):
            # `if args.model_name_or_path:` around `from_pretrained(..., dtype=bfloat16)`:
            # whether an input the run is normally given (a model to fine-tune) is given
            # is not a precision setting; which branch runs is not in the source
            return {"text": text, "option": None, "default": None}
        if value.known and not isinstance(default, bool):
            default = str(default).lower() in MIXED_VALUES or default is True
        return {"text": text, "option": option, "default": default}


def _option_choice(test: ast.expr, option: str) -> str:
    """The option as a user passes it to take the branch: `--dt bfloat16` for `if args.dt
    == "bfloat16":`, the bare flag (`--amp`) for anything else."""
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
        and isinstance(test.comparators[0].value, str)
    ):
        return f"{option} {test.comparators[0].value}"
    return option


def lightning_hook(function: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> bool:
    """A Lightning `training_step(self, batch, batch_idx)` hook (of a LightningModule, or
    of a class a LightningModule delegates to): a Trainer, not this code, runs it."""
    names = [a.arg for a in function.args.args]
    return function.name == "training_step" and "batch_idx" in names


def _asserted_class(node: ast.Call) -> Optional[str]:
    """`VQGanVAE` in `isinstance(vae, VQGanVAE)`, else None."""
    if (
        isinstance(node.func, ast.Name)
        and node.func.id == "isinstance"
        and len(node.args) == 2
        and isinstance(node.args[1], ast.Name)
        and node.args[1].id[:1].isupper()
    ):
        return node.args[1].id
    return None


def _model_builder(node: ast.Call, name: str) -> bool:
    """A function of the project that builds a model in a dtype it is given
    (`build_model(..., dtype=config.model.dtype)`, `create_model(cfg, dtype=dtype)`): not
    a library's tensor factory (`torch.zeros(..., dtype=...)`)."""
    callee = _callee(node) or ""
    return (
        keyword_arg(node, "dtype") is not None
        and not name.startswith(LIBRARIES)
        and "model" in callee.lower()
    )


def _callee(node: ast.Call) -> Optional[str]:
    """The called name: `ResNet18` for ResNet18() and models.ResNet18()."""
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _named_elsewhere(node: ast.Call, name: str, references: dict[str, set[str]]) -> Optional[str]:
    """The kind of a model whose call does not name it, named elsewhere in the file: a
    factory picked into a variable (`backbone = resnet18` ... `backbone(...)`), or a
    model class of the project imported from a module that names the architecture
    (`from yolov5.models.yolo import SegmentationModel`, `from models.yolo import Model`)."""
    callee = _callee(node)
    if isinstance(node.func, ast.Name) and callee in references:
        kinds = {architecture(r) for r in references[callee]}
        if len(kinds) == 1:
            return kinds.pop()
    if callee is None or "." not in name or not model_like(callee) or architecture(callee):
        return None  # a class that names its own kind (`DiffusionTransformer`) is that kind
    # the modules under the project's package (`yolov5.models.yolo`: models, yolo;
    # `models.diffusion`: an image diffusion UNet); the package names the project, not the
    # model (`yolox.utils.ModelEMA`)
    kinds = {module_architecture(part) for part in name.split(".")[1:-1]} - {None}
    return kinds.pop() if len(kinds) == 1 else None


# The first word of a project function that makes a model from a definition it is given
# (`load_model(args.model)`, `create_model("resnet50")`), not one that saves or logs it.
MAKES_MODEL = ("load", "build", "create", "get", "make", "init", "construct", "define")


def _named_definition(node: ast.Call, name: str, scope: Scope) -> Optional[str]:
    """The kind of a model a project function builds from a definition named by its first
    argument (PyTorch-YOLOv3's `load_model(args.model)`, --model defaulting to
    `config/yolov3.cfg`; `create_model("resnet50")`): the stem of the file or the name
    says the architecture, as timm's `create_model("resnet50")` does. The function must
    say it makes a model and nothing of its kind; a class of the project given one
    (`Model("yolov5s.yaml")`) reads the same way."""
    callee = _callee(node) or ""
    words = [w.lower() for w in WORD_START.split(callee) if w]
    makes = callee[:1].isupper() or (bool(words) and words[0] in MAKES_MODEL)
    if name.startswith(LIBRARIES) or not model_like(callee) or not makes or architecture(callee):
        return None
    if not node.args:
        return None
    value = resolve(node.args[0], scope)
    return named_file(value.value) if value.known and isinstance(value.value, str) else None


def _about_precision(test: ast.expr) -> bool:
    """A condition that reads a precision setting (`args.amp`, `use_fp16`,
    `cfg.precision == "16"`), not a device or a step count."""
    for node in ast.walk(test):
        word = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if isinstance(word, str) and set(word.lower().split("_")) & set(PROJECT_KEYWORDS):
            return True
    return False


# Class methods that load a library model of that class (Hugging Face, diffusers)
PRETRAINED_LOADERS = ("from_pretrained", "from_config", "from_single_file")


def _pretrained_transformer(name: str) -> bool:
    """A Hugging Face transformers model loaded by its class
    (`AutoModelForSequenceClassification.from_pretrained(...)`, `BertModel.from_config`)."""
    parts = name.split(".")
    return (
        len(parts) >= 3
        and parts[0] == "transformers"
        and parts[-1] in ("from_pretrained", "from_config")
        and ("Model" in parts[-2] or "For" in parts[-2])
        and architecture(parts[-2]) != "conv"  # `ResNetForImageClassification`, ConvNeXt
    )


def _reference(node: ast.Assign, references: dict[str, set[str]]) -> None:
    """Record `backbone = resnet18` / `arch = models.resnet50`: a function or class
    assigned by reference, not called (read before the calls that follow it)."""
    if (
        len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, (ast.Name, ast.Attribute))
    ):
        referenced = ast.unparse(node.value).rsplit(".", 1)[-1]
        references.setdefault(node.targets[0].id, set()).add(referenced)


def _as_list(node: Any) -> list[ast.AST]:
    return node if isinstance(node, list) else [node]


def _builds_training_arguments(walker: Walker) -> bool:
    """The file builds or parses the TrainingArguments of a Hugging Face Trainer."""
    for node in module_nodes(walker.module):
        if isinstance(node, ast.Call):
            name = walker.qualname(node.func) or ""
            short = name.rsplit(".", 1)[-1]
            if short.endswith("TrainingArguments") or short == "HfArgumentParser":
                return True
    return False


def _reads_launch_precision(node: ast.AST) -> bool:
    """The code reads the mixed precision its Accelerator got (`accelerator.state.
    mixed_precision`, `accelerator.mixed_precision`): it expects `accelerate launch` or
    its config to set it; or the precision section of the DeepSpeed config the launcher
    gave it (`"fp16" in accelerator.state.deepspeed_plugin.deepspeed_config`)."""
    for found in ast.walk(node):
        if isinstance(found, ast.Attribute) and found.attr == "mixed_precision":
            owner = ast.unparse(found.value).lower()
            if owner.endswith("state") or "accelerator" in owner:
                return True
        if (
            isinstance(found, ast.Compare)
            and isinstance(found.left, ast.Constant)
            and found.left.value in ("fp16", "bf16")
            and isinstance(found.ops[0], (ast.In, ast.NotIn))
            and "deepspeed_plugin" in ast.unparse(found.comparators[0])
        ):
            return True
    return False


def _branches_on_launch_precision(module: ast.Module) -> bool:
    """The script decides something on the mixed precision its Accelerator got (`16 if
    accelerator.mixed_precision == "fp8" else ...`, `if accelerator.mixed_precision !=
    "no":`): it is written for a launcher or config that sets one."""
    for node in module_nodes(module):
        if isinstance(node, (ast.If, ast.IfExp, ast.While)):
            node = node.test
        elif not isinstance(node, ast.Compare):
            continue
        if _reads_launch_precision(node):
            return True
    return False


def _last_name(node: ast.expr) -> Optional[str]:
    """`args.hidden_dim` -> hidden_dim, `hidden` -> hidden; None for anything else."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None
