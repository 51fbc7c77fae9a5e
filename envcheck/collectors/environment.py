"""Environment variables that change how training runs, from an allowlist.

Only names known to matter are recorded, never the whole environment: a snapshot is
meant to be shared, and environments hold secrets.
"""

from __future__ import annotations

from typing import Any

from envcheck.collectors.base import CollectContext

RELEVANT_VARIABLES = (
    # thread pools: OpenMP, MKL, OpenBLAS, TensorFlow's own
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
    # GPU selection and libraries
    "CUDA_VISIBLE_DEVICES",
    "CUDA_HOME",
    "LD_LIBRARY_PATH",
    "PYTORCH_CUDA_ALLOC_CONF",
    "TF_FORCE_GPU_ALLOW_GROWTH",
    # Keras and TensorFlow behaviour
    "TF_USE_LEGACY_KERAS",
    "KERAS_BACKEND",
    "TF_CPP_MIN_LOG_LEVEL",
    # Theano
    "THEANO_FLAGS",
    "THEANORC",
)


def collect(ctx: CollectContext) -> dict[str, Any]:
    return {"environment": {n: ctx.environ[n] for n in RELEVANT_VARIABLES if n in ctx.environ}}
