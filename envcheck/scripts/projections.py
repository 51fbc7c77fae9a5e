"""The output width of a Linear layer beside recurrent layers: a head, or a projection.

cuDNN runs `nn.LSTM`, `nn.GRU` and `nn.RNN` in TF32 by default (EC508), so a recurrent
model whose Linear layers are heads (a CRNN's 37 characters, a classifier's 10 classes)
has little for TF32 matmuls to buy. A sequence model's output projection onto its
vocabulary is another matter: `nn.Linear(hid_dim, output_dim)` with `output_dim =
len(TRG.vocab)`, a word LM's `nn.Linear(nhid, ntoken)` over 33k words, runs in cuBLAS at
every time step and is about half the model's compute (awd-lstm-lm on WikiText-2: 3 LSTM
layers of about 20 M MACs per token, the 400 x 33,278 decoder about 13 M).

`output_width` reads the width as the source writes it, following a parameter to what
the file's calls pass and a variable to what it is assigned: "projection" for a width
above HEAD_WIDTH, or one named for a vocabulary (`ntoken`, `vocab_size`, `output_dim`,
`len(TRG.vocab)`) that the source does not settle; "head" for a width settled at most
HEAD_WIDTH (`nclass = len(alphabet) + 1` with a literal alphabet), or one named for a
class count (`num_classes`, `nclass`): plainly a classifier's head; None when nothing
tells (`nn.Linear(hidden, out)` with `out` from the data).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Optional

from envcheck.scripts.parameters import passed_expression
from envcheck.scripts.widths import width

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker

# Above this many outputs a Linear beside an RNN is a projection, not a head.
HEAD_WIDTH = 1024
# A vocabulary's size (`ntoken`, `n_tokens`, `vocab_size`, `n_vocab`, `trg_vocab_size`,
# `num_words`, a seq2seq decoder's `output_dim`), or the size of one (`len(TRG.vocab)`,
# `len(corpus.dictionary)`, `len(itos)`).
VOCAB_NAME = re.compile(
    r"vocab|^(n|num)_?(tokens?|words?)$|^(output|out|trg|tgt)_dim$|dictionary|itos|word2idx",
    re.IGNORECASE,
)
# A classifier's class count (`num_classes`, `nclass`, `n_labels`, `num_categories`).
CLASS_NAME = re.compile(r"^(n|num)_?(class(es)?|labels?|categories|tags)$", re.IGNORECASE)
MAX_DEPTH = 4


def output_width(
    walker: Walker, layer: ast.Call, function: Optional[ast.AST]
) -> tuple[Optional[str], str]:
    """Whether the Linear `layer` (built inside `function`) is a "projection" or a "head"
    (None: not known), with how the source writes its width."""
    written = layer.args[1] if len(layer.args) > 1 else None
    written = next((k.value for k in layer.keywords if k.arg == "out_features"), written)
    if written is None:
        return None, ast.unparse(layer)
    return _kind(walker, written, function, 0), ast.unparse(layer)


def _kind(walker: Walker, expr: ast.expr, function: Optional[ast.AST], depth: int) -> Optional[str]:
    size = width(walker, expr, function)
    if size is not None:
        return "projection" if size > HEAD_WIDTH else "head"
    if depth > MAX_DEPTH:
        return None
    followed: Optional[str] = None
    if isinstance(expr, ast.Name):
        passed = passed_expression(walker, function, expr.id)
        if passed is not None:
            followed = _kind(walker, passed[0], passed[1], depth + 1)
        else:
            assigned = walker.scope_of(function).lookup(expr.id)
            if assigned is not None and assigned is not expr:
                followed = _kind(walker, assigned, function, depth + 1)
    elif isinstance(expr, ast.BinOp):  # `len(vocab) + 1`
        followed = _kind(walker, expr.left, function, depth + 1)
    elif (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == "len"
        and len(expr.args) == 1
    ):
        followed = _named(ast.unparse(expr.args[0]))
    return followed or _named(_last_name(expr))


def written_kind(expr: ast.expr, constants: dict[str, ast.Constant]) -> Optional[str]:
    """The same judgement of a width read as another file writes it, with no run to
    follow it through: a literal or one of `constants` (the module's `hidden = 256`), a
    name for a vocabulary or a class count, `len(vocab) + 1`."""
    if isinstance(expr, ast.Name) and expr.id in constants:
        expr = constants[expr.id]
    if isinstance(expr, ast.Constant):
        value = expr.value
        if isinstance(value, int) and not isinstance(value, bool):
            return "projection" if value > HEAD_WIDTH else "head"
        return None
    if isinstance(expr, ast.BinOp):
        return written_kind(expr.left, constants)
    if isinstance(expr, ast.Call) and ast.unparse(expr.func) == "len" and len(expr.args) == 1:
        return _named(ast.unparse(expr.args[0]))
    return _named(_last_name(expr))


def _named(text: str) -> Optional[str]:
    if VOCAB_NAME.search(text):
        return "projection"
    if CLASS_NAME.search(text.rsplit(".", 1)[-1]):
        return "head"
    return None


def _last_name(expr: ast.expr) -> str:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return ""
