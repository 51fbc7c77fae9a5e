"""GPU math settings in training scripts, judged against the GPUs this machine has:
PyTorch's cuDNN autotuning, mixed precision and TF32 (EC506-EC508), Keras mixed
precision (EC522).

Size: four rules whose docstrings are their reference documentation (docs/rules.md is
generated from them) and the helpers they share (GPU capability, files judged, gates);
one family of settings stays in one module."""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

from envcheck.checks.ec5xx_torch import TUNING_GUIDE, scripts_section
from envcheck.checks.facts_helpers import linked_files
from envcheck.checks.gpu_facts import capability, devices
from envcheck.checks.script_facts import trains_on_gpu
from envcheck.engine.python_rules import check
from envcheck.engine.rule import Hit, Outcome
from envcheck.model import Basis, Impact, Location, Severity
from envcheck.snapshot import Facts, Missing


def _gpu_files(
    facts: Facts, select: Callable[[dict[str, Any]], bool] = lambda f: True
) -> Union[tuple[list[dict[str, Any]], list[str]], Outcome]:
    """The files (among those `select` picks) that train on a GPU, by the shared answer,
    and the reasons for those that cannot be decided."""
    section = scripts_section(facts)
    if isinstance(section, Outcome):
        return section
    files: list[dict[str, Any]] = []
    unknown: list[str] = []
    for f in section.get("file_facts") or []:
        if not select(f):
            continue
        answer = trains_on_gpu(facts, f)
        if answer.trains:
            files.append(f)
        elif answer.trains is None:
            unknown.append(f"{f.get('path')}: {answer.reason}")
    return files, unknown


def _torch(file_facts: dict[str, Any]) -> bool:
    """A PyTorch file with training code in it (a data module or a model definition
    alone is not judged: its training happens elsewhere); files observed without these
    facts count as one."""
    return file_facts.get("torch") is not False and file_facts.get("trains") is not False


OUT_OF_SIGHT = (
    "the model is built out of this file (no layers or known architecture in sight): "
    "whether matmuls or convolutions dominate is not known"
)


def _out_of_sight(file_facts: dict[str, Any]) -> bool:
    """A model whose kind nothing in the file names (neither convolutions nor matmul
    layers in sight): the rules that depend on its kind cannot decide."""
    return (
        "matmul_layers" in file_facts
        and not file_facts.get("matmul_layers")
        and not file_facts.get("conv_layers")
    )


def _judged(hits: list[Hit], unknown: list[str], reason: str, clean: str) -> Outcome:
    if hits:
        return Outcome.failed(*hits, reason=reason)
    if unknown:
        return Outcome.unknown("; ".join(unknown))
    return Outcome.passed(clean)


def _lowest_capability(facts: Facts) -> Union[tuple[int, int], Missing, None]:
    """The oldest GPU's compute capability (training runs at the pace of the slowest)."""
    found = devices(facts)
    if isinstance(found, Missing):
        return found
    caps = [c for c in (capability(d) for d in found) if c is not None]
    return min(caps) if caps else None


def _file_hit(file_facts: dict[str, Any], **values: Any) -> Hit:
    """A finding about a whole file, located at its training code where that is known."""
    path = str(file_facts.get("path"))
    at = file_facts.get("train_at")
    location = Location(path)
    if isinstance(at, dict) and at.get("line"):
        location = Location(path, at["line"], at.get("column"), at.get("code"))
    return Hit(
        values={"path": path, **values},
        evidence={"facts": {"file": file_facts}},
        location=location,
    )


def _files_on_capable_gpus(
    facts: Facts,
    minimum: tuple[int, int],
    what: str,
    select: Callable[[dict[str, Any]], bool] = lambda f: True,
    none: str = "no GPU training script",
) -> Union[tuple[list[dict[str, Any]], list[str], str], Outcome]:
    """The training scripts `select` picks that train on a GPU, the reasons for those that
    cannot be decided, and the oldest GPU's capability ("8.0") when the target's GPUs
    support `what`; otherwise the Outcome the rule returns."""
    found = _gpu_files(facts, select)
    if isinstance(found, Outcome):
        return found
    files, unknown = found
    if not files:
        return Outcome.unknown("; ".join(unknown)) if unknown else Outcome.passed(none)
    cap = _lowest_capability(facts)
    if isinstance(cap, Missing):
        return Outcome.unknown(f"{what} depends on the target GPU: {cap.reason}")
    if cap is None:
        return Outcome.passed("no NVIDIA GPU on the target machine to judge against")
    if cap < minimum:
        return Outcome.passed(
            f"the target GPUs (compute capability {cap[0]}.{cap[1]}) predate {what}"
        )
    return files, unknown, f"{cap[0]}.{cap[1]}"


