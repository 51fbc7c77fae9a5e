"""Deep-learning frameworks of the audited interpreter and the CUDA they were built for.

Files only: nothing of TensorFlow, torch or JAX is imported (an import can take seconds,
touch the GPU, or crash). TensorFlow's `build_info.py` and torch's `version.py` are
generated at build time and hold plain literals, so they are parsed with `ast`, never
executed. Everything is looked up on the audited interpreter's sys.path, the way its
import system would: the first entry holding a regular package wins.

A field that cannot be read is null and `reasons` says why, keyed "framework.field"
("tensorflow.cuda_version"), or by the section's own field name ("system_libraries").
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from envcheck import subprocess_runner
from envcheck.collectors.base import CollectContext
from envcheck.collectors.packages import InstalledDistribution, scan

# Distributions known to ship the `tensorflow` package (a metapackage of one of these
# names ships no files and is passed over: its RECORD names no tensorflow/ file).
TENSORFLOW_DISTRIBUTIONS = (
    "tensorflow",
    "tensorflow-cpu",
    "tensorflow-gpu",
    "tensorflow-intel",
    "tensorflow-macos",
    "tensorflow-aarch64",
    "tensorflow-cpu-aws",
    "tensorflow-rocm",
    "tensorflow-directml",
    "intel-tensorflow",
    "intel-tensorflow-avx512",
    "tf-nightly",
    "tf-nightly-cpu",
    "tf-nightly-gpu",
    "tf-nightly-intel",
    "tf-nightly-macos",
)

# TensorFlow 1.15 to 2.1 shipped the real package as tensorflow_core/ behind a shim.
_BUILD_INFO_PATHS = (
    ("tensorflow", "python", "platform", "build_info.py"),
    ("tensorflow_core", "python", "platform", "build_info.py"),
)

_TF_FIELDS = (
    "is_cuda_build",
    "is_rocm_build",
    "cuda_version",
    "cudnn_version",
    "cuda_compute_capabilities",
    "source",
)

SYSTEM_LIBRARIES = ("libcudart", "libcudnn", "libcublas", "libnccl", "libnvidia-ml", "libcuda")
LDCONFIG_TIMEOUT_S = 5.0

_CUDNN_WHEEL = re.compile(r"^nvidia-cudnn-cu(\d+)$")
_JAX_CUDA_PLUGIN = re.compile(r"^jax-cuda\d+-(plugin|pjrt)$")
_WINDOWS_VERSION = re.compile(r"^64_(\d+)$")  # Windows builds record "64_112" for 11.2


def collect(ctx: CollectContext) -> dict[str, Any]:
    sys_path = [p for p in ctx.interpreter.sys_path if p]
    distributions = list(scan(ctx).distributions)
    first: dict[str, InstalledDistribution] = {}
    for dist in distributions:
        first.setdefault(dist.name, dist)  # the first of a name on sys.path wins
    reasons: dict[str, str] = {}
    facts: dict[str, Any] = {
        "tensorflow": _tensorflow(sys_path, distributions, first, reasons),
        "torch": _torch(sys_path, first, reasons),
        "jax": _jax(first, reasons),
        "nvidia_wheels": {
            name: dist.version for name, dist in sorted(first.items()) if name.startswith("nvidia-")
        },
        "system_libraries": _system_libraries(ctx.environ, reasons),
    }
    facts["reasons"] = dict(sorted(reasons.items()))
    return {"frameworks": facts}


# --- where a package lives -------------------------------------------------------------


def _package_entry(sys_path: Sequence[str], package: str) -> Optional[Path]:
    """The first sys.path entry holding `package/__init__.py`, as the import system finds it."""
    for entry in sys_path:
        try:
            if (Path(entry) / package / "__init__.py").is_file():
                return Path(entry)
        except OSError:
            continue
    return None


def _same_folder(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _provider(
    distributions: Iterable[InstalledDistribution],
    entry: Path,
    package: str,
    known_names: Sequence[str],
) -> Optional[InstalledDistribution]:
    """The distribution in `entry` that ships `package`: by its file list, else by its name."""
    here = [d for d in distributions if _same_folder(d.entry, entry)]
    known = [d for d in here if d.name in known_names]
    for dist in known:  # the usual case, cheap: a few metadata files read
        if package in dist.top_level_modules():
            return dist
    for dist in here:  # an unlisted fork or rebuild
        if dist.name not in known_names and package in dist.top_level_modules():
            return dist
    return known[0] if known else None  # metadata without a file list


def _not_a_package_reason(
    first: Mapping[str, InstalledDistribution], names: Sequence[str], package: str
) -> Optional[str]:
    for name in names:
        if name in first:
            version = first[name].version
            return (
                f"{name} {version} is installed but no sys.path entry holds a {package} "
                "package (a metapackage, or a broken install)"
            )
    return None


# --- TensorFlow ------------------------------------------------------------------------


def _tensorflow(
    sys_path: Sequence[str],
    distributions: Sequence[InstalledDistribution],
    first: Mapping[str, InstalledDistribution],
    reasons: dict[str, str],
) -> Optional[dict[str, Any]]:
    entry = _package_entry(sys_path, "tensorflow")
    if entry is None:
        why = _not_a_package_reason(first, TENSORFLOW_DISTRIBUTIONS, "tensorflow")
        if why:
            reasons["tensorflow"] = why
        return None
    facts: dict[str, Any] = {"distribution": None, "version": None}
    dist = _provider(distributions, entry, "tensorflow", TENSORFLOW_DISTRIBUTIONS)
    if dist is None:
        why = f"no installed distribution in {entry} ships the tensorflow package"
        reasons["tensorflow.distribution"] = reasons["tensorflow.version"] = why
    else:
        facts["distribution"], facts["version"] = dist.name, dist.version
    for field in _TF_FIELDS:
        facts[field] = None
    build_info = next(
        (entry.joinpath(*rel) for rel in _BUILD_INFO_PATHS if entry.joinpath(*rel).is_file()),
        None,
    )
    if build_info is None:
        _all_null(reasons, f"no tensorflow/python/platform/build_info.py in {entry}")
        return facts
    info, why = _read_literals(build_info)
    if info is None:
        _all_null(reasons, str(why))
        return facts
    facts["source"] = str(build_info)
    facts.update(_build_facts(info, reasons))
    return facts


def _all_null(reasons: dict[str, str], why: str) -> None:
    for field in _TF_FIELDS:
        reasons[f"tensorflow.{field}"] = why


def literal_settings(text: str) -> dict[str, Any]:
    """Module-level literal assignments of a generated file, without running it.

    TensorFlow 2.4+: `build_info = collections.OrderedDict([(key, value), ...])`;
    2.3: `build_info = {...}`; 1.x to 2.2: module constants such as `is_cuda_build = True`
    and `cuda_version_number = '10.0'`. Both kinds are merged into one mapping.
    """
    tree = ast.parse(text)
    values: dict[str, Any] = {}
    mapping: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            value: Optional[ast.expr] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names, value = [node.target.id], node.value
        else:
            continue
        if value is None:
            continue
        for name in names:
            if name == "build_info":
                mapping.update(_literal_mapping(value))
            else:
                try:
                    values[name] = ast.literal_eval(value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    continue
    values.update(mapping)
    return values


def _literal_mapping(node: ast.expr) -> dict[str, Any]:
    """A dict literal, or dict(...)/OrderedDict(...) of literal pairs and keywords."""
    try:
        if isinstance(node, ast.Dict):
            found = ast.literal_eval(node)
            return {str(k): v for k, v in found.items()}
        if isinstance(node, ast.Call):
            func = node.func
            func_name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if func_name not in ("OrderedDict", "dict"):
                return {}
            result: dict[str, Any] = {}
            if node.args:
                result.update({str(k): v for k, v in dict(ast.literal_eval(node.args[0])).items()})
            for keyword in node.keywords:
                if keyword.arg is not None:
                    result[keyword.arg] = ast.literal_eval(keyword.value)
            return result
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return {}
    return {}


def _build_facts(info: Mapping[str, Any], reasons: dict[str, str]) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    not_recorded = "not recorded in this TensorFlow's build_info.py"
    for field in ("is_cuda_build", "is_rocm_build"):
        value = info.get(field)
        facts[field] = value if isinstance(value, bool) else None
        if facts[field] is None:
            reasons[f"tensorflow.{field}"] = not_recorded
    not_cuda = facts["is_cuda_build"] is False

    cuda = _version_text(info.get("cuda_version", info.get("cuda_version_number")))
    facts["cuda_version"] = _windows_cuda(cuda) if cuda else None
    cudnn = _version_text(info.get("cudnn_version", info.get("cudnn_version_number")))
    facts["cudnn_version"] = _windows_cudnn(cudnn) if cudnn else None
    facts["cuda_compute_capabilities"] = _capabilities(info.get("cuda_compute_capabilities"))
    for field in ("cuda_version", "cudnn_version", "cuda_compute_capabilities"):
        if facts[field] is None:
            reasons[f"tensorflow.{field}"] = "not a CUDA build" if not_cuda else not_recorded
    return facts


def _version_text(value: Any) -> Optional[str]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _windows_cuda(version: str) -> str:
    match = _WINDOWS_VERSION.match(version)
    if match and len(match.group(1)) >= 2:
        digits = match.group(1)
        return f"{digits[:-1]}.{digits[-1]}"
    return version


def _windows_cudnn(version: str) -> str:
    match = _WINDOWS_VERSION.match(version)
    return match.group(1) if match else version


def _capabilities(value: Any) -> Optional[list[str]]:
    if isinstance(value, str):
        value = [part for part in re.split(r"[,\s]+", value) if part]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return [str(v) for v in value]
    return None


# --- torch -----------------------------------------------------------------------------


def _torch(
    sys_path: Sequence[str],
    first: Mapping[str, InstalledDistribution],
    reasons: dict[str, str],
) -> Optional[dict[str, Any]]:
    entry = _package_entry(sys_path, "torch")
    if entry is None:
        why = _not_a_package_reason(first, ("torch",), "torch")
        if why:
            reasons["torch"] = why
        return None
    version_py = entry / "torch" / "version.py"
    facts: dict[str, Any] = {
        "version": None,
        "cuda": None,
        "hip": None,
        "cpu_only": None,
        "source": None,
    }
    settings, why = _read_literals(version_py)
    if settings is None:
        for field in facts:
            reasons[f"torch.{field}"] = str(why)
        dist = first.get("torch")
        if dist is not None and _same_folder(dist.entry, entry):
            facts["version"] = dist.version  # from its metadata, then
            del reasons["torch.version"]
    else:
        facts["source"] = str(version_py)
        facts["version"] = _version_text(settings.get("__version__"))
        if facts["version"] is None:
            reasons["torch.version"] = f"no __version__ in {version_py}"
        for field in ("cuda", "hip"):  # torch before 1.5 has no hip: not a ROCm build
            value = settings.get(field)
            facts[field] = _version_text(value)
            if value is not None and facts[field] is None:
                reasons[f"torch.{field}"] = f"unreadable {field} in {version_py}: {value!r}"
        if "cuda" in settings:
            facts["cpu_only"] = facts["cuda"] is None and facts["hip"] is None
        else:
            reasons["torch.cuda"] = reasons["torch.cpu_only"] = f"no cuda in {version_py}"
    facts.update(_torch_cudnn(entry, facts, first, reasons))
    return {
        key: facts[key]
        for key in ("version", "cuda", "hip", "cpu_only", "cudnn_version", "cudnn_source", "source")
    }


def _read_literals(path: Path) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    """(the literal settings of a generated .py file, None) or (None, why not)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"
    try:
        return literal_settings(text), None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:  # ValueError: NUL
        if isinstance(exc, SyntaxError):
            return None, f"cannot parse {path}: SyntaxError at line {exc.lineno}: {exc.msg}"
        return None, f"cannot parse {path}: {type(exc).__name__}: {exc}"


