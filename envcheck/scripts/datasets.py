"""Datasets of a file that serve samples from memory.

`class PTBDataset(Dataset)` whose `__getitem__` returns `self.centers[index]`: the data
was loaded (and tokenised or decoded) up front, and a sample is a slice of it, so a
DataLoader over it has nothing to read or decode; worker processes and pinned memory buy
little there (EC501/EC502, as for a TensorDataset). A `__getitem__` that calls anything
beyond indexing, cheap conversions and methods of its own class that do no more
(`self.transform(...)`, `Image.open`, a crop function) is not in memory by this
reading, nor is a class that memory-maps or opens a store (`np.memmap`, `h5py.File`,
lmdb, zarr), whose indexing reads the disk. A `__getitem__` memoised without bound
(`@functools.cache`, `@lru_cache(maxsize=None)`) keeps each sample in the training process
once it is built: later epochs read memory, and worker processes would each fill a copy
of the cache that dies with them at the end of every epoch, so no workers is the design.
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
    "size",  # `self.data.size(0)`: a shape, nothing read
    "numpy",
    "type",  # `.type(torch.int64)`: a dtype cast, like .long()
    # a sample moved to the GPU in __getitem__ (EC510's finding): still a slice of memory,
    # and workers or pinning would not help it (CUDA in forked workers fails)
    "to",
    "cuda",
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
    # a small fixed buffer the held sample is written into (char-encoded words, padding)
    "torch.zeros",
    "torch.ones",
    "torch.full",
    "torch.empty",
    "np.zeros",
    "np.ones",
    "np.full",
    "np.asarray",
    "np.array",
    "numpy.asarray",
    "numpy.array",
    # a random offset or item into the data held (x-transformers' enwik8 sampler:
    # `start = torch.randint(0, len - seq_len, (1,))`, then a slice)
    "torch.randint",
    "random.randint",
    "random.randrange",
    "random.choice",
    "np.random.randint",
    "np.random.choice",
    "numpy.random.randint",
    "numpy.random.choice",
}
# a class holding one of these reads the disk when indexed
LAZY_STORES = ("memmap", "mmap", "h5py", "lmdb", "zarr", "tables.open_file")

# Public dataset classes whose samples are slices of tensors they build up front.
# Lightning's demos (lightning/pytorch/demos, mirrored as pytorch_lightning.demos):
# WikiText2 tokenises the corpus into one int64 tensor and `__getitem__` slices it;
# RandomDataset and RandomDictDataset index `torch.randn(length, size)`.
WIKITEXT2 = "tokenised up front into one tensor of token ids that __getitem__ slices"
RANDOM = "one torch.randn(length, size) tensor that __getitem__ indexes"
LIBRARY_IN_MEMORY = {
    f"{root}{module}.{name}": why
    for root in ("lightning.pytorch.demos", "pytorch_lightning.demos")
    for module, name, why in (
        ("", "WikiText2", WIKITEXT2),
        (".transformer", "WikiText2", WIKITEXT2),
        (".boring_classes", "RandomDataset", RANDOM),
        (".boring_classes", "RandomDictDataset", RANDOM),
    )
}
# Lit-GPT / Lit-LLaMA's pretraining datasets (lit_gpt/packed_dataset.py): token ids
# tokenised up front into binary shards, memory-mapped, a block sliced per item; the
# CombinedDataset samples among such datasets. Nothing is decoded per item.
PACKED = "pre-tokenised token shards, memory-mapped, a block of token ids sliced per item"
LIBRARY_IN_MEMORY.update(
    {
        f"{root}.packed_dataset.{name}": PACKED
        for root in ("lit_gpt", "lit_llama")
        for name in ("PackedDataset", "CombinedDataset")
    }
)
# `DataLoader(range(n), collate_fn=...)`: the items are integers computed on access
LIBRARY_IN_MEMORY["range"] = "integer indices computed on access, nothing read per item"


def library_in_memory(qualname: str) -> Optional[str]:
    """Why the public dataset class `qualname` serves samples from memory, or None."""
    why = LIBRARY_IN_MEMORY.get(qualname)
    return f"{qualname.rsplit('.', 1)[-1]} is {why}" if why else None


def in_memory(cls: ast.ClassDef) -> Optional[str]:
    """Why samples of `cls` come from memory ("__getitem__ only indexes self.centers"),
    or None."""
    getitem = next(
        (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__getitem__"),
        None,
    )
    if getitem is None:
        return None
    cached = memoised(getitem)
    if cached is not None:
        return (
            f"{cls.name}.__getitem__ is memoised ({cached}): each sample stays in the training "
            "process after its first load, a cache worker processes would discard every epoch"
        )
    text = ast.unparse(cls)
    if any(word in text for word in LAZY_STORES):
        return None
    if not _cheap_body(cls, getitem, 0):
        return None
    held: list[str] = []
    for node in own_nodes(getitem):
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


UNBOUNDED_CACHES = {"cache", "functools.cache"}
BOUNDED_CACHES = {"lru_cache", "functools.lru_cache"}


def memoised(method: ast.FunctionDef) -> Optional[str]:
    """The decorator that memoises every result of `method` (`@functools.cache`,
    `@lru_cache(maxsize=None)`), as written, or None. A bounded `lru_cache` (128 entries
    by default) keeps only the latest samples of a dataset: most are built again."""
    for decorator in method.decorator_list:
        written = ast.unparse(decorator)
        if written in UNBOUNDED_CACHES:
            return f"@{written}"
        if isinstance(decorator, ast.Call) and ast.unparse(decorator.func) in BOUNDED_CACHES:
            size = next((k.value for k in decorator.keywords if k.arg == "maxsize"), None)
            size = decorator.args[0] if decorator.args else size
            if isinstance(size, ast.Constant) and size.value is None:
                return f"@{written}"
    return None


def _cheap_body(cls: ast.ClassDef, method: ast.FunctionDef, depth: int) -> bool:
    """`method` opens nothing and calls only cheap conversions, or methods of `cls` that
    do the same (makemore's `self.encode(word)`: a dict lookup per character)."""
    for node in own_nodes(method):
        if isinstance(node, (ast.With, ast.AsyncWith, ast.Await, ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(node, ast.Call) and not _cheap(node):
            helper = _own_method(cls, node) if depth < 2 else None
            if helper is None or not _cheap_body(cls, helper, depth + 1):
                return False
    return True


def _own_method(cls: ast.ClassDef, call: ast.Call) -> Optional[ast.FunctionDef]:
    """The method of `cls` that `self.name(...)` calls, or None."""
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
    ):
        return None
    return next(
        (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == func.attr),
        None,
    )


def _cheap(call: ast.Call) -> bool:
    func = call.func
    if ast.unparse(func) in CHEAP_FUNCTIONS:
        return True
    return isinstance(func, ast.Attribute) and func.attr in CHEAP_METHODS
