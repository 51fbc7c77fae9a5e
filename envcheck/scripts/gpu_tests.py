"""Conditions a GPU run takes: the value resolver (values.py) reads
`4 if torch.cuda.is_available() else 0` and `{...} if use_cuda else {}` as the GPU run
gets them, since the rules that read those values judge GPU training."""

from __future__ import annotations

import ast

GPU_WORDS = ("cuda", "gpu", "accel")


def cuda_available(node: ast.expr) -> bool:
    """`torch.cuda.is_available()` itself."""
    return (
        isinstance(node, ast.Call)
        and not node.args
        and ast.unparse(node.func) == "torch.cuda.is_available"
    )


def gpu_test(test: ast.expr) -> bool:
    """A condition that holds on a GPU run: `use_cuda`, `args.cuda`,
    `torch.cuda.is_available()`, `use_accel` (not negated)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return False
    return any(word in ast.unparse(test).lower() for word in GPU_WORDS)


def gpu_count(node: ast.expr) -> bool:
    """`torch.cuda.device_count()`: the training machine's GPUs, kept symbolic."""
    return (
        isinstance(node, ast.Call)
        and not node.args
        and ast.unparse(node.func) == "torch.cuda.device_count"
    )
