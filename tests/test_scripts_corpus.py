"""Every script in tests/scripts_corpus/ through the real collector and every EC5xx rule,
judged against one declared training machine (16 usable CPUs of 64, one A100, Linux): each
file must give exactly the findings listed, by rule and line (file-level findings sit at
the file's first training line). A finding that appears or
disappears is a regression (or a fix: then update the list, with the reason).

The files are written here to show shapes of real public training code (reference
trainers, beginner examples, Accelerate and Lightning code, tf.data in TF1 style)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TESTS, snapshot_from

from envcheck import interpreter
from envcheck.collectors import scripts
from envcheck.collectors.base import CollectContext
from envcheck.engine.evaluate import evaluate
from envcheck.rulebook import builtin_registry
from envcheck.snapshot import Facts

CORPUS = TESTS / "scripts_corpus"
TARGET = {
    "cpu": {"usable": 16, "logical": 64},  # a container on a 64-CPU host
    "platform": {"system": "Linux"},
    "gpu": {
        "status": "ok",
        "devices": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}],
    },
}
EXPECTED: dict[str, list[tuple[str, int]]] = {
    # Accelerate places the model on the GPU; both loaders lack workers and pinned
    # memory; Accelerator() keeps Accelerate's default mixed_precision 'no', so BERT
    # trains in float32 (EC507) without TF32 matmuls (EC508), as Fabric() would
    "accelerate_text_classifier.py": [
        ("EC501", 13),
        ("EC501", 14),
        ("EC502", 13),
        ("EC502", 14),
        ("EC507", 27),
        ("EC508", 27),
    ],
    "keras2_generator_workers.py": [("EC521", 71), ("EC522", 71)],
    # fit_generator and workers= passed to fit: Keras 2 code, so the generators read by
    # one worker (lines 27, 28) are judged although the target's Keras is not known
    "keras2_imagedatagenerator_fit_generator.py": [
        ("EC516", 27),
        ("EC517", 27),
        ("EC517", 28),
        ("EC518", 24),  # its flow_from_dataframe (26) is the same generator
    ],
    "keras_custom_layer_numpy.py": [("EC519", 14)],
    # a data module alone: the target has a GPU, so its worker counts are judged, while
    # pinning (EC502) is unknown: the importer decides whether, and how, batches reach a GPU;
    # no training code, so no file-level precision findings; device_count() is no GPU use
    "lightning_datamodule.py": [("EC501", 22), ("EC503", 25)],
    "lightning_module.py": [("EC501", 13), ("EC507", 15), ("EC508", 15)],
    # compat.v1 alias followed; the factory's pipeline is prefetched by its caller (line
    # 30), the other prefetches before batch (line 25)
    "tf_compat_v1_factory.py": [("EC511", 19), ("EC512", 25)],
    "tf_pipeline_fixed.py": [],
    # the pipeline make_dataset() returns is judged where it reaches fit (line 22)
    "tf_serial_map_no_prefetch.py": [("EC511", 14), ("EC512", 22), ("EC522", 22)],
    "torch_cpu_count_workers.py": [("EC504", 10)],
    # CPU training; the GPU lines come after it
    "torch_cpu_tutorial.py": [],
    "torch_imagenet_clean.py": [("EC507", 37)],
    # dict updated under `if use_cuda:` followed: 1 worker, pinned, not persistent
    "torch_mnist_kwargs.py": [("EC503", 54), ("EC503", 57), ("EC506", 28), ("EC507", 28)],
    "torch_module_level_spawn.py": [("EC505", 8)],
    "torch_no_workers.py": [("EC501", 7), ("EC502", 7)],
    "torch_opaque_config.py": [],
    # AMP behind --amp (off by default): offered by the script, a setting of the run, no
    # EC507 finding; .item() every step through train_one_epoch and the metric logger
    # wrapper, not in evaluate(); resnet18: no TF32 advice
    "torch_reference_classification.py": [
        ("EC503", 46),
        ("EC509", 30),
        ("EC509", 31),
    ],
    "torch_step_sync.py": [
        ("EC509", 47),
        ("EC509", 48),
        ("EC510", 22),
        ("EC510", 23),
        ("EC510", 40),
    ],
    "torch_step_sync_fixed.py": [],
    # in-memory TensorDataset: no EC501; validate() rebuilds its loader: no EC503
    "torch_tensordataset_validate.py": [("EC502", 12), ("EC502", 20), ("EC507", 30)],
}


def findings(path: Path) -> list[tuple[str, int]]:
    ctx = CollectContext(interpreter=interpreter.current(), scripts=(path,))
    section = scripts.collect(ctx)["scripts"]
    facts = {"collectors": {"scripts": {"status": "ok", "reason": None}}, "scripts": section}
    results = evaluate(builtin_registry(), Facts(snapshot_from({**facts, **TARGET})))
    return sorted(
        (f.id, (f.location.line or 0) if f.location else 0)
        for r in results
        if r.id.startswith("EC5")
        for f in r.findings
    )


def test_every_corpus_file_is_listed() -> None:
    assert sorted(p.name for p in CORPUS.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_findings(name: str) -> None:
    assert findings(CORPUS / name) == EXPECTED[name]
