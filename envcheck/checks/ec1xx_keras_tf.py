"""TensorFlow and Keras version pairing (EC104, EC105): Keras 3 became tf.keras in TF 2.16."""

from __future__ import annotations

from envcheck.checks.facts_helpers import parse_version, tensorflow_at_least
from envcheck.engine.python_rules import check
from envcheck.engine.rule import Hit, Outcome
from envcheck.model import Severity
from envcheck.snapshot import Facts, Missing

KERAS3 = (2, 16)  # the first release with Keras 3 as tf.keras
LAZY_LOADER = (2, 15)  # TF_USE_LEGACY_KERAS is honoured from 2.15 on
TRUE_VALUES = ("1", "true", "True")  # what tensorflow/python/util/lazy_loader.py accepts
TF_216_NOTES = (
    "https://github.com/tensorflow/tensorflow/releases/tag/v2.16.1 ('Keras 3 will be the "
    "default Keras version ... To continue using Keras 2 ... pip install tf-keras~=2.16 ... "
    "set the environment variable TF_USE_LEGACY_KERAS=1')"
)


@check(
    id="EC104",
    name="keras2-packages-with-tf216",
    severity=Severity.MEDIUM,
    category="packages",
    summary="TensorFlow 2.16+ (Keras 3 as tf.keras) beside packages of the Keras 2 era",
    message="TensorFlow {tf_version} makes Keras 3 its tf.keras, but Keras 2 era packages "
    "are installed: {packages}",
    fix="pip install 'tf-keras~={tf_minor}' && export TF_USE_LEGACY_KERAS=1   "
    "# or port the code to Keras 3: https://keras.io/guides/migrating_to_keras_3/",
    evidence=(
        TF_216_NOTES,
        "tensorflow 2.16.1 wheel metadata: Requires-Dist keras>=3.0.0",
    ),
)
def keras2_packages_with_tf216(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** TensorFlow 2.16 and later install Keras 3 and make it `tf.keras`
    (release notes of 2.16). Code and packages written for Keras 2 (`keras` 2.x itself,
    `keras-preprocessing`, `keras-applications`, whose `ImageDataGenerator` pipelines
    and `keras.applications` models assume Keras 2) then either fail at import, or run
    on a mix of Keras 2 and Keras 3 objects. `keras` below 3 next to TensorFlow 2.16 also
    breaks TensorFlow's own requirement `keras>=3.0.0`.

    **Best practice.** Either keep Keras 2 on purpose (`pip install tf-keras~=2.16`
    matching the TensorFlow minor version, and `TF_USE_LEGACY_KERAS=1` set before
    TensorFlow is imported), or port to Keras 3 and drop the Keras 2 era packages.
    """
    tf = tensorflow_at_least(facts, KERAS3, "{dist} {version} still ships Keras 2 as tf.keras")
    if isinstance(tf, Outcome):
        return tf
    dist, version = tf
    legacy = []
    keras = parse_version(_installed(facts, "keras"))
    if keras is not None and keras.major < 3:
        legacy.append(f"keras {keras}")
    for name in ("keras-preprocessing", "keras-applications"):
        installed = _installed(facts, name)
        if installed:
            legacy.append(f"{name} {installed}")
    if not legacy:
        return Outcome.passed(f"{dist} {version} with no Keras 2 era packages")
    minor = f"{version.major}.{version.minor}"
    return Outcome.failed(
        Hit(
            values={"tf_version": str(version), "tf_minor": minor, "packages": ", ".join(legacy)},
            evidence={"facts": {f"packages.{dist}": str(version), "keras2_packages": legacy}},
        ),
        reason=f"{dist} {version} with {', '.join(legacy)}",
    )


@check(
    id="EC105",
    name="legacy-keras-misconfigured",
    severity=Severity.HIGH,
    category="packages",
    summary="TF_USE_LEGACY_KERAS without a matching tf-keras: tf.keras fails or misbehaves",
    message="{problem}",
    fix="{fix}",
    evidence=(
        TF_216_NOTES,
        "https://github.com/keras-team/tf-keras/pull/759 (tf-keras 2.15 with TensorFlow 2.16 "
        "'will cause errors due to changes to Saved Model API')",
        "https://github.com/tensorflow/tensorflow/blob/v2.16.1/tensorflow/python/util/"
        "lazy_loader.py ('Your environment has TF_USE_LEGACY_KERAS set "
        "to True, but you do not have the tf_keras package installed'",
    ),
)
def legacy_keras_misconfigured(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Two ways the Keras 2 fallback of TensorFlow 2.15+ breaks:

    - `TF_USE_LEGACY_KERAS=1` is set but `tf-keras` is not installed. TensorFlow warns
      "you do not have the tf_keras package installed" and the first use of `tf.keras`
      raises `ImportError: Keras cannot be imported` — it does not fall back to Keras 3.
    - `tf-keras` is installed at a different major.minor than TensorFlow. From 2.15.1 on
      pip enforces the pairing (tf-keras 2.16 requires tensorflow>=2.16,<2.17), but
      tf-keras 2.15.0 has no such requirement and installs beside TensorFlow 2.16, where
      it fails on the changed SavedModel API (keras-team/tf-keras#759).

    The environment checked is the one envcheck runs in; a training script may also set
    `TF_USE_LEGACY_KERAS` itself before importing TensorFlow.

    **Best practice.** `pip install 'tf-keras~=X.Y'` with X.Y the TensorFlow version, and
    set `TF_USE_LEGACY_KERAS=1` only where it is installed.
    """
    tf = tensorflow_at_least(facts, LAZY_LOADER, "{dist} {version} predates TF_USE_LEGACY_KERAS")
    if isinstance(tf, Outcome):
        return tf
    dist, version = tf
    flag = facts.lookup("environment.TF_USE_LEGACY_KERAS")
    if isinstance(flag, Missing):
        return Outcome.unknown(flag.reason)
    tf_keras_text = _installed(facts, "tf-keras")
    tf_keras = parse_version(tf_keras_text)
    minor = f"{version.major}.{version.minor}"
    hits = []
    if flag in TRUE_VALUES and tf_keras_text is None:
        hits.append(
            Hit(
                values={
                    "problem": f"TF_USE_LEGACY_KERAS={flag} but tf-keras is not installed: "
                    f"tf.keras raises 'Keras cannot be imported' under TensorFlow {version}",
                    "fix": f"pip install 'tf-keras~={minor}.0'",
                },
                evidence={
                    "facts": {"environment.TF_USE_LEGACY_KERAS": flag, "packages.tf-keras": None}
                },
            )
        )
    if tf_keras is not None and tf_keras.release[:2] != version.release[:2]:
        hits.append(
            Hit(
                values={
                    "problem": f"tf-keras {tf_keras} does not match TensorFlow {version}: "
                    "tf-keras must have the same major.minor version",
                    "fix": f"pip install 'tf-keras~={minor}.0'",
                },
                evidence={
                    "facts": {f"packages.{dist}": str(version), "packages.tf-keras": str(tf_keras)}
                },
            )
        )
    if hits:
        return Outcome.failed(*hits, reason=f"{len(hits)} problem(s) with legacy Keras")
    return Outcome.passed(f"{dist} {version}; legacy Keras settings consistent")


def _installed(facts: Facts, name: str) -> str | None:
    version = facts.package_version(name)
    return None if isinstance(version, Missing) else version
