"""Data-directory rules (EC401-EC408): the disk, the file layout, the read rate and the
security software between the dataset and the GPU. All need `--data DIR`; without it
they are skipped.

Size: eight rules whose docstrings are their reference documentation; one family stays in
one module, so EC4xx is read in one place.
"""

from __future__ import annotations

from typing import Any, Union

from envcheck.checks.facts_helpers import requested_section
from envcheck.engine.python_rules import check
from envcheck.engine.rule import Hit, Outcome
from envcheck.engine.template import human_bytes
from envcheck.model import Severity, Status
from envcheck.snapshot import Facts, Missing

SLOW_KINDS = ("hdd", "usb", "network", "fuse", "drvfs")
PER_FILE_FORMATS = {
    ".jpg",
    ".jpeg",
    ".png",
    ".webp",
    ".bmp",
    ".gif",
    ".tif",
    ".tiff",
    ".npy",
    ".wav",
    ".flac",
    ".txt",
    ".json",
    ".xml",
}
SMALL_FILE_BYTES = 128 * 1024
# 5x the ~75-100 random IOPS of a 7,200 rpm disk (https://en.wikipedia.org/wiki/IOPS):
# a measured cold rate above this cannot come from a single rotating disk.
HDD_PLAUSIBLE_FILES_PER_S = 500
MANY_FILES = 100_000


def data_section(facts: Facts, name: str) -> Union[dict[str, Any], Outcome]:
    """A --data section, or the Outcome when it is absent: skipped without --data."""
    return requested_section(facts, name, "--data DIR")


def effective_kind(storage: dict[str, Any]) -> Any:
    """The class that decides speed: for an overlay, the disk under its upper dir."""
    if storage.get("kind") == "overlay" and storage.get("backing_kind"):
        return storage["backing_kind"]
    return storage.get("kind")


def _storage_of_kind(facts: Facts, kinds: tuple[str, ...]) -> Union[dict[str, Any], Outcome]:
    storage = data_section(facts, "storage")
    if isinstance(storage, Outcome):
        return storage
    kind = effective_kind(storage)
    if kind in (None, "unknown"):
        reasons = dict.fromkeys((storage.get("reasons") or {}).values())  # unique, in order
        why = "; ".join(reasons) or "storage class not determined"
        return Outcome.unknown(why)
    if kind not in kinds:
        return Outcome.passed(f"data on {kind} storage")
    return storage


def _storage_hit(storage: dict[str, Any], **values: Any) -> Hit:
    disks = storage.get("disks") or []
    models = ", ".join(str(d.get("model") or d.get("name")) for d in disks) or "?"
    notes = storage.get("notes") or []
    caveat = f" (uncertain: {'; '.join(notes)})" if not storage.get("certain", True) else ""
    return Hit(
        values={
            "path": storage.get("path"),
            "mount": storage.get("mount_point"),
            "fs": storage.get("fs_type"),
            "disks": models,
            "caveat": caveat,
            "source": storage.get("source"),
            **values,
        },
        evidence={
            "facts": {
                "storage": {
                    k: storage.get(k)
                    for k in (
                        "kind",
                        "fs_type",
                        "mount_point",
                        "source",
                        "disks",
                        "certain",
                        "notes",
                    )
                }
            }
        },
    )


def _rate(facts: Facts) -> str:
    cold = facts.lookup("read_throughput.cold")
    if isinstance(cold, dict) and cold.get("files_per_s"):
        return (
            f"; measured cold reads here: {cold['files_per_s']:.0f} files/s, "
            f"{human_bytes(cold.get('bytes_per_s') or 0)}/s"
        )
    return ""


