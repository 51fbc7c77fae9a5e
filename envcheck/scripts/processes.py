"""How many training processes a script runs per node, read from the source.

Data-parallel training runs one process per GPU, and each process starts its own
DataLoader workers on the node's cores (issue 16): `num_workers=4` in an 8-GPU DDP
script is 32 workers. `read` returns the file fact `processes_per_node`, None for a
single process, else `{"count", "per_gpu", "how", "line"}`:

- `torch.multiprocessing.spawn(fn, nprocs=N)`: N when the source settles it, one per GPU
  when N comes from `torch.cuda.device_count()`;
- `torch.distributed.init_process_group`, `DistributedDataParallel`, a helper named
  `init_distributed_mode`, or the launcher's variables read from the environment
  (`LOCAL_WORLD_SIZE`, `LOCAL_RANK`): a launcher (torchrun) starts them, one per GPU;
  not in a file that builds an Accelerate `Accelerator`, where those reads are
  boilerplate and `accelerate launch` (out of the source) starts the processes;
- MPI: `mpi4py.MPI.COMM_WORLD` (ranks started by `mpiexec -n GPUS`), Horovod's
  `hvd.init()`, or a helper named `setup_dist` (guided-diffusion's `dist_util`, which
  reads the MPI rank): one rank per GPU, as with torchrun;
- a Lightning `Trainer`/`Fabric` with `devices` above 1 (that many), or -1 / "auto"
  with a GPU or automatic accelerator (one per GPU: Lightning's default on a GPU node);
  Lightning 1.x's `gpus=N` without `devices` says the same (`gpus=2`: 2 processes,
  `gpus=-1`: one per GPU, `gpus=[0, 1]` or `"0,1"`: one per GPU listed, `gpus=0`/`1`:
  none started).

Only what a default run does counts: a call under a condition the source settles as
false (`if args.multiprocessing_distributed:`, off by default) or does not settle at all
(`if args.distributed:`) may well run as one process, and is left out; but a test of
what a launcher sets (`if os.environ.get("SLURM_NTASKS") is not None:`, `elif
args.local_rank >= 0:` with --local_rank at -1) is taken by the launched run, the one the
script is written for: a launch in either branch counts.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Optional

from envcheck.scripts.assignments import main_guard
from envcheck.scripts.index import keyword_arg, module_nodes
from envcheck.scripts.values import Scope, resolve

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

SPAWN = {"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes"}
LAUNCHED = {
    "torch.distributed.init_process_group": "init_process_group",
    "torch.nn.parallel.DistributedDataParallel": "DistributedDataParallel",
}
# detr, dino, deit: torchrun's variables; guided-diffusion, improved-diffusion: MPI ranks
LAUNCHER_HELPERS = ("init_distributed_mode", "setup_dist")
MPI_WORLD = "mpi4py.MPI.COMM_WORLD"  # mpiexec -n GPUS: one rank per GPU
HOROVOD_INIT = {"horovod.torch.init", "horovod.tensorflow.init", "horovod.keras.init"}
LAUNCHER_VARIABLES = ("LOCAL_WORLD_SIZE", "LOCAL_RANK")
LIGHTNING_ROOTS = ("lightning.", "pytorch_lightning.", "lightning_fabric.")
PER_GPU = "one process per GPU"
# what launchers set, read in the `if` that chooses the distributed branch
LAUNCHER_ENVIRONMENT = ("LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")
LAUNCHER_PREFIXES = ("SLURM_", "OMPI_COMM_WORLD_")
# Words one of the calls above needs in the source (a cheap test before the walk).
WORDS = (
    "spawn",
    "start_processes",
    "init_process_group",
    "DistributedDataParallel",
    *LAUNCHER_HELPERS,
    *LAUNCHER_VARIABLES,
    "Trainer",
    "Fabric",
    "COMM_WORLD",
    "horovod",
)


def read(walker: Walker) -> Optional[dict[str, Any]]:
    """The file's processes per node (see the module docstring), or None for one."""
    if not any(word in line for line in walker.lines for word in WORDS):
        return None  # nothing that starts processes: skip the walk
    found: list[dict[str, Any]] = []
    _visit(walker, walker.module, walker.module_scope, found)
    if _accelerated(walker):
        # `os.environ.get("LOCAL_RANK", -1)` copied into an Accelerate script (diffusers'
        # examples): the processes are those `accelerate launch` starts, not in the source
        found = [f for f in found if not f.get("environment")]
    if not found:
        return None
    counted = [f for f in found if f["count"] is not None]
    chosen = counted[0] if counted else found[0]
    return {key: value for key, value in chosen.items() if key != "environment"}


def _visit(walker: Walker, node: ast.AST, scope: Scope, found: list[dict[str, Any]]) -> None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        scope = walker.scope_of(node)
    if isinstance(node, ast.If):
        # only the branch a default run takes: `if args.distributed:` the source does
        # not settle may well be a single process (the ImageNet example's default)
        if main_guard(node.test):
            taken_body: Optional[bool] = True  # the script is run, not imported
        elif _launcher_test(node.test):
            # `if os.environ.get("SLURM_NTASKS") is not None:`, `elif args.local_rank >=
            # 0:`: the launched run, the one the script is written for, takes one branch
            for statement in [*node.body, *node.orelse]:
                _visit(walker, statement, scope, found)
            return
        else:
            taken = resolve(node.test, scope)
            taken_body = bool(taken.value) if taken.known else None
        if taken_body is not None:
            for statement in node.body if taken_body else node.orelse:
                _visit(walker, statement, scope, found)
        return
    if isinstance(node, ast.Call):
        seen = _call(walker, node, scope)
        if seen is not None:
            found.append(seen)
    if isinstance(node, ast.Attribute) and walker.qualname(node) == MPI_WORLD:
        found.append(_entry(None, f"MPI.COMM_WORLD (mpiexec starts the ranks: {PER_GPU})", node))
        return
    if isinstance(node, ast.Constant) and node.value in LAUNCHER_VARIABLES:
        entry = _entry(None, f"reads {node.value} (set by torchrun: {PER_GPU})", node)
        found.append({**entry, "environment": True})
    for child in ast.iter_child_nodes(node):
        _visit(walker, child, scope, found)