def _torch_cudnn(
    entry: Path,
    facts: Mapping[str, Any],
    first: Mapping[str, InstalledDistribution],
    reasons: dict[str, str],
) -> dict[str, Any]:
    found: dict[str, Any] = {"cudnn_version": None, "cudnn_source": None}
    if facts["hip"] is not None:
        why = "a ROCm build: it uses MIOpen, not cuDNN"
    elif facts["cpu_only"]:
        why = "a CPU-only build of torch uses no cuDNN"
    else:
        # A libcudnn inside torch/lib is found first through torch's RUNPATH ($ORIGIN),
        # so it wins over a wheel that some other framework brought along.
        bundled = _bundled_cudnn(entry / "torch" / "lib")
        if bundled is not None:
            found["cudnn_version"], found["cudnn_source"] = bundled, "bundled"
            return found
        wheels = sorted(name for name in first if _CUDNN_WHEEL.match(name))
        cuda_major = (facts["cuda"] or "").split(".")[0]
        matching = [n for n in wheels if n == f"nvidia-cudnn-cu{cuda_major}"]
        if matching or wheels:
            chosen = (matching or wheels)[0]
            version = first[chosen].version  # 8.9.2.26: the fourth part is a build number
            found["cudnn_version"] = ".".join(version.split("+")[0].split(".")[:3])
            found["cudnn_source"] = chosen
            return found
        why = (
            "no nvidia-cudnn-cu* distribution is installed and torch/lib holds no "
            "libcudnn.so.N: torch falls back to whatever cuDNN the loader finds"
        )
    reasons["torch.cudnn_version"] = reasons["torch.cudnn_source"] = why
    return found


