"""The measuring agent's PyTorch part: DataLoader batches, the Dataset's own time in the
loader processes, host syncs, copies, forward/backward/optimizer, torch.save; injected
DataLoader settings and cudnn.benchmark for `envcheck fix`. Imported by
envcheck_measure_agent once `torch` is imported."""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
from types import FrameType
from typing import Any, Callable, Optional

import envcheck_measure_agent as core

FRAMEWORK_MODULES = ("torch", "lightning", "pytorch_lightning", "lightning_fabric", "keras")


def _caller_site() -> Optional[str]:
    """file:line of the first caller outside the frameworks and this agent."""
    frame: Optional[FrameType] = sys._getframe(2)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        top = module.split(".", 1)[0]
        if top not in FRAMEWORK_MODULES and module != __name__:
            return f"{os.path.abspath(frame.f_code.co_filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def _loader_settings(loader: Any) -> dict[str, Any]:
    import multiprocessing

    context = getattr(loader, "multiprocessing_context", None)
    method = None
    if context is not None:
        method = context.get_start_method() if hasattr(context, "get_start_method") else context
    elif getattr(loader, "num_workers", 0):
        method = multiprocessing.get_start_method(allow_none=True) or "fork"
    dataset = getattr(loader, "dataset", None)
    kind = type(dataset)
    return {
        "framework": "torch",
        "kind": "DataLoader",
        "num_workers": getattr(loader, "num_workers", None),
        "pin_memory": getattr(loader, "pin_memory", None),
        "prefetch_factor": getattr(loader, "prefetch_factor", None),
        "persistent_workers": getattr(loader, "persistent_workers", None),
        "batch_size": getattr(loader, "batch_size", None),
        "start_method": str(method) if method is not None else None,
        "dataset": f"{kind.__module__}.{kind.__qualname__}",
        "site": getattr(loader, "_envcheck_site", None),
        "overridden": getattr(loader, "_envcheck_overridden", None),
    }


def _override_loader(
    original: Callable[..., Any], agent: core.Agent, self: Any, args: Any, kwargs: Any
) -> tuple[Any, Any, Optional[list[str]]]:
    """Apply `overrides.loader` to a DataLoader built at the named site (or any)."""
    wanted = agent.overrides.get("loader")
    if not wanted:
        return args, kwargs, None
    site = agent.overrides.get("site")
    here = _caller_site()
    if site and here != site:
        return args, kwargs, None
    bound = inspect.signature(original).bind(self, *args, **kwargs)
    for key, value in wanted.items():
        bound.arguments[key] = value
    changed = [f"{k}={v!r}" for k, v in wanted.items()]
    return bound.args[1:], bound.kwargs, changed


def patch_torch(torch: Any) -> None:
    agent = core.current()
    agent.framework = agent.framework or "torch"
    from torch.utils.data import DataLoader, dataloader
    from torch.utils.data._utils import fetch

    init = DataLoader.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        site, changed = None, None
        try:
            site = _caller_site()
            args, kwargs, changed = _override_loader(init, agent, self, args, kwargs)
        except Exception as exc:
            agent.fail("DataLoader()", exc)
        init(self, *args, **kwargs)
        try:
            object.__setattr__(self, "_envcheck_site", site)
            object.__setattr__(self, "_envcheck_overridden", changed)
            if changed:
                agent.applied.extend(c for c in changed if c not in agent.applied)
        except Exception:
            pass

    DataLoader.__init__ = __init__

    base = dataloader._BaseDataLoaderIter

    def loader_key(iterator: Any) -> str:
        key = getattr(iterator, "_envcheck_key", None)
        if key is not None:
            return str(key)
        loader = getattr(iterator, "_envcheck_loader", None)
        if loader is None:
            return "torch"
        key = f"torch:{id(loader)}"
        if key not in agent.loaders:
            agent.loaders[key] = _loader_settings(loader)
        with contextlib.suppress(Exception):
            iterator._envcheck_key = key
        return key

    iter_init = base.__init__

    @functools.wraps(iter_init)
    def iter_init_wrapper(self: Any, loader: Any) -> None:
        iter_init(self, loader)
        with contextlib.suppress(Exception):
            self._envcheck_loader = loader

    base.__init__ = iter_init_wrapper
    base.__next__ = core.batch_source(base.__next__, loader_key, lambda: True)

    for fetcher in (fetch._MapDatasetFetcher, fetch._IterableDatasetFetcher):
        fetcher.fetch = _timed_fetch(fetcher.fetch, torch)

    tensor = torch.Tensor
    raw_item = tensor.item  # the loss is read without counting as the user's sync
    for name in ("item", "tolist", "cpu", "numpy", "__float__", "__int__", "__bool__"):
        core.wrap(tensor, name, "host_sync")
    for name in ("__repr__", "__format__"):
        core.wrap(tensor, name, "host_sync")
    core.wrap(torch.cuda, "synchronize", "host_sync")
    _wrap_copy(tensor, "to")
    _wrap_copy(tensor, "cuda")
    core.wrap(torch, "save", "checkpoint")
    _wrap_backward(tensor, raw_item)
    _wrap_forward(torch.nn.Module)
    _wrap_optimizer(torch)
    if agent.overrides.get("cudnn_benchmark"):
        torch.backends.cudnn.benchmark = True
        agent.applied.append("torch.backends.cudnn.benchmark=True")


