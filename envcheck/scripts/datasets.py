"""Datasets of a file that serve samples from memory.

`class PTBDataset(Dataset)` whose `__getitem__` returns `self.centers[index]`: the data
was loaded (and tokenised or decoded) up front, and a sample is a slice of it, so a
DataLoader over it has nothing to read or decode; worker processes and pinned memory buy
little there (EC501/EC502, as for a TensorDataset). A `__getitem__` that calls anything
beyond indexing, cheap conversions and methods of its own class that do no more
(`self.transform(...)`, `Image.open`, a crop function) is not in memory by this
reading, nor is a class that memory-maps or opens a store (`np.memmap`, `h5py.File`,
lmdb, zarr), whose indexing reads the disk. numpy's functions other than its file readers
(`np.random.shuffle(points)`, a random scale and shift: dgcnn's point-cloud augmentation)
count as cheap, and so do functions of the class's file that do no more. A `__getitem__`
memoised without bound (`@functools.cache`, `@lru_cache(maxsize=None)`) keeps each
sample in the training process once it is built: later epochs read memory, and worker
processes would each fill a copy of the cache that dies with them at the end of every
epoch, so no workers is the design.
A Dataset class out of sight handed one file that `torch.save` wrote (`.pt`, `.pth`) and
otherwise only numbers (GAIL's `ExpertDataset("trajs_halfcheetah.pt",
num_trajectories=4)`) holds tensors too: `torch.load` reads such a file whole, and there
is no directory or list of files left to read per sample.
"""

from __future__ import annotations

import ast
from typing import Optional

from envcheck.scripts.index import own_nodes
from envcheck.scripts.values import Scope, resolve

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
    "copy",
    "dot",  # a small rotation matrix applied to a point cloud held
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
# numpy's file readers and writers: every other numpy function computes on arrays in memory
# (`np.random.shuffle(points)`, `np.clip(sigma * np.random.randn(n, 3), -c, c)`: the light
# augmentation of a sample held), these read or write the disk
NUMPY_FILES = {
    "load",
    "loadtxt",
    "genfromtxt",
    "fromfile",
    "fromregex",
    "memmap",
    "open_memmap",
    "save",
    "savez",
    "savez_compressed",
    "savetxt",
    "tofile",
    "DataSource",
}
# the standard library's random draws (`random.shuffle(indices)`, `random.random() < 0.5`)
PYTHON_RANDOM = {
    "random.random",
    "random.uniform",
    "random.shuffle",
    "random.sample",
    "random.gauss",
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


def in_memory(
    cls: ast.ClassDef, module: Optional[ast.Module] = None, records: frozenset[str] = frozenset()
) -> Optional[str]:
    """Why samples of `cls` come from memory ("__getitem__ only indexes self.centers"),
    or None. `module`, the file defining `cls`, lends the functions of its top level
    that `__getitem__` may call (dgcnn's `translate_pointcloud(pointcloud)`: a numpy
    scale and shift of the sample held) when they do no more than it may. `records`:
    names of plain record classes (record_class) `__getitem__` may build from the slices
    (trlx's `ILQLElement(self.input_ids[ix], ...)`), which only hold what they are given."""
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
    helpers = _module_functions(module)
    if not _cheap_body(cls, getitem, 0, helpers, records):
        return None
    held: list[str] = []
    aliases = _aliases(getitem)
    for node in own_nodes(getitem):
        if not isinstance(node, ast.Subscript):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in aliases:
            held.extend(aliases[node.value.id])
        elif _self_attribute(node.value):
            held.append(ast.unparse(node.value))
    if not held:
        return None
    names = ", ".join(dict.fromkeys(held))
    return f"{cls.name}.__getitem__ only indexes data it holds ({names})"


def _self_attribute(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _aliases(method: ast.FunctionDef) -> dict[str, list[str]]:
    """Local names of `method` bound only to data the instance holds, with what they
    stand for: NCF's `features = self.features_fill if self.is_training else
    self.features_ps`, then `features[idx][0]`, indexes what the class holds as surely
    as `self.features_ps[idx]` does. A name bound anywhere to anything else (a call, a
    loop variable, a parameter) stands for none."""
    bindings: dict[str, int] = {}
    bound: dict[str, list[list[str]]] = {}
    for node in own_nodes(method):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bindings[node.id] = bindings.get(node.id, 0) + 1
        if isinstance(node, ast.Assign) and [type(t) for t in node.targets] == [ast.Name]:
            value = node.value
            choices = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
            if all(_self_attribute(c) for c in choices):
                name = node.targets[0].id  # type: ignore[attr-defined]
                bound.setdefault(name, []).append([ast.unparse(c) for c in choices])
    parameters = {a.arg for a in ast.walk(method.args) if isinstance(a, ast.arg)}
    return {
        name: [attribute for choice in stands for attribute in choice]
        for name, stands in bound.items()
        if bindings.get(name) == len(stands) and name not in parameters
    }


# what torch.save writes and torch.load reads back whole
TORCH_FILES = (".pt", ".pth")


def tensor_file(call: ast.Call, scope: Scope) -> Optional[str]:
    """Why the dataset `call` (of a class out of sight) serves a torch-saved file from
    memory ("ExpertDataset is handed one torch-saved file (trajs_{}.pt), read whole by
    torch.load"), or None: the callee is a class (CapWords), exactly one argument names
    a `.pt`/`.pth` file, every other one is a number, a flag or None."""
    name = ast.unparse(call.func).rsplit(".", 1)[-1]
    if not name[:1].isupper():
        # a function, not a class (`torch.load("train.pt")` itself): what it returns may
        # be any object torch.save pickled, a Dataset reading files per sample included
        return None
    if any(k.arg is None for k in call.keywords):
        return None  # `**options`: what else it is handed is not in sight
    files: list[str] = []
    for argument in [*call.args, *(k.value for k in call.keywords)]:
        named = _file_named(argument, scope, 0)
        if named is not None:
            files.append(named)
            continue
        value = resolve(argument, scope)
        if not value.known or not (value.value is None or isinstance(value.value, (int, float))):
            return None
    if len(files) != 1:
        return None
    return f"{name} is handed one torch-saved file ({files[0]}), read whole by torch.load"


def _file_named(node: ast.expr, scope: Scope, depth: int) -> Optional[str]:
    """The file name `node` ends with when it is a torch-saved one: a literal, an
    f-string, `"trajs_{}.pt".format(env)`, `"%s.pt" % env`, `dir + "x.pt"`,
    `os.path.join(dir, name)`, `Path(dir) / name`, or a name assigned one of those."""
    if depth > 4:
        return None
    tail: Optional[ast.expr] = None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if node.value.endswith(TORCH_FILES) else None
    if isinstance(node, ast.JoinedStr) and node.values:
        tail = node.values[-1]
    elif isinstance(node, ast.Name):
        tail = scope.lookup(node.id)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        tail = node.left
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
        tail = node.right
    elif isinstance(node, ast.Call) and node.args and ast.unparse(node.func) == "os.path.join":
        tail = node.args[-1]
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    ):
        tail = node.func.value
    if tail is None:
        return None
    return _file_named(tail, scope, depth + 1)


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


def _module_functions(module: Optional[ast.Module]) -> dict[str, ast.FunctionDef]:
    """The functions of `module`'s top level, by name; a name defined twice (or also bound
    another way there) is left out: which one runs is not settled."""
    if module is None:
        return {}
    counts: dict[str, int] = {}
    functions: dict[str, ast.FunctionDef] = {}
    for statement in module.body:
        names: list[str] = []
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [statement.name]
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom)):
            names = [n.id for n in ast.walk(statement) if isinstance(n, ast.Name)]
            names += [a.asname or a.name for a in getattr(statement, "names", [])]
        for name in names:
            counts[name] = counts.get(name, 0) + 1
        if isinstance(statement, ast.FunctionDef):
            functions[statement.name] = statement
    return {name: f for name, f in functions.items() if counts.get(name) == 1}