@check(
    id="EC401",
    name="data-on-hdd",
    severity=Severity.HIGH,
    category="data",
    summary="The dataset is on a rotating hard disk",
    message="{path} is on a hard disk ({disks}, {fs} at {mount}){caveat}: random reads of "
    "individual files are bound by seek time{rate}",
    fix="copy the dataset to local SSD/NVMe (e.g. rsync -a {path}/ /local/nvme/train/), or "
    "pack it into shards read sequentially (TFRecord, WebDataset tar)",
    evidence=(
        "https://www.kernel.org/doc/html/latest/block/queue-sysfs.html (rotational: 1 for "
        "rotating media)",
        "https://en.wikipedia.org/wiki/IOPS (7,200 rpm SATA drives: about 75-100 random IOPS)",
    ),
)
def data_on_hdd(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Training from a folder of images on a rotating disk. A shuffled
    epoch reads files in random order, and each read costs a seek: a 7,200 rpm drive
    serves on the order of 75-100 random reads per second, far below the thousands of
    images per second a GPU consumes. The rotational flag is read from
    `/sys/block/<disk>/queue/rotational` after resolving the mount through partitions,
    LVM, md-RAID and loop devices. Behind hardware RAID or in a VM (virtio) the flag is
    what the controller or hypervisor declares: then the measured cold read rate decides.
    Above 500 files/s (5x a 7,200 rpm disk's random IOPS) the data cannot be on a single
    rotating disk and the rule passes; otherwise it says *unknown*, never a guess.

    **Best practice.** Stage the dataset on local SSD or NVMe, or store it as large
    shards that are read sequentially (TFRecord, WebDataset, LMDB).
    """
    storage = _storage_of_kind(facts, ("hdd",))
    if isinstance(storage, Outcome):
        return storage
    if not storage.get("certain", True):
        cold = facts.lookup("read_throughput.cold")
        rate = cold.get("files_per_s") if isinstance(cold, dict) else None
        notes = "; ".join(storage.get("notes") or []) or "rotational flag uncertain"
        if isinstance(rate, (int, float)) and rate > HDD_PLAUSIBLE_FILES_PER_S:
            return Outcome.passed(
                f"the rotational flag says HDD ({notes}), but cold reads measured "
                f"{rate:,.0f} files/s, beyond any single HDD (~75-100 random IOPS)"
            )
        return Outcome.unknown(f"the rotational flag says HDD, but {notes}{_rate(facts)}")
    return Outcome.failed(_storage_hit(storage, rate=_rate(facts)), reason="data on an HDD")


@check(
    id="EC402",
    name="data-on-usb-disk",
    severity=Severity.HIGH,
    category="data",
    summary="The dataset is on a USB-attached disk",
    message="{path} is on a USB disk ({disks}, {fs} at {mount}){caveat}{rate}",
    fix="copy the dataset to an internal SSD/NVMe before training: rsync -a {path}/ "
    "/local/nvme/train/",
    evidence=(
        "https://www.kernel.org/doc/html/latest/usb/mass-storage.html",
        "envcheck KNOWLEDGE.md D: a disk behind a USB bus shows /usb in its resolved "
        "/sys/block path",
    ),
)
def data_on_usb_disk(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Training from an external USB drive. USB mass storage adds
    per-command latency and, with many external drives, a rotating disk behind it; small
    random reads suffer most. A USB stick can even claim to be rotational or not; the bus
    decides the class here.

    **Best practice.** Copy the data to an internal SSD/NVMe first.
    """
    storage = _storage_of_kind(facts, ("usb",))
    if isinstance(storage, Outcome):
        return storage
    return Outcome.failed(_storage_hit(storage, rate=_rate(facts)), reason="data on USB")


@check(
    id="EC403",
    name="data-on-network-or-fuse",
    severity=Severity.MEDIUM,
    category="data",
    summary="The dataset is on a network or FUSE file system",
    message="{path} is on {what} ({fs} from {source}): every file open and read crosses the "
    "network or a user-space daemon{rate}",
    fix="{fix}",
    evidence=(
        "https://www.tensorflow.org/guide/data_performance#parallelizing_data_extraction "
        "(remote storage: time-to-first-byte and read throughput; use interleave)",
        "https://github.com/GoogleCloudPlatform/gcsfuse (file cache: up to 2.3x faster "
        "training in its own benchmark)",
    ),
)
def data_on_network_or_fuse(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Reading many small files from NFS, SMB, a parallel file system or a
    FUSE mount of object storage (s3fs, gcsfuse). Each file costs at least one network
    round trip (open, stat, read), so a loader that reads one file at a time waits on
    latency rather than bandwidth; FUSE adds a user-space hop per call.

    **Best practice.** Copy the dataset to local disk before training; otherwise read it
    as large shards, with many files in flight (`tf.data` `interleave` with
    `num_parallel_calls`, more DataLoader workers), and turn on the FUSE file cache
    (gcsfuse reports up to 2.3x faster training with it).
    """
    storage = _storage_of_kind(facts, ("network", "fuse"))
    if isinstance(storage, Outcome):
        return storage
    fuse = storage.get("kind") == "fuse"
    fix = (
        "enable the FUSE file cache (gcsfuse: --file-cache-max-size-mb and --cache-dir on "
        "local SSD) or copy the data to local disk"
        if fuse
        else f"copy the dataset to local disk before training (rsync -a "
        f"{storage.get('path')}/ /local/nvme/train/), or read it as large shards in parallel"
    )
    what = "a FUSE file system" if fuse else "a network file system"
    return Outcome.failed(
        _storage_hit(storage, what=what, fix=fix, rate=_rate(facts)),
        reason=f"data on {storage.get('fs_type')}",
    )


@check(
    id="EC404",
    name="data-on-wsl-windows-drive",
    severity=Severity.HIGH,
    category="data",
    summary="Under WSL2 the dataset is on a Windows drive (/mnt/c, 9p)",
    message="{path} is on a Windows drive mounted into WSL ({fs} at {mount}): under WSL2 "
    "every file access crosses the VM boundary over the 9p protocol",
    fix="move the dataset into the Linux file system: cp -r {path} ~/data/",
    evidence=(
        "https://github.com/microsoft/WSL/issues/4197 (WSL2: 'Windows files are now a "
        "remote file system', accessed over 9p)",
        "https://learn.microsoft.com/windows/wsl/filesystems (store files in the WSL file "
        "system for the fastest performance)",
    ),
)
def data_on_wsl_windows_drive(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** Training in WSL2 on data stored under `/mnt/c` (or any Windows
    drive). WSL2 runs Linux in a VM; Windows files are served to it over the 9p protocol,
    so every open and read is a round trip to the host (microsoft/WSL#4197). File-heavy
    workloads run many times slower than on the Linux ext4 disk.

    **Best practice.** Keep the dataset inside the Linux file system (`~/data`), which
    WSL2 stores on a virtual disk with native performance.
    """
    storage = _storage_of_kind(facts, ("drvfs",))
    if isinstance(storage, Outcome):
        return storage
    return Outcome.failed(_storage_hit(storage), reason="data on a Windows drive under WSL")


@check(
    id="EC405",
    name="many-small-files",
    severity=Severity.MEDIUM,
    category="data",
    summary="Hundreds of thousands of small per-sample files",
    message="{path} holds {files} files averaging {mean} ({formats}): per-file open/read/close "
    "overhead dominates each epoch{storage}",
    fix="pack the samples into shards of 100 MB-1 GB: TensorFlow: tf.io.TFRecordWriter (read "
    "with tf.data.TFRecordDataset + interleave); PyTorch: WebDataset tar shards (tar cf "
    "shard-000000.tar ...; webdataset.WebDataset('shard-{{000000..000099}}.tar'))",
    evidence=(
        "https://www.tensorflow.org/tutorials/load_data/tfrecord",
        "https://github.com/webdataset/webdataset (sequential reads of tar shards for "
        "large-scale training)",
        "envcheck KNOWLEDGE.md D: many small files (hundreds of thousands under ~100 KB): "
        "per-file overhead dominates",
    ),
)
def many_small_files(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A dataset of hundreds of thousands of individual images (or other
    per-sample files) of a few tens of KB each. Every sample costs a directory lookup, an
    open, a read and a close — metadata operations that local SSDs absorb but that
    dominate on HDDs, network and FUSE file systems, and under antivirus scanning.

    **Threshold.** At least 100,000 files with a mean size under 128 KiB, mostly in a
    per-sample format (images, audio clips, .npy). These are envcheck's own thresholds:
    below ~100k files a local page cache often holds the whole set after one epoch, and
    at 128 KiB and above each read is dominated by transfer rather than per-file
    overhead. Reported at medium severity; the storage class rules (EC401-EC404) say how
    costly it is on this disk.

    **Best practice.** Pack samples into shards: TFRecord files for `tf.data`
    (`TFRecordDataset` with `interleave`), WebDataset tar files or LMDB for PyTorch.
    """
    dataset = data_section(facts, "dataset")
    if isinstance(dataset, Outcome):
        return dataset
    files, mean = dataset.get("files"), dataset.get("mean_file_bytes")
    if not isinstance(files, int) or not isinstance(mean, (int, float)):
        return Outcome.unknown("file count or mean size not known")
    formats = dataset.get("formats") or {}
    per_file = sum(n for ext, n in formats.items() if ext in PER_FILE_FORMATS)
    if files < MANY_FILES or mean >= SMALL_FILE_BYTES or per_file < files / 2:
        return Outcome.passed(f"{files} files averaging {human_bytes(mean)}")
    top = sorted(formats.items(), key=lambda item: -item[1])[:3]
    estimate = "" if dataset.get("complete", True) else "~"
    kind = facts.lookup("storage.kind")
    storage = f", on {kind} storage" if isinstance(kind, str) and kind != "unknown" else ""
    return Outcome.failed(
        Hit(
            values={
                "path": dataset.get("path"),
                "files": f"{estimate}{files:,}",
                "mean": human_bytes(mean),
                "formats": ", ".join(f"{ext or 'no extension'} {n:,}" for ext, n in top),
                "storage": storage,
            },
            evidence={
                "facts": {
                    "dataset.files": files,
                    "dataset.mean_file_bytes": mean,
                    "dataset.complete": dataset.get("complete"),
                    "dataset.formats": formats,
                }
            },
        ),
        reason=f"{files} files, mean {mean:.0f} bytes",
    )


@check(
    id="EC406",
    name="dataset-larger-than-ram-on-slow-storage",
    severity=Severity.MEDIUM,
    category="data",
    summary="The dataset does not fit in RAM and sits on slow storage: every epoch re-reads it",
    message="{path} holds {size} but only {available} of RAM is available, on {kind} storage: "
    "the page cache cannot keep it, so every epoch reads it from the disk again",
    fix="stage the dataset on local NVMe, or shrink it (resize images to the training "
    "resolution, re-encode), or add RAM",
    evidence=(
        "https://www.kernel.org/doc/html/latest/admin-guide/mm/concepts.html#page-cache",
        "Mohan et al., Analyzing and Mitigating Data Stalls in DNN Training, VLDB 2021 "
        "(DS-Analyzer: fetch stalls when the dataset exceeds the page cache)",
    ),
)
def dataset_larger_than_ram_on_slow_storage(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A dataset larger than the memory available for the page cache,
    stored on an HDD, a USB disk, a network or FUSE file system, or a Windows drive under
    WSL. After the first epoch a smaller dataset is served from RAM; this one is fetched
    from the slow device every epoch (DS-Analyzer calls these fetch stalls).

    **Best practice.** Stage the data on local NVMe (fast enough without the cache),
    shrink it to the training resolution, or add memory.
    """
    dataset = data_section(facts, "dataset")
    if isinstance(dataset, Outcome):
        return dataset
    storage = facts.section("storage")
    kind = effective_kind(storage) if isinstance(storage, dict) else storage
    available = facts.lookup("memory.available_bytes")
    size = dataset.get("bytes")
    for value in (kind, available):
        if isinstance(value, Missing):
            return Outcome.unknown(value.reason)
    if not isinstance(size, int) or not isinstance(available, int):
        return Outcome.unknown("dataset size or available memory not known")
    if kind not in SLOW_KINDS:
        return Outcome.passed(f"data on {kind} storage")
    if size <= available:
        return Outcome.passed(f"{human_bytes(size)} fits in {human_bytes(available)} of RAM")
    estimate = "" if dataset.get("complete", True) else "~"
    return Outcome.failed(
        Hit(
            values={
                "path": dataset.get("path"),
                "size": estimate + human_bytes(size),
                "available": human_bytes(available),
                "kind": kind,
            },
            evidence={
                "facts": {
                    "dataset.bytes": size,
                    "memory.available_bytes": available,
                    "storage.kind": kind,
                }
            },
        ),
        reason=f"{size} bytes > {available} available",
    )


@check(
    id="EC407",
    name="cold-read-rate-below-target",
    severity=Severity.HIGH,
    category="data",
    summary="Measured cold reads deliver fewer files per second than training needs",
    message="Cold reads from {path} deliver {rate} files/s ({mbps}/s, {files} files in "
    "{seconds} s), below the {target} samples/s {source}",
    fix="move the data to faster storage or shard it (EC401-EC405); read with more "
    "parallelism (DataLoader num_workers, tf.data interleave/num_parallel_calls)",
    evidence=(
        "Measured by envcheck: files read after posix_fadvise(POSIX_FADV_DONTNEED) dropped "
        "their cached pages",
    ),
)
def cold_read_rate_below_target(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** A storage path that cannot deliver files as fast as the GPU consumes
    samples, whatever the loader does with them afterwards. envcheck reads a sample of the
    dataset's files cold (their cached pages dropped with `posix_fadvise(DONTNEED)`, no
    root needed) and compares the files per second with the target rate: the probe's
    measured training rate when it ran, or `--target-rate` given by the user. Without a
    target the rule is skipped rather than guessing one.

    The sample is read serially by one thread; a parallel loader can do better on SSDs
    and network storage, so treat a small shortfall as a hint and a large one as a
    bottleneck.

    **Best practice.** Faster storage, larger files (shards), or more parallel reads.
    """
    throughput = data_section(facts, "read_throughput")
    if isinstance(throughput, Outcome):
        return throughput
    target = throughput.get("target_samples_per_s")
    if not isinstance(target, (int, float)) or target <= 0:
        return Outcome(Status.SKIPPED, "needs a target rate: --target-rate N (or the probe)")
    cold = throughput.get("cold")
    if not isinstance(cold, dict) or not cold.get("files_per_s"):
        reasons = throughput.get("reasons") or {}
        return Outcome.unknown(reasons.get("cold") or "no cold read measurement")
    rate = float(cold["files_per_s"])
    if rate >= target:
        return Outcome.passed(f"{rate:.0f} files/s cold >= target {target:.0f}")
    return Outcome.failed(
        Hit(
            values={
                "path": facts.lookup("dataset.path") or "the data folder",
                "rate": f"{rate:,.0f}",
                "mbps": human_bytes(cold.get("bytes_per_s") or 0),
                "files": cold.get("files"),
                "seconds": f"{cold.get('seconds') or 0.0:.2f}",
                "target": f"{float(target):,.0f}",
                "source": throughput.get("target_source") or "target",
            },
            evidence={"facts": {"read_throughput.cold": cold, "target": target}},
        ),
        reason=f"{rate:.0f} < {target:.0f} files/s",
    )


@check(
    id="EC408",
    name="antivirus-scans-data",
    severity=Severity.HIGH,
    category="data",
    summary="Real-time antivirus scanning covers the dataset without an exclusion",
    message="{product} scans files on access and {path} is not excluded: every image is "
    "scanned as the loader opens it (detected by {detected_by})",
    fix="{fix}",
    evidence=(
        "https://github.com/microsoft/WSL/issues/1932 (a build from ~20 s to over 3 min with "
        "real-time protection on)",
        "https://learn.microsoft.com/defender-endpoint/configure-extension-file-exclusions-"
        "microsoft-defender-antivirus",
    ),
)
def antivirus_scans_data(facts: Facts) -> Outcome:
    """
    **Anti-pattern.** An on-access scanner (Microsoft Defender real-time protection,
    ClamAV on-access, an endpoint agent) that inspects every file the data loader opens.
    The scan adds latency to each open and CPU load on the cores the loader needs; with
    hundreds of thousands of images per epoch it adds up (microsoft/WSL#1932: a build
    from about 20 s to over 3 minutes with real-time protection on).

    Unelevated, Windows hides the exclusion list ("Must be an administrator to view
    exclusions"): the rule then says *unknown*, never "not excluded".

    **Best practice.** Exclude the dataset folder (and the Python executable) from
    on-access scanning, after agreeing it with whoever owns the machine's security:
    `Add-MpPreference -ExclusionPath <dir>` (admin PowerShell), `OnAccessExcludePath` in
    clamd.conf, or the endpoint agent's console.
    """
    antivirus = data_section(facts, "antivirus")
    if isinstance(antivirus, Outcome):
        return antivirus
    data = facts.lookup("storage.path")
    if not isinstance(data, str):
        data = facts.lookup("dataset.path")
    if not isinstance(data, str):
        return Outcome(Status.SKIPPED, "needs `--data DIR`")
    products = [p for p in antivirus.get("products") or [] if isinstance(p, dict)]
    scanning = [p for p in products if p.get("realtime") is not False]
    hits, unknown = [], []
    for product in scanning:
        if product.get("excludes_data") is True:
            continue
        if product.get("realtime") is None or product.get("excludes_data") is None:
            notes = "; ".join(product.get("notes") or []) or "exclusions cannot be read"
            unknown.append(f"{product.get('name')}: {notes}")
            continue
        hits.append(
            Hit(
                values={
                    "product": product.get("name"),
                    "path": data,
                    "detected_by": product.get("detected_by"),
                    "fix": _exclusion_fix(str(product.get("name")), data),
                },
                evidence={"facts": {"antivirus.product": product}},
            )
        )
    if hits:
        return Outcome.failed(*hits, reason=f"{len(hits)} scanner(s) cover the data")
    if unknown:
        return Outcome.unknown("; ".join(unknown))
    if not products:
        return Outcome.passed("no on-access scanner detected")
    return Outcome.passed("the data folder is excluded or scanning is off")


def _exclusion_fix(product: str, path: str) -> str:
    if "Defender" in product and "Endpoint" not in product:
        return f"Add-MpPreference -ExclusionPath '{path}'   # in an elevated PowerShell"
    if "ClamAV" in product:
        return f"add 'OnAccessExcludePath {path}' to clamd.conf and restart clamonacc"
    if "Endpoint" in product or "mdatp" in product:
        return f"sudo mdatp exclusion folder add --path '{path}' --scope global"
    return f"ask the {product} administrators to exclude {path} from on-access scanning"