def _timed_fetch(original: Callable[..., Any], torch: Any) -> Callable[..., Any]:
    get_worker_info = torch.utils.data.get_worker_info

    @functools.wraps(original)
    def fetch(self: Any, possibly_batched_index: Any) -> Any:
        start = core.now()
        try:
            return original(self, possibly_batched_index)
        finally:
            agent: core.Agent = core.AGENT
            if not agent.broken:
                try:
                    agent.fetched(core.now() - start, get_worker_info() is not None)
                except Exception as exc:
                    agent.fail("timing the Dataset", exc)

    return fetch


def _wrap_copy(tensor: Any, name: str) -> None:
    original = getattr(tensor, name)

    @functools.wraps(original)
    def copy(self: Any, *args: Any, **kwargs: Any) -> Any:
        agent: core.Agent = core.AGENT
        entered = agent.enter("copy")
        moved = False
        try:
            result = original(self, *args, **kwargs)
            moved = getattr(result, "device", None) != getattr(self, "device", None)
            if moved and agent.device is None and "cuda" in str(result.device):
                agent.device = "cuda"
            return result
        finally:
            if entered:
                agent.leave("copy" if moved else "compute")

    setattr(tensor, name, copy)


def _wrap_backward(tensor: Any, raw_item: Callable[[Any], Any]) -> None:
    original = tensor.backward

    @functools.wraps(original)
    def backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        agent: core.Agent = core.AGENT
        if agent.loss_steps and self.numel() == 1:
            agent.record_loss(lambda: raw_item(self.detach().float()))
        entered = agent.enter("compute")
        if entered:
            agent.train = True
        try:
            return original(self, *args, **kwargs)
        finally:
            if entered:
                agent.leave()

    tensor.backward = backward


def _wrap_forward(module: Any) -> None:
    original = module.__call__

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        agent: core.Agent = core.AGENT
        if agent.depth_forward:
            return original(self, *args, **kwargs)
        entered = agent.enter("compute")
        agent.depth_forward = 1
        try:
            return original(self, *args, **kwargs)
        finally:
            agent.depth_forward = 0
            if entered:
                agent.leave()

    module.__call__ = __call__


def _wrap_optimizer(torch: Any) -> None:
    """Global optimizer-step hooks (torch >= 2.0) time every optimizer's step."""
    from torch.optim import optimizer

    agent = core.current()

    def pre(*_: Any) -> None:
        if agent.enter("compute"):
            agent.train = True

    def post(*_: Any) -> None:
        if agent.timing() and agent.stack and agent.stack[-1][0] == "compute":
            agent.leave()

    optimizer.register_optimizer_step_pre_hook(pre)
    optimizer.register_optimizer_step_post_hook(post)
