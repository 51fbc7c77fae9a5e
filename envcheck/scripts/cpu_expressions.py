"""Worker counts written in terms of the CPU count: `multiprocessing.cpu_count() // 2`,
`max(os.cpu_count() - 1, 1)`, or of the GPU count too: `os.cpu_count() //
torch.cuda.device_count()`.

The script audit runs away from the training node, so such a count has no value where it
is read; the resolver keeps it as an expression over `os.cpu_count()` (a string, known =
False), and the rules evaluate it with the target's logical CPUs (`--target`), where
`os.cpu_count()` will be called.
"""

from __future__ import annotations

import ast
from typing import Any, Optional

CPU_COUNT = "os.cpu_count()"
GPU_COUNT = "torch.cuda.device_count()"  # also the training machine's: its GPUs
SYMBOLS = (CPU_COUNT, GPU_COUNT)
SYMBOLIC = "depends on os.cpu_count()"
OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Div: "/"}


def symbolic(value: Any, known: bool) -> Optional[str]:
    """The expression over os.cpu_count() a resolved value stands for, a number's text,
    or None when it is neither."""
    if known and value == CPU_COUNT:
        return CPU_COUNT
    if known and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not known and isinstance(value, str) and any(x in value for x in SYMBOLS):
        return value
    return None


def combine_binop(op: ast.operator, left: Optional[str], right: Optional[str]) -> Optional[str]:
    """`left op right` when one side depends on the CPU count and both are expressible."""
    sign = OPERATORS.get(type(op))
    if sign is None or left is None or right is None:
        return None
    if not any(x in left or x in right for x in SYMBOLS):
        return None
    return f"({left} {sign} {right})"


def combine_call(name: str, args: list[Optional[str]]) -> Optional[str]:
    """`max(...)`, `min(...)`, `int(...)` over expressible arguments, one depending on the
    CPU count."""
    if name not in ("max", "min", "int") or not args or any(a is None for a in args):
        return None
    texts = [a for a in args if a is not None]
    if not any(x in a for a in texts for x in SYMBOLS):
        return None
    return f"{name}({', '.join(texts)})"


def evaluate(expression: str, cpus: int, gpus: Optional[int] = None) -> Optional[int]:
    """The expression's value when os.cpu_count() returns `cpus` (and
    torch.cuda.device_count() `gpus`); None if it is not one this module wrote, or it
    counts GPUs and `gpus` is not known."""
    if GPU_COUNT in expression:
        if gpus is None:
            return None
        expression = expression.replace(GPU_COUNT, str(gpus))
    try:
        tree = ast.parse(expression.replace(CPU_COUNT, str(cpus)), mode="eval")
    except SyntaxError:
        return None
    value = _value(tree.body)
    # `os.cpu_count() / 2` left a float: DataLoader takes ints only (`int(...)` around it)
    return value if isinstance(value, int) else None


def _value(node: ast.expr) -> Optional[float]:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        left, right = _value(node.left), _value(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if isinstance(node.op, ast.Div):
            return left / right if right else None
        return left // right if right else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        values = [_value(a) for a in node.args]
        if not values or any(v is None for v in values):
            return None
        numbers = [v for v in values if v is not None]
        if node.func.id == "max":
            return max(numbers)
        if node.func.id == "min":
            return min(numbers)
        if node.func.id == "int" and len(numbers) == 1:
            return int(numbers[0])
    return None