def _accelerated(walker: Walker) -> bool:
    """The file builds an Accelerate `Accelerator`: it runs as one process, or as many as
    `accelerate launch` (or its config) starts, whatever launcher variables it reads."""
    return any(
        isinstance(node, ast.Call)
        and (walker.qualname(node.func) or "").startswith("accelerate.")
        and (walker.qualname(node.func) or "").endswith(".Accelerator")
        for node in module_nodes(walker.module)
    )


def _launcher_test(test: ast.expr) -> bool:
    """A test of what a launcher sets: its environment variables (`LOCAL_RANK`, `RANK`,
    `WORLD_SIZE`, Slurm's `SLURM_*`, Open MPI's `OMPI_COMM_WORLD_*`) or the `--local_rank`
    option `torch.distributed.launch` passes."""
    for node in ast.walk(test):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and (node.value in LAUNCHER_ENVIRONMENT or node.value.startswith(LAUNCHER_PREFIXES))
        ):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "local_rank":
            return True
    return False


def _entry(count: Optional[int], how: str, node: ast.AST) -> dict[str, Any]:
    return {
        "count": count,
        "per_gpu": count is None,
        "how": how,
        "line": getattr(node, "lineno", None),
    }


def _call(walker: Walker, node: ast.Call, scope: Scope) -> Optional[dict[str, Any]]:
    name = walker.qualname(node.func) or ""
    short = name.rsplit(".", 1)[-1]
    if name in SPAWN:
        nprocs = keyword_arg(node, "nprocs")
        if nprocs is None and len(node.args) >= 3:
            nprocs = node.args[2]
        if nprocs is None:
            return _entry(1, f"{short}() without nprocs (one process)", node)
        value = resolve(nprocs, scope)
        text = ast.unparse(nprocs)
        if value.known and isinstance(value.value, int) and value.value > 0:
            return _entry(value.value, f"{short}(nprocs={text})", node)
        return _entry(None, f"{short}(nprocs={text}): {PER_GPU}", node)
    if name in LAUNCHED:
        return _entry(None, f"{LAUNCHED[name]} (started by a launcher: {PER_GPU})", node)
    if name in HOROVOD_INIT:
        return _entry(None, f"{ast.unparse(node.func)}() (Horovod: {PER_GPU})", node)
    if short in LAUNCHER_HELPERS:
        return _entry(None, f"{short}() (started by a launcher: {PER_GPU})", node)
    if name.startswith(LIGHTNING_ROOTS) and short in ("Trainer", "Fabric"):
        return _lightning(node, short, scope)
    return None


def _lightning(node: ast.Call, short: str, scope: Scope) -> Optional[dict[str, Any]]:
    if any(k.arg is None for k in node.keywords):
        return None  # Trainer(**settings): devices not known from the source
    devices = keyword_arg(node, "devices")
    gpus = keyword_arg(node, "gpus")
    if devices is None and gpus is not None:
        return _lightning_gpus(node, short, gpus, scope)
    accelerator = keyword_arg(node, "accelerator")
    kind = resolve(accelerator, scope) if accelerator is not None else None
    if kind is not None and (not kind.known or str(kind.value).lower() == "cpu"):
        return None  # on the CPU, or not known to use the GPUs
    value = resolve(devices, scope) if devices is not None else None
    text = ast.unparse(devices) if devices is not None else "auto (the default)"
    if value is None or (value.known and value.value in (-1, "-1", "auto")):
        return _entry(None, f"{short}(devices={text}): {PER_GPU}", node)
    if value.known and isinstance(value.value, int) and value.value > 1:
        return _entry(value.value, f"{short}(devices={text})", node)
    return None


def _lightning_gpus(
    node: ast.Call, short: str, gpus: ast.expr, scope: Scope
) -> Optional[dict[str, Any]]:
    """Lightning 1.x's `Trainer(gpus=...)`: the GPUs it trains on, one process each (the
    default strategy on several GPUs is a data-parallel one); None for one GPU, the CPU,
    or a value the source does not settle."""
    text = f"{short}(gpus={ast.unparse(gpus)})"
    if isinstance(gpus, (ast.List, ast.Tuple)):
        count: Any = len(gpus.elts)
    else:
        value = resolve(gpus, scope)
        if not value.known:
            return None
        count = value.value
        if isinstance(count, str):
            if count.strip() == "-1":
                return _entry(None, f"{text}: {PER_GPU}", node)
            ids = [x for x in count.split(",") if x.strip()]
            count = len(ids) if "," in count else (int(count) if count.isdigit() else None)
    if count == -1:
        return _entry(None, f"{text}: {PER_GPU}", node)
    if isinstance(count, int) and not isinstance(count, bool) and count > 1:
        return _entry(count, text, node)
    return None