def _cheap_body(
    cls: ast.ClassDef,
    method: ast.FunctionDef,
    depth: int,
    helpers: Optional[dict[str, ast.FunctionDef]] = None,
    records: frozenset[str] = frozenset(),
) -> bool:
    """`method` opens nothing and calls only cheap conversions, or methods of `cls` (or
    functions of its file, `helpers`) that do the same (makemore's `self.encode(word)`: a
    dict lookup per character)."""
    helpers = helpers or {}
    for node in own_nodes(method):
        if isinstance(node, (ast.With, ast.AsyncWith, ast.Await, ast.Yield, ast.YieldFrom)):
            return False
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in records
        ):
            continue  # a record built from the slices: nothing computed
        if isinstance(node, ast.Call) and not _cheap(node):
            helper = _own_method(cls, node) if depth < 2 else None
            if helper is None and depth < 2 and isinstance(node.func, ast.Name):
                helper = helpers.get(node.func.id)
                if helper is not None and any(w in ast.unparse(helper) for w in LAZY_STORES):
                    return False
            if helper is None or not _cheap_body(cls, helper, depth + 1, helpers, records):
                return False
    return True


def record_class(cls: ast.ClassDef) -> bool:
    """A plain record class: a `@dataclass` or a `NamedTuple` declaring only fields, no
    method (no `__post_init__` computing anything): building one only keeps its
    arguments."""
    dataclass = any(
        ast.unparse(d.func if isinstance(d, ast.Call) else d).rpartition(".")[2] == "dataclass"
        for d in cls.decorator_list
    )
    named = any(ast.unparse(b).rpartition(".")[2] == "NamedTuple" for b in cls.bases)
    fields_only = all(
        isinstance(s, (ast.AnnAssign, ast.Pass))
        or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        for s in cls.body
    )
    return (dataclass or named) and fields_only


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
    written = ast.unparse(func)
    if written in CHEAP_FUNCTIONS or written in PYTHON_RANDOM:
        return True
    root, _, rest = written.partition(".")
    if root in ("np", "numpy") and rest and rest.rsplit(".", 1)[-1] not in NUMPY_FILES:
        return True  # numpy computing on arrays in memory, a random draw included
    return isinstance(func, ast.Attribute) and func.attr in CHEAP_METHODS