def _bundled_cudnn(lib: Path) -> Optional[str]:
    """The major version of a libcudnn.so.N (cudnn64_N.dll on Windows) inside torch/lib."""
    try:
        names = os.listdir(lib)
    except OSError:
        return None
    majors: list[int] = []
    for name in names:
        match = re.match(r"^libcudnn\.so\.(\d+)", name) or re.match(r"^cudnn64_(\d+)\.dll$", name)
        if match:
            majors.append(int(match.group(1)))
    return str(max(majors)) if majors else None


# --- JAX -------------------------------------------------------------------------------


def _jax(
    first: Mapping[str, InstalledDistribution], reasons: dict[str, str]
) -> Optional[dict[str, Any]]:
    plugins = {name: dist.version for name, dist in first.items() if _JAX_CUDA_PLUGIN.match(name)}
    jax, jaxlib = first.get("jax"), first.get("jaxlib")
    if jaxlib is not None and "+cuda" in jaxlib.version:  # jaxlib==0.4.7+cuda11.cudnn86
        plugins["jaxlib"] = jaxlib.version
    if jax is None and jaxlib is None and not plugins:
        return None
    if jax is None:
        reasons["jax.version"] = "jax is not installed"
    if jaxlib is None:
        reasons["jax.jaxlib_version"] = "jaxlib is not installed"
    return {
        "version": jax.version if jax else None,
        "jaxlib_version": jaxlib.version if jaxlib else None,
        "cuda_plugins": dict(sorted(plugins.items())),
    }


