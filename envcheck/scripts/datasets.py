"""Datasets of a file that serve samples from memory.

`class PTBDataset(Dataset)` whose `__getitem__` returns `self.centers[index]`: the data
was loaded (and tokenised or decoded) up front, and a sample is a slice of it, so a
DataLoader over it has nothing to read or decode; worker processes and pinned memory buy
little there (EC501/EC502, as for a TensorDataset). A `__getitem__` that calls anything
beyond indexing and cheap conversions (`self.transform(...)`, `Image.open`, a crop
function) is not in memory by this reading, nor is a class that memory-maps or opens a
store (`np.memmap`, `h5py.File`, lmdb, zarr), whose indexing reads the disk.
"""

from __future__ import annotations

import ast
from typing import Optional

from envcheck.scripts.index import own_nodes

# calls a sample may make and still be a slice of memory: conversions, shape changes
CHEAP_METHODS = {
    "float",
    "long",
    "int",
    "double",
    "half",
    "bool",
    "byte",
    "unsqueeze",
    "squeeze",
    "view",
    "reshape",
    "flatten",
    "clone",
    "contiguous",
    "permute",
    "transpose",
    "astype",
    "get",
    "item",  # a number out of a CPU tensor the dataset holds
    "tolist",
    "numpy",
}
CHEAP_FUNCTIONS = {
    "int",
    "float",
    "len",
    "tuple",
    "list",
    "dict",
    "min",
    "max",
    "range",
    "slice",
    "isinstance",
    "torch.tensor",
    "torch.as_tensor",
    "torch.from_numpy",
    "torch.LongTensor",
    "torch.FloatTensor",
    "np.asarray",
    "np.array",
    "numpy.asarray",
    "numpy.array",
}
# a class holding one of these reads the disk when indexed
LAZY_STORES = ("memmap", "mmap", "h5py", "lmdb", "zarr", "tables.open_file")


def in_memory(cls: ast.ClassDef) -> Optional[str]:
    """Why samples of `cls` come from memory ("__getitem__ only indexes self.centers"),
    or None."""
    getitem = next(
        (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__getitem__"),
        None,
    )
    if getitem is None:
        return None
    text = ast.unparse(cls)
    if any(word in text for word in LAZY_STORES):
        return None
    held: list[str] = []
    for node in own_nodes(getitem):
        if isinstance(node, (ast.With, ast.AsyncWith, ast.Await, ast.Yield, ast.YieldFrom)):
            return None
        if isinstance(node, ast.Call) and not _cheap(node):
            return None
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id == "self"
        ):
            held.append(f"self.{node.value.attr}")
    if not held:
        return None
    names = ", ".join(dict.fromkeys(held))
    return f"{cls.name}.__getitem__ only indexes data it holds ({names})"


def _cheap(call: ast.Call) -> bool:
    func = call.func
    if ast.unparse(func) in CHEAP_FUNCTIONS:
        return True
    return isinstance(func, ast.Attribute) and func.attr in CHEAP_METHODS