@check(
    id="EC506",
    name="cudnn-benchmark-off",
    severity=Severity.LOW,
    category="scripts",
    summary="A convolutional model trains on CUDA without cuDNN autotuning",
    message="{path} trains convolutions on CUDA without torch.backends.cudnn.benchmark = True: "
    "cuDNN uses its default algorithms instead of timing the fastest for each layer",
    fix="torch.backends.cudnn.benchmark = True   # when input sizes do not change between steps",
    evidence=(TUNING_GUIDE + " (Enable cuDNN auto-tuner)",),
)
def cudnn_benchmark_off(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Training a convolutional network on CUDA with cuDNN autotuning off
    (the default). With `cudnn.benchmark = True`, the first step of each input shape times
    the available convolution algorithms and keeps the fastest (PyTorch performance
    tuning guide).

    Input shapes that change every step (variable image sizes, NLP sequences) would re-run
    the tuning each time; leave it off there: a file that batches images by aspect ratio
    (torchvision's `GroupedBatchSampler` over `create_aspect_ratio_groups`,
    `AspectRatioBasedSampler`) passes, as does one whose loader pads each batch to its
    longest sample (a collate function or class of the project, or a DataLoader subclass
    installing one, padding to `max(x.size(0) for x in batch)` or with `pad_sequence`:
    utterances and sentences of every length), as does a small CNN in sight (convolutions
    of at most 16 channels under a few narrow layers: a LeNet, whose steps are bound by
    kernel launches). A model built out of sight whose kind
    nothing names is unknown. Graph layers (PyG's `GCNConv`, DGL's `dgl.nn.SAGEConv`)
    are Linear transforms over a sparse aggregation, no cuDNN convolution, whatever their
    names say; a model's kind is read from its constructors and classes (`DGCNN`,
    `TextCNN`, a torchvision model built by name: Lightning's
    `get_torchvision_model("resnet50")`, `getattr(torchvision.models, arch)()`, a
    Hugging Face or diffusers class loaded by `from_pretrained`:
    `ResNetForImageClassification`, `UNet2DConditionModel`), a model class of the
    project imported from a module named for its architecture (`models.yolo.Model`;
    `models.diffusion.Model`, an image diffusion UNet) or a model a project function
    loads from a definition named for one (`load_model(args.model)`, --model defaulting
    to `config/yolov3.cfg`), not
    from any value named alike (`loss_fcn = nn.CrossEntropyLoss()`, `self.conv1`), nor
    from the name of a class of the file, whose layers in sight decide (`class
    GraphConv(nn.Module)` of `torch.mm`s is no convolution). A model the file builds,
    keeps in eval mode and never runs in a loop of backward passes (a frozen encoder
    computing features once for a linear probe trained by the only optimizer) is not the
    model it trains, and its layers say nothing of the kind. A setting made only in a
    branch the default run does not take (`if args.test_only:
    torch.backends.cudnn.benchmark = False; ...; return`) is not the training run's; a
    Lightning `Trainer(benchmark=True)` (or a LightningCLI's `trainer_defaults=
    {"benchmark": True}`) sets it; for a LightningModule whose Trainer is built in
    another file (the file that runs the training), that Trainer's setting decides and
    the rule is unknown for the module's file. The setting is process-wide: one made by
    the one file of the run that imports the file audited (its entry point, read as
    context: `main.py` sets `cudnn.benchmark = True`, then trains `from solver import
    Solver`) holds for it.

    **Best practice.** `torch.backends.cudnn.benchmark = True` for fixed-size inputs.
    """
    found = _gpu_files(facts, lambda f: _torch(f) and f.get("cudnn_benchmark") is not True)
    if isinstance(found, Outcome):
        return found
    files, unknown = found
    varying = [f for f in files if f.get("varying_input")]
    files = [f for f in files if not f.get("varying_input")]
    # a LeNet: a few narrow convolutions, each step bound by kernel launches
    toys = [f for f in files if f.get("conv_layers") and f.get("toy_cnn")]
    files = [f for f in files if f not in toys]
    # a LightningModule whose Trainer is another file's: that file's run setting
    elsewhere = [f for f in files if f.get("benchmark_elsewhere") and f.get("conv_layers")]
    unknown += [f"{f.get('path')}: {f.get('benchmark_elsewhere')}" for f in elsewhere]
    files = [f for f in files if f not in elsewhere]
    hits = [_file_hit(f) for f in files if f.get("conv_layers")]
    unknown += [f"{f.get('path')}: {OUT_OF_SIGHT}" for f in files if _out_of_sight(f)]
    clean = "no convolutional GPU training without cuDNN autotuning"
    if varying:
        clean += "; input sizes change between batches in " + ", ".join(
            f"{f.get('path')} ({f.get('varying_input')})" for f in varying
        )
    if toys:
        clean += "; " + "; ".join(f"{f.get('path')}: {TOY_CNN}" for f in toys)
    return _judged(hits, unknown, f"{len(hits)} file(s)", clean)


# A toy CNN in sight (precision.TOY_CHANNELS).
TOY_CNN = (
    "a small CNN (convolutions of a few channels under narrow layers, in sight): its steps "
    "are bound by kernel launches, not by the convolutions autotuning would speed up"
)
FLOAT32 = "trains on a GPU without torch.autocast / GradScaler"
# The gain depends on the model: worded so where the file does not show it
MODEL_UNSEEN = (
    " (the model is built out of this file: the gain is large for convolutions, "
    "transformers and wide layers, small for an embedding model or a few narrow layers)"
)
RL_POLICY = (
    "a reinforcement-learning agent (the file uses Gym or an RL library, samples a replay "
    "memory or reads a rollout storage) whose policy network "
    "is built out of this file, the caller's choice: policies are often small MLPs "
    "(Stable-Baselines3's MlpPolicy: two 64-unit layers), where autocast gains nothing; "
    "whether this one is large enough is not known"
)
# An agent's network in sight, whose widths are parameters its caller fills.
RL_CALLER_WIDTHS = (
    "a reinforcement-learning agent whose network in sight is an MLP or RNN with its widths "
    "passed by the caller (constructor parameters nothing in this file fills): RL networks "
    "are often a few 64-unit layers, where float32 costs little; whether this one is wide "
    "enough to gain is not known"
)
# A model out of sight fed graphs.
GRAPH_BATCHES = (
    "the model is built out of this file and fed graphs ({at}): a graph network's "
    "message passing is bound by gathers and scatters over the edges, not by the matmuls "
    "tensor cores speed up, and such networks are often narrow: whether autocast would "
    "gain is not known"
)
# A graph network in sight: message-passing layers (or graph models) and only heads.
GRAPH_NETWORK = (
    "a graph network ({layers}): its message passing is bound by gathers and scatters "
    "over the edges, not by the matmuls tensor cores speed up, so whether {what} would "
    "gain is not known"
)
# An agent that steps its environment in the loop of its updates.
RL_ROLLOUTS = (
    "a reinforcement-learning agent whose training loop steps its environment ({at}) "
    "before each update: the step waits for the simulator on the CPU, and agents' networks "
    "are small (a few convolutions or 64-unit layers), so how much of the run {what} "
    "would speed up is not known"
)
ACCELERATE_FIX = "Accelerator(mixed_precision='bf16')   # or 'fp16' before Ampere"
HF_FIX = "TrainingArguments(..., bf16=True)   # or fp16=True before Ampere"
LIGHTNING_FIX = "{short}(..., precision='bf16-mixed')   # or '16-mixed' before Ampere"
AUTOCAST_FIX = (
    "with torch.autocast(device_type='cuda', dtype=torch.bfloat16): loss = model(x)   "
    "# float16 needs torch.amp.GradScaler"
)


@check(
    id="EC507",
    name="no-mixed-precision",
    severity=Severity.MEDIUM,
    category="scripts",
    summary="Training on a tensor-core GPU in float32, without autocast",
    message="{path} {how}, on GPUs with tensor cores (compute capability {cap}): the matmuls "
    "and convolutions run in float32",
    fix="{fix}",
    evidence=(
        TUNING_GUIDE + " (Use mixed precision and AMP: up to 3x overall speedup on "
        "Volta and newer GPU architectures)",
        "https://pytorch.org/docs/stable/amp.html",
    ),
    impact=Impact(
        3.0,
        Basis.ESTIMATED,
        "PyTorch performance tuning guide: mixed precision "
        "offers up to 3x overall speedup on Volta and newer",
    ),
)
def no_mixed_precision(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Training in float32 on a GPU with tensor cores (Volta, compute
    capability 7.0, and newer). Automatic mixed precision runs matmuls and convolutions
    in float16/bfloat16 on the tensor cores; the PyTorch performance tuning guide quotes
    up to 3x overall speedup on Volta and newer. The figure is an upper bound: models
    limited by their input pipeline or memory bandwidth gain less.

    Mixed precision counts however it is switched on: `torch.autocast` or a GradScaler
    (called, or through `functools.partial` or a variable), Accelerate's
    `mixed_precision`, Lightning's `precision="16-mixed"`, `TrainingArguments(fp16=True)`,
    `model.half()`, apex `amp.initialize`, a precision setting handed to the project's
    own classes (`MixedPrecisionTrainer(use_fp16=...)`), a model built, loaded or cast in
    bfloat16/float16 (`set_default_dtype`, `from_pretrained(torch_dtype=...)` or its newer
    spelling `dtype=`, `model.to(dtype=torch.bfloat16)`, a model builder of the project
    given the dtype: `build_model(..., dtype=config.model.dtype)`, a setting the source
    does not show), an FSDP
    mixed-precision policy that casts the parameters to one
    (FSDP2's `fully_shard(mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16))`,
    FSDP1's `mixed_precision=MixedPrecision(param_dtype=...)`). Behind a command-line
    flag that defaults to off (`--amp`, `action="store_true"`, a string option such as
    `--dt` defaulting to "float" with the cast under `if args.dt == "bfloat16":`), the
    script offers mixed precision and
    choosing it is a setting of the run: no finding, and the rule's reason says AMP is
    off unless the flag (`--dt bfloat16`) is passed; behind a condition or a setting the source
    does not settle (a parameter of the caller's, a recipe's config dtype, the Trainer of
    a LightningModule or `training_step(self, batch, batch_idx)` hook defined elsewhere,
    a Trainer in the file that only predicts, a Lightning `Trainer(**settings)` built
    from a dict the source does not show, also through `Trainer.from_argparse_args(
    argparse.Namespace(**trainer_config))`, or from a Hydra config,
    `hydra.utils.instantiate(cfg.trainer)` then fitted, `accelerate launch`, a model
    loaded in bfloat16 only under a test of an input the run is normally given, `if
    args.model_name_or_path:` with no default), the rule is unknown
    for that file. An entry point with no training loop of its own that calls the
    project's function or class holding one (`trainer_synapse(args, net, ...)` of
    trainer.py, read as context: project_context.py) starts that run: it is judged by
    that loop's precision and settings, with the model it builds; when that trainer file
    is audited in the same run, the finding is the trainer's, where autocast goes. A
    file that fits only data transforms (`encoder.fit`, `scaler.fit`) trains nothing,
    nor does one whose `backward()` feeds no update (no optimizer, no
    step: FGSM's gradient with respect to the input, a forward/backward timing table).
    A framework left at its default precision trains in float32:
    `Accelerator()` without `mixed_precision` (or `Accelerator(**kwargs)` with a dict
    the source spells out that holds none), as `Fabric()` and a Lightning `Trainer` or
    `LightningCLI` (at module level or in the `cli_main()` the main guard calls), and
    `TrainingArguments(...)` without `fp16`/`bf16`; an `Accelerator()` whose precision
    the script branches on (`8 if accelerator.mixed_precision != "no" else None`, or
    `"fp16" in accelerator.state.deepspeed_plugin.deepspeed_config`) is
    written for the one `accelerate launch --mixed_precision` or the accelerate config
    gives, and the rule is unknown, as it is for a subclass of transformers' `Trainer`
    that the file gives no TrainingArguments (a copied `_inner_training_loop` whose
    GradScaler the parent turns on from the caller's `--fp16`/`--bf16`) (a script that trains with
    transformers' `Trainer` is a PyTorch script even when it never imports torch). A
    Keras model trained with `fit` (Keras 3 on the torch backend included) takes its
    precision from a Keras mixed-precision policy: EC522 judges it, not this rule. When
    the file does not show the model (a trainer handed it), float32 is still a fact, but
    what autocast buys depends on that model, and the finding says so; when the one entry
    point importing the file (read as context) builds it, that model is judged, as if in
    sight (decision-transformer's tiny GPT-2 handed to its `SequenceTrainer`). A small model
    gains nothing and is not flagged: a few narrow layers in sight, their widths written
    or passed to the file's own model class (`Net(7, 16, 2)`, `GIN(in_dim, 16,
    out_dim)`), or a graph network or MLP built out of sight and given a hidden width of
    at most 128 (`GCN(nfeat=..., nhid=16)`), or a transformer of the project given that
    width and at most 6 layers (`DecisionTransformer(hidden_size=variant["embed_dim"],
    n_layer=3)`, the options' defaults), or a model class of the project that is one
    `nn.Linear` layer (a logistic regression on features); nor is a model out of sight that the file
    trains on feature rows an estimator was handed (`fit(self, X, y)` wrapping arrays
    documented or annotated as such, or its own `TensorDataset(X, y)` of them: TabNet,
    wide-and-deep, autoencoders over features, a base estimator whose subclasses build
    the network), a
    tabular network of a few narrow layers: the pass says why; so is one whose embedding
    tables the file keys by its input's features (the base model of CTR and recommender
    models: deepctr's `create_embedding_matrix(feature_columns)`, FuxiCTR's `nn.Embedding`
    tables of `feature_map.feature_specs`), embedding lookups bound by memory, then narrow
    layers. For a reinforcement-learning
    agent (on Gym or an RL library, sampling a replay memory or reading a rollout storage
    for its updates) whose
    policy network is built out of sight (Stable-Baselines3's `PPO(policy="MlpPolicy",
    ...)`, two 64-unit layers by default) the
    rule is unknown: RL policies are often too small to gain; so it is for an agent whose
    training loop steps its environment before each update (PPO's `envs.step(action)`
    rollouts, then the update; TD3's `env.step(action)`, then `policy.train(replay_buffer,
    batch_size)` of its agent class in another file), whatever network is in sight: the
    run waits on the simulator, and the agent's network is a small part of each step;
    and for one whose network in sight is an MLP or RNN with its widths left to the caller (GAIL's
    `Discriminator(input_dim, hidden_dim)`, built by the training script). A model out of sight
    that the file feeds graphs (it imports PyG, DGL or TorchDrug, or calls `self.model(
    graphs, ...)`) is unknown too: message passing is bound by gathers and scatters over
    the edges, and such networks are often narrow; so is a graph network in sight (PyG/DGL
    message-passing layers such as `GCNConv`, or `GCN()`/`GIN()` models, with at most
    Linear or MLP heads beside them), whatever its width. A pretrained model loaded
    quantized by bitsandbytes, the base of a LoRA/QLoRA fine-tune (`from_pretrained(...,
    load_in_8bit=True)`, or `load_in_4bit=True`/`quantization_config=BitsAndBytesConfig(
    ...)` computing in bfloat16/float16), runs its large matmuls in int8 or 16-bit kernels,
    not float32: no finding, and the pass says why; 4-bit weights computing in a dtype the
    source does not settle (float32 by default), or a quantized load under a condition,
    leave the rule unknown.

    **Best practice.** `torch.autocast(device_type="cuda", dtype=torch.bfloat16)` (Ampere
    and newer), or float16 with `torch.amp.GradScaler`.
    """
    found = _files_on_capable_gpus(facts, (7, 0), "tensor cores", _torch)
    if isinstance(found, Outcome):
        return found
    files, unknown, cap = found
    hits: list[Hit] = []
    behind_flags: list[str] = []
    small: list[str] = []
    for f in files:
        if f.get("autocast"):
            continue
        if f.get("toy_model"):
            # nothing for tensor cores to speed up
            toy = TOY_HANDED.format(by=f["model_from"]) if f.get("model_from") else TOY
            small.append(f"{f.get('path')}: {toy}")
            continue
        quantized = _quantized(f, "autocast")
        if quantized:
            (small if quantized[0] else unknown).append(f"{f.get('path')}: {quantized[1]}")
            continue
        rows = _out_of_sight(f) and _feature_rows(facts, str(f.get("path")))
        if rows:
            small.append(f"{f.get('path')}: {rows}")
            continue
        tables = _out_of_sight(f) and f.get("feature_embeddings")
        if tables:
            small.append(f"{f.get('path')}: {FEATURE_TABLES.format(at=tables)}")
            continue
        if f.get("keras_fit"):
            continue  # Keras fit on the torch backend: its mixed-precision policy is EC522's
        gate = f.get("amp_gate")
        if not isinstance(gate, dict) and _out_of_sight(f) and f.get("rl_environment"):
            unknown.append(f"{f.get('path')}: {RL_POLICY}")
        elif not isinstance(gate, dict) and f.get("caller_widths"):
            unknown.append(f"{f.get('path')}: {RL_CALLER_WIDTHS}")
        elif not isinstance(gate, dict) and _out_of_sight(f) and f.get("graph_batches"):
            at = f.get("graph_batches")
            unknown.append(f"{f.get('path')}: {GRAPH_BATCHES.format(at=at)}")
        elif not isinstance(gate, dict) and f.get("graph_network"):
            layers = ", ".join(f["graph_network"])
            unknown.append(
                f"{f.get('path')}: {GRAPH_NETWORK.format(layers=layers, what='autocast')}"
            )
        elif not isinstance(gate, dict) and f.get("env_rollouts"):
            at = f.get("env_rollouts")
            unknown.append(f"{f.get('path')}: {RL_ROLLOUTS.format(at=at, what='autocast')}")
        elif not isinstance(gate, dict):
            how = FLOAT32 + (MODEL_UNSEEN if _out_of_sight(f) else "")
            hits.append(_file_hit(f, cap=cap, how=how, fix=AUTOCAST_FIX))
        elif gate.get("framework_default"):
            # a framework left at its float32 default (Accelerator() as Fabric() is)
            how = f"trains on a GPU in float32: {gate.get('text')}"
            text = str(gate.get("text"))
            fix = (
                HF_FIX
                if text.startswith("TrainingArguments")
                else LIGHTNING_FIX.format(short=text.split("(")[0])
                if "Lightning's default" in text
                else ACCELERATE_FIX
            )
            hits.append(_file_hit(f, cap=cap, how=how, fix=fix))
        elif gate.get("option") and not gate.get("default"):
            # the script offers mixed precision: choosing it is the user's run setting
            option = gate["option"]
            behind_flags.append(
                f"{f.get('path')}: mixed precision is there behind {option}, off by "
                f"default: AMP is off unless {option} is passed (pass it on GPUs with "
                "tensor cores)"
            )
        elif gate.get("outside"):
            unknown.append(
                f"{f.get('path')}: mixed precision is set outside the source: {gate.get('text')}"
            )
        else:
            unknown.append(
                f"{f.get('path')}: mixed precision depends on `{gate.get('text')}`, which the "
                "source does not determine"
            )
    clean = "; ".join(behind_flags + small) or "every GPU training script uses autocast"
    return _judged(hits, unknown, f"{len(hits)} file(s) in float32", clean)


# A pretrained model loaded quantized (bitsandbytes), the base of a LoRA/QLoRA fine-tune.
QUANTIZED_LOW = (
    "the model is loaded quantized ({text}): its large matmuls run in {matmuls} kernels, not "
    "in float32 (only adapters such as LoRA's train in float32), so {what} has little left to "
    "speed up"
)
QUANTIZED_UNKNOWN = (
    "the model is loaded quantized ({text}): its large matmuls run in the quantized kernels' "
    "compute dtype, which the source does not settle (4-bit weights compute in float32 "
    "unless bnb_4bit_compute_dtype says otherwise): whether {what} would gain is not known"
)
MATMUL_KINDS = {"int8": "int8 (LLM.int8, float16 for the outliers)", "half": "16-bit"}


def _quantized(file_facts: dict[str, Any], what: str) -> Optional[tuple[bool, str]]:
    """For a file that loads its model quantized: (True, why it passes) when the large
    matmuls run in int8 or 16-bit kernels, (False, why it is not known) otherwise."""
    quantized = file_facts.get("quantized_model")
    if not isinstance(quantized, dict):
        return None
    kind = MATMUL_KINDS.get(str(quantized.get("matmuls")))
    if kind:
        return True, QUANTIZED_LOW.format(text=quantized.get("text"), matmuls=kind, what=what)
    return False, QUANTIZED_UNKNOWN.format(text=quantized.get("text"), what=what)


TOY = "a small model (a few narrow layers in sight): float32 costs it little"
# A trainer handed the model its one entry point builds (analyze.Walker._handed_model).
TOY_HANDED = (
    "the model it is handed, built by {by} (the entry point importing it), is small (a few "
    "narrow layers): float32 costs it little"
)
# A base model of CTR/recommender models, built out of sight.
FEATURE_TABLES = (
    "the model is built out of this file and looks up embedding tables keyed by its input "
    "features ({at}): a CTR or recommender model, whose embedding lookups are gathers bound "
    "by memory and whose layers after them are narrow: too little matmul work for mixed "
    "precision to matter"
)


def _feature_rows(facts: Facts, path: str) -> str:
    """Why the file's out-of-sight model trains on feature rows (a scikit-learn-style
    estimator wrapping the X arrays its `fit`/`predict` were handed), or "". Such tabular
    networks (TabNet, wide-and-deep, autoencoders over features) are a few narrow layers
    over batches of short rows: tensor cores have little to speed up."""
    section = scripts_section(facts)
    if isinstance(section, Outcome):
        return ""
    for loader in section.get("loaders") or []:
        dataset = loader.get("dataset") or {}
        if loader.get("path") == path and dataset.get("handed_arrays"):
            return (
                f"the model is built out of this file and its loader (line {loader.get('line')}) "
                "serves rows of in-memory feature arrays "
                f"({dataset.get('in_memory') or dataset.get('text')}): "
                "a tabular estimator, too small a network for mixed precision to matter"
            )
    return ""


@check(
    id="EC508",
    name="tf32-matmul-off",
    severity=Severity.LOW,
    category="scripts",
    summary="float32 matmuls on an Ampere-or-newer GPU without TF32",
    message="{path} trains in float32{unless} on GPUs of compute capability {cap} without "
    "enabling TF32 for matmuls (off by default since PyTorch 1.12)",
    fix="torch.set_float32_matmul_precision('high')",
    evidence=(
        "https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-"
        "later-devices (torch.backends.cuda.matmul.allow_tf32 defaults to False since 1.12; "
        "torch.backends.cudnn.allow_tf32, for convolutions, defaults to True; "
        "torch.backends.cudnn.rnn.fp32_precision, for cuDNN RNNs, defaults to 'tf32')",
        "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cudnn/RNN.cpp "
        "(the cuDNN RNN descriptor is set with allowTF32CuDNN(at::Float32Op::RNN))",
    ),
)
def tf32_matmul_off(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Float32 training on Ampere or newer GPUs (compute capability 8.0+)
    with TF32 matmuls off, the default since PyTorch 1.12. TF32 runs float32 matmuls on
    the tensor cores with a 10-bit mantissa, much faster, and is accurate enough for most
    training. Scripts that already use autocast are not flagged (their matmuls run in
    half precision), nor are convolutional models (`nn.Conv*`, torchvision and timm CNNs):
    cuDNN already runs their convolutions in TF32, since `torch.backends.cudnn.allow_tf32`
    defaults to True (PyTorch CUDA notes). Nor are the full-sequence recurrent modules
    `nn.LSTM`, `nn.GRU` and `nn.RNN` in sight, with Linear heads around them: on a GPU
    PyTorch runs them through cuDNN, whose RNN descriptor takes its math type from the
    same switch (`allowTF32CuDNN(at::Float32Op::RNN)` in ATen's native/cudnn/RNN.cpp;
    `torch.backends.cudnn.rnn.fp32_precision` is "tf32" by default). Their cells
    (`nn.LSTMCell`, `nn.GRUCell`, `nn.RNNCell`, stepped by hand) are cuBLAS matmuls and
    count as matmul layers, as does attention beside an LSTM (`nn.MultiheadAttention`, or
    a class of the file named for attention built of `nn.Linear`: Bahdanau's), and so
    does a Linear beside them projecting onto a vocabulary, a cuBLAS matmul at every time
    step and about half such a model's compute: a word LM's `nn.Linear(nhid, ntoken)`, a
    seq2seq decoder's `nn.Linear(hid_dim, output_dim)` with `output_dim =
    len(TRG.vocab)`, any Linear of more than 1024 outputs (the finding names it). A
    Linear whose width is settled at most 1024 or named for a class count (`nclass =
    len(alphabet) + 1` with a literal alphabet, `num_classes`) is a head; when no Linear
    beside the RNNs has a width the source tells, whether they are heads is unknown. A
    model class of another file of the project built of cuDNN RNNs and Linear layers
    (a word LM's `RNNModel`, a speaker encoder) is judged by its layers there; beside
    convolutions, a CRNN's, the convolutions decide, whatever its head. So the
    advice concerns
    matmul-heavy models
    (`nn.Linear` or a class of the file subclassing it, RNN cells, transformers, graph
    networks of PyG/DGL layers such as `GCNConv`, in sight or named: `RNNModel()`,
    `GCN()`, a model of the project given attention heads: `Translator(num_heads=8,
    ...)`, or one picked from a registry of model builders by a key naming the
    architecture: segment-anything's `sam_model_registry[args.model_type]`, --model_type
    defaulting to "vit_b"), not toy ones (a few small
    constant `nn.Linear`, or an MLP/RNN/graph network whose widths in sight are all at
    most 128, as an RL agent's with its input width taken from the environment, or as
    passed to the file's own model class: `Net(7, 16, 2)`, or a transformer of the
    project given a width of at most 128 and at most 6 layers; an RL agent's MLP whose widths
    its caller passes is unknown, as for EC507, and so is an agent whose training loop
    steps its environment before each update; a graph network of message-passing
    layers is unknown too, whatever its width: its gathers and scatters over the edges,
    not its matmuls, bound it);
    a convolutional backbone feeding RNN cells or transformer layers is judged by those.
    A model loaded quantized (`load_in_8bit=True`, a `BitsAndBytesConfig`) is judged as
    for EC507: its int8 or 16-bit kernels pass, a compute dtype not settled is unknown.
    A model built out of sight whose kind nothing names is unknown. When mixed precision
    is left to a launcher or a flag and off by default (`accelerate launch`, `--amp`),
    the default run is float32: the finding says so, since TF32 costs nothing when
    autocast is on. Behind a command-line option off by default (`allow_tf32 =
    args.allow_tf32` with `--allow_tf32` a `store_true` flag; Hugging Face
    `TrainingArguments` parsed from the command line by `HfArgumentParser`, whose `--tf32`
    is there as `--bf16` is for EC507), the script offers TF32 and choosing it is a
    setting of the run: no finding, and the rule's reason says TF32 is off unless the
    option is passed.

    **Best practice.** `torch.set_float32_matmul_precision("high")` at start-up.
    """
    found = _files_on_capable_gpus(facts, (8, 0), "TF32", _torch)
    if isinstance(found, Outcome):
        return found
    files, unknown, cap = found
    hits: list[Hit] = []
    behind_flags: list[str] = []
    projections: list[str] = []  # vocabulary projections beside cuDNN RNNs, by file
    for f in files:
        if f.get("autocast") or f.get("tf32") is True:
            continue
        option = f.get("tf32_option")
        if option:
            # the script offers TF32: choosing it is a setting of the run, as `--bf16` is
            behind_flags.append(
                f"{f.get('path')}: TF32 is there behind {option}, off by default: TF32 is "
                f"off unless {option} is passed (pass it on Ampere or newer GPUs)"
            )
            continue
        quantized = _quantized(f, "TF32")
        if quantized:
            (behind_flags if quantized[0] else unknown).append(f"{f.get('path')}: {quantized[1]}")
            continue
        if (f.get("conv_layers") or f.get("cudnn_rnns")) and not _matmul_bound(f):
            unread = f.get("rnn_unread_linears")
            if unread and not f.get("conv_layers"):
                # a head or a vocabulary's projection: the source does not tell
                unknown.append(f"{f.get('path')}: {RNN_UNREAD.format(layers=', '.join(unread))}")
            # convolutions or cuDNN RNNs (with Linear heads): cuDNN already allows TF32
            continue
        if f.get("toy_model"):
            continue  # a small MLP/RNN: TF32 buys nothing
        if f.get("caller_widths"):
            unknown.append(f"{f.get('path')}: {RL_CALLER_WIDTHS}")
            continue
        if f.get("env_rollouts"):
            at = f.get("env_rollouts")
            unknown.append(f"{f.get('path')}: {RL_ROLLOUTS.format(at=at, what='TF32')}")
            continue
        if f.get("graph_network"):
            layers = ", ".join(f["graph_network"])
            unknown.append(f"{f.get('path')}: {GRAPH_NETWORK.format(layers=layers, what='TF32')}")
            continue
        if _out_of_sight(f):
            unknown.append(f"{f.get('path')}: {OUT_OF_SIGHT}")
            continue
        gate = f.get("amp_gate")
        if isinstance(gate, dict) and gate.get("default") is None:
            how = (
                f"is set outside the source: {gate.get('text')}"
                if gate.get("outside")
                else f"depends on `{gate.get('text')}`"
            )
            unknown.append(f"{f.get('path')}: whether it trains in float32 {how}")
            continue
        hits.append(_file_hit(f, cap=cap, unless=_unless(gate)))
        if f.get("rnn_projections") and not f.get("conv_layers"):
            projections.append(f"{f.get('path')}: {', '.join(f['rnn_projections'])}")
    clean = "TF32 or autocast in every matmul-heavy GPU training script (convolutions and "
    clean += "cuDNN RNNs already use TF32: torch.backends.cudnn.allow_tf32 defaults to True)"
    reason = f"{len(hits)} file(s)"
    if projections and hits:
        reason += f" ({RNN_PROJECTION.format(layers='; '.join(projections))})"
    return _judged(hits, unknown, reason, "; ".join(behind_flags) or clean)


# Layers that are only a convolutional model's head; anything else among the matmul
# layers (recurrent, attention, transformer blocks, a named transformer) dominates.
HEAD_LAYERS = {"Linear", "linear", "Bilinear"}


# A Linear beside cuDNN RNNs onto a vocabulary: cuBLAS matmuls at every time step.
RNN_PROJECTION = (
    "the cuDNN RNNs run in TF32 already, but not the projection onto the vocabulary "
    "beside them, a cuBLAS matmul at every time step: {layers}"
)
RNN_UNREAD = (
    "the output width of {layers} beside the cuDNN RNNs (which run in TF32 already) is not "
    "in sight: a small head leaves TF32 matmuls little to buy, a projection onto a "
    "vocabulary much"
)


def _matmul_bound(file_facts: dict[str, Any]) -> bool:
    """Matmul-heavy layers beside the convolutions or cuDNN RNNs (a ResNet backbone
    feeding a transformer, an LSTM beside attention, RNN cells): their matmuls do not get
    cuDNN's TF32. A project class that is one nn.Linear (a linear embedding of a CNN's
    features) is a head too; `nn.LSTM`, `nn.GRU` and `nn.RNN` run in cuDNN, under
    its TF32 switch, as convolutions do, unless the file's own attention of Linear
    layers (Bahdanau's `class Attention`, scoring every source position at each
    decoder step) runs beside them, or, with no convolutions, a Linear projecting onto
    a vocabulary (projections.py: `nn.Linear(nhid, ntoken)`, a seq2seq decoder's
    `nn.Linear(hid_dim, output_dim)`), as much work as the RNNs."""
    rnns = set(file_facts.get("cudnn_rnns") or [])
    if rnns and file_facts.get("attention_classes"):
        return True
    if file_facts.get("rnn_projections") and not file_facts.get("conv_layers"):
        return True  # a projection onto a vocabulary, wider than any head
    heads = HEAD_LAYERS | set(file_facts.get("linear_models") or []) | rnns
    return bool(set(file_facts.get("matmul_layers") or []) - heads)


def _unless(gate: Any) -> str:
    """Where mixed precision can still be turned on, for a float32 default run."""
    if not isinstance(gate, dict):
        return ""
    if gate.get("option"):
        return f" (unless {gate['option']} is passed)"
    if gate.get("framework_default"):
        return f": {gate.get('text')}"
    return f" (unless {gate.get('text')} turns mixed precision on)"


TF_MIXED_PRECISION = "https://www.tensorflow.org/guide/mixed_precision"
# A model whose body is a TF-Hub SavedModel: a Keras policy casts only the Keras layers.
UNSIZED = (
    "its Keras layers are RNN, Conv1D or attention (and Dense) layers whose every width "
    "the source hides (a config's values): whether the model is a toy that gains nothing "
    "on tensor cores, the source does not say"
)
HUB_BODY = (
    "the model's body is a TF-Hub SavedModel (hub.KerasLayer): a mixed-precision policy "
    "leaves its restored float32 graph as it is (https://github.com/tensorflow/hub/issues/"
    "466), so only rebuilding the model from its source would put it on the tensor cores"
)


def _rl_policy_unseen(file_facts: dict[str, Any]) -> bool:
    """A reinforcement-learning agent (on Gym or an RL library) whose network no Keras
    layer in sight shows (a model known by name only): as for EC507, RL policies are
    often too small to gain, so whether they would is not known."""
    return bool(
        file_facts.get("rl_environment")
        and not file_facts.get("keras_layers")
        and not file_facts.get("conv_layers")
        and not file_facts.get("project_keras_model")
    )


def _feature_model(file_facts: dict[str, Any]) -> bool:
    """The file's model is a project model handed its tabular features' schema
    (`DeepFM(feature_columns=feature_columns)`: a CTR/recommender model, bound by its
    embedding gathers), with no Keras layer of its own in sight."""
    project = file_facts.get("project_keras_model") or {}
    return bool(project.get("feature_schema")) and not (
        file_facts.get("keras_layers") or file_facts.get("conv_layers")
    )


def _keras_training(file_facts: dict[str, Any]) -> bool:
    """Keras `fit` on a model with real compute: Keras layers in sight, a model of the
    project whose name says its architecture (`YoloV3(...)`, `create_yolov3_model()`), or
    one the file builds with a function of its own package and compiles or fits."""
    # a toy of Keras layers in sight (Dense, or LSTM/Conv1D/attention of small widths) is
    # the model: the names precision.py reads (`LSTM`, `Conv1D`) are those same layers
    toy = file_facts.get("keras_layers") and file_facts.get("keras_toy")
    sized = set(file_facts.get("keras_sized") or []) if toy else set()
    named = set(file_facts.get("matmul_layers") or []) - sized  # a transformer by name
    model = (
        (file_facts.get("keras_layers") and not file_facts.get("keras_toy"))
        or (file_facts.get("conv_layers") and "Conv1D" not in sized)
        or (named and not file_facts.get("toy_model"))
        or file_facts.get("project_keras_model")
    )
    return _keras_trains(file_facts) and bool(model)


def _known_model(file_facts: dict[str, Any]) -> bool:
    """A convolution, a named architecture or a project model beside the file's layers."""
    return bool(
        file_facts.get("conv_layers")
        or set(file_facts.get("matmul_layers") or []) - set(file_facts.get("keras_sized") or [])
        or file_facts.get("project_keras_model")
    )


def _keras_trains(file_facts: dict[str, Any]) -> bool:
    """Keras `fit` or a custom loop, not a TF1 graph whose train op a session runs
    (`sess.run(train_op)`): no Keras policy casts that graph."""
    loop = file_facts.get("tf_custom_loop")
    return bool(file_facts.get("keras_fit") or (loop and not loop.get("session")))


@check(
    id="EC522",
    name="keras-no-mixed-precision",
    severity=Severity.MEDIUM,
    category="scripts",
    summary="A Keras model trains in float32 on a tensor-core GPU (no mixed-precision policy)",
    message="{where}: `{code}` — {path} builds convolution/dense layers and trains them with "
    "Keras in {dtype}: no mixed_float16/mixed_bfloat16 policy is set, and the GPUs here "
    "(compute capability {cap}) have tensor cores",
    fix="keras.mixed_precision.set_global_policy('mixed_float16')   # before building the "
    "model; keep the last activation in float32: layers.Activation('softmax', "
    "dtype='float32')",
    evidence=(
        TF_MIXED_PRECISION + " ('Using this API can improve performance by more than 3 times "
        "on modern GPUs'; 'Among NVIDIA GPUs, those with compute capability 7.0 or higher "
        "will see the greatest performance benefit from mixed precision because they have "
        "special hardware units, called Tensor Cores')",
        "https://keras.io/api/mixed_precision/ (keras.mixed_precision.set_global_policy)",
    ),
    impact=Impact(
        3.0,
        Basis.ESTIMATED,
        "TensorFlow mixed precision guide: 'can improve performance by more than 3 times on "
        "modern GPUs' -- a best case; models limited by their input pipeline gain less",
    ),
)
def keras_no_mixed_precision(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A script that builds Keras convolution, dense, recurrent or
    attention layers (or a `keras.applications` model, also one picked by name with
    `getattr(keras.applications, args.model)`, a model of the project whose
    name says its architecture, such as `YoloV3(...)`, or one built by a function of the
    file's own package, `from .model import build_model`, and compiled or fitted here,
    or of its project's package imported absolutely, `from modules.models import
    ArcFaceModel`, and compiled here or fitted with Keras' own keywords, `epochs=`,
    `callbacks=`; also one picked by name from a dict of such builders, `{"ResNet20":
    resnet.resnet20}`)
    and trains them with `fit` (also one picked by a version test, `fit = model.
    fit_generator if IS_TF_1 else model.fit`, with Keras imported or taken from a loader:
    csbdeep's `keras = keras_import()`; or `train_on_batch`, the Keras GAN pattern), a library
    trainer that calls it (TF-GNN's `runner.KerasTrainer`, whose
    `KerasTrainerOptions(policy=...)` sets the policy) or a custom loop (`tf.GradientTape`
    and `optimizer.apply_gradients`, where the policy applies the same way; the model
    may be a class of a project module the script imports, judged by its `Conv2D`
    layers there, also picked from a dict of such builders: simclr's `encoders[args.
    encoder]()`), without a
    mixed-precision policy, on GPUs of compute capability 7.0 or newer. Keras computes in
    float32 by default, so the tensor cores
    that run float16/bfloat16 matmuls and convolutions sit unused; the TensorFlow mixed
    precision guide quotes more than 3x on modern GPUs (a best case: models bound by
    their input pipeline or memory gain less).

    A toy model, whose only compute layers are `Dense`, `LSTM`/`GRU`, `Conv1D` or
    `MultiHeadAttention` of at most 128 units (filters, heads x key_dim), as for
    PyTorch's EC508 (the Iris classifier's `Dense(10)` -> `Dense(3)`; an RL agent's
    `Dense(32)` -> `Dense(16)` -> `Dense(action_dim)`, whose last width comes from the
    environment; an `LSTM(32)` -> `Dense(1)` forecaster on a short series), gives the
    tensor cores nothing to do and is not flagged (2-D and 3-D convolutions are never a
    toy's); one of such RNN, `Conv1D` or attention layers (with `Dense`) whose every width
    the source hides (`LSTM(self.config.layers[0])`, telemanom's widths in its YAML) is
    unknown: toy or not, the source does not say; a reinforcement-learning agent (on Gym
    or an RL library) whose network no
    Keras layer in sight shows is unknown, as for EC507, and so is a graph network
    (TF-GNN or tf2-gnn message passing: `GNN(params)`, with at most `Dense` heads beside
    it), bound by gathers and scatters over the edges; nor is a
    custom loop over raw TensorFlow ops (`tf.nn.conv2d`, `tf.matmul` on the script's own
    `tf.Variable`s), which a Keras policy, casting only Keras layers, leaves in float32,
    nor a TF1 graph whose train op a session runs (`train_op = opt.apply_gradients(...)`,
    then `sess.run(train_op)`: a `tf.contrib.slim` YOLOv3), which no Keras policy casts.
    A model whose body is a TF-Hub SavedModel (`hub.KerasLayer(...)` under a `Dense`
    head) is unknown: the policy leaves the restored float32 graph as it is
    (tensorflow/hub#466). A file whose only Keras layer is one `Dense` head of a width
    the source does not show (a linear probe's `Dense(num_classes)`, a DQN's dueling
    `Dense(nb_action + 1)` on the model it is handed; or two such heads beside an output
    kept in float32, `dtype="float32"`, as a library trainer adds to the backbone it is
    handed for a policy its caller sets) trains the caller's model, out of sight: it is
    not judged. A policy the source sets to a value it does not show makes
    the rule unknown for that file; `keras.backend.set_floatx("float64")` is named in
    the finding, and `set_floatx("float16")` already runs on the tensor cores. Files of
    one run linked by an import
    (`train.py` sets the policy and calls `train_lib.run()`; `main.py` trains
    `from nets import Generator`) share it: a policy set in one counts for the other,
    and a model whose layers are built in the imported file counts as built in sight.
    Mixed precision counts when set with
    `mixed_precision.set_global_policy` (the policy positional or `policy=`; or the
    older `experimental.set_policy`, or Keras 3's `keras.config.set_dtype_policy`), a
    layer's `dtype="mixed_float16"`, or TF 1.x's `enable_mixed_precision_graph_rewrite`.

    **Best practice.** `keras.mixed_precision.set_global_policy("mixed_float16")` before
    building the model (`"mixed_bfloat16"` on Ampere and newer), with the model's last
    activation in float32 (`layers.Activation("softmax", dtype="float32")`); `fit`
    applies loss scaling itself.
    """
    section = scripts_section(facts)
    run = (section.get("file_facts") or []) if not isinstance(section, Outcome) else []

    def training(file_facts: dict[str, Any]) -> bool:
        if _keras_training(file_facts):
            return True
        # the model class comes from a file of the run it imports (`from nets import
        # Generator`), which builds the Keras layers
        return _keras_trains(file_facts) and any(
            g.get("keras_layers") and not g.get("keras_toy") for g in linked_files(file_facts, run)
        )

    found = _files_on_capable_gpus(
        facts, (7, 0), "tensor cores", training, "no Keras training script"
    )
    if isinstance(found, Outcome):
        return found
    files, _unknown, cap = found
    hits: list[Hit] = []
    unknown: list[str] = []
    for f in files:
        mixed = f.get("mixed_precision")
        if mixed is False:
            # the policy set by a file of the run that imports this one, or that it imports
            # (`train.py` sets it from a flag, then calls `train_lib.run()`)
            linked = [g.get("mixed_precision") for g in linked_files(f, run)]
            mixed = True if True in linked else (None if None in linked else False)
        hub = f.get("keras_hub")
        if not mixed and _rl_policy_unseen(f):
            unknown.append(f"{f.get('path')}: {RL_POLICY}")
        elif not mixed and f.get("graph_network"):
            layers = ", ".join(f["graph_network"])
            what = "a mixed-precision policy"
            unknown.append(f"{f.get('path')}: {GRAPH_NETWORK.format(layers=layers, what=what)}")
        elif mixed is None:
            unknown.append(f"{f.get('path')}: the dtype policy is set to a value the source hides")
        elif not mixed and _feature_model(f):
            at = f"{f['project_keras_model'].get('feature_schema')}= at line "
            at += str(f["project_keras_model"].get("line"))
            unknown.append(f"{f.get('path')}: {FEATURE_TABLES.format(at=at)}")
        elif not mixed and hub:
            unknown.append(f"{f.get('path')}:{hub.get('line')}: {HUB_BODY}")
        elif not mixed and f.get("keras_unsized") and not _known_model(f):
            unknown.append(f"{f.get('path')}: {UNSIZED}")
        elif not mixed:
            fit: dict[str, Any] = f.get("keras_fit") or f.get("tf_custom_loop") or {}
            path = str(f.get("path"))
            hits.append(
                Hit(
                    values={
                        "path": path,
                        "where": f"{path}:{fit.get('line')}",
                        "code": fit.get("code"),
                        "cap": cap,
                        "dtype": f.get("keras_floatx") or "float32",
                    },
                    evidence={"facts": {"file": f}},
                    location=Location(path, fit.get("line"), fit.get("column"), fit.get("code")),
                )
            )
    if hits:
        dtypes = sorted({str(h.values.get("dtype")) for h in hits})
        return Outcome.failed(*hits, reason=f"{len(hits)} Keras script(s) in {'/'.join(dtypes)}")
    if unknown:
        return Outcome.unknown("; ".join(unknown))
    return Outcome.passed("every Keras training script sets a mixed-precision policy")