# --- system libraries ------------------------------------------------------------------


def _system_libraries(environ: Mapping[str, str], reasons: dict[str, str]) -> dict[str, list[str]]:
    """Sonames of the CUDA stack in the dynamic loader's cache (`ldconfig -p`)."""
    search = os.pathsep.join(p for p in (environ.get("PATH", ""), "/sbin", "/usr/sbin") if p)
    ldconfig = subprocess_runner.which("ldconfig", path=search) or "ldconfig"
    try:
        proc = subprocess_runner.run([ldconfig, "-p"], LDCONFIG_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        reasons["system_libraries"] = f"ldconfig -p did not answer within {LDCONFIG_TIMEOUT_S:g} s"
        return {}
    except OSError as exc:
        reasons["system_libraries"] = f"cannot run ldconfig: {exc.strerror or exc}"
        return {}
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        reasons["system_libraries"] = f"ldconfig -p exited with code {proc.returncode}: {last}"
        return {}
    return parse_ldconfig(proc.stdout)


def parse_ldconfig(text: str) -> dict[str, list[str]]:
    """{library: sorted sonames} for SYSTEM_LIBRARIES, from `ldconfig -p` output.

    Lines look like "\\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.12";
    a name matches a library only exactly ("libcudnn_ops.so.9" is not libcudnn).
    """
    found: dict[str, set[str]] = {lib: set() for lib in SYSTEM_LIBRARIES}
    for line in text.splitlines():
        if "=>" not in line:
            continue
        soname = line.strip().split(" ", 1)[0]
        base, sep, _ = soname.partition(".so")
        if sep and base in found:
            found[base].add(soname)
    return {lib: sorted(names) for lib, names in found.items()}
