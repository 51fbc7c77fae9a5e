"""storage collector: the kind of disk under --data, from fake /sys, /proc/self/mountinfo
and recorded PowerShell and diskutil answers."""

from __future__ import annotations

import base64
import dataclasses
import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import pytest
from conftest import failing_rules

from envcheck.collectors import storage
from envcheck.collectors.base import CollectContext
from envcheck.collectors.storage import bounded, mounts
from envcheck.collectors.storage.windows import windows_script
from envcheck.interpreter import current
from envcheck.subprocess_runner import Completed

# Where real kernels put disks under /sys (the bus is read from these paths).
NVME = "devices/pci0000:00/0000:00:1d.0/0000:03:00.0/nvme/nvme0"
SATA0 = "devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block"
SATA1 = "devices/pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/1:0:0:0/block"
USB = "devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block"
PERC = "devices/pci0000:00/0000:00:03.0/0000:02:00.0/host0/target0:2:0/0:2:0:0/block"
VIRTIO = "devices/pci0000:00/0000:00:04.0/virtio2/block"
VIRTUAL = "devices/virtual/block"

TB = 1953525168  # sectors of a 1 TB disk
WSL2 = "5.15.153.1-microsoft-standard-WSL2"


def mountinfo(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def mnt(mid: int, dev: str, point: str, fs: str, source: str, sopts: str = "rw") -> str:
    """One /proc/self/mountinfo line, with an optional field as real ones have."""
    return f"{mid} 1 {dev} / {point} rw,relatime shared:{mid} - {fs} {source} {sopts}"


def probe(machine, data: Path, **kwargs: Any) -> dict[str, Any]:
    ctx = dataclasses.replace(machine.ctx(), data=data)
    kwargs.setdefault("system", "Linux")
    facts = storage.collect(ctx, **kwargs)["storage"]
    assert set(facts) == FIELDS
    assert facts["kind"] in storage.KINDS
    return facts


FIELDS = {
    "path",
    "resolved",
    "mount_point",
    "fs_type",
    "source",
    "device",
    "disks",
    "kind",
    "backing_kind",
    "certain",
    "notes",
    "method",
    "reasons",
}
DISK_FIELDS = {"name", "rotational", "transport", "removable", "model", "size_bytes"}


def names(facts: dict[str, Any]) -> list[str]:
    assert all(set(d) == DISK_FIELDS for d in facts["disks"])
    return [d["name"] for d in facts["disks"]]


def data_dir(machine, rel: str) -> Path:
    path = machine.root / rel.lstrip("/")
    path.mkdir(parents=True, exist_ok=True)
    return path


def nvme_root(machine) -> None:
    """ext4 on nvme0n1p2 as "/", the commonest workstation."""
    disk = machine.block_device(
        "nvme0n1", NVME, dev="259:0", rotational=0, model="Samsung SSD 980 PRO 1TB", sectors=TB
    )
    machine.block_device("nvme0n1p2", parent=disk, dev="259:2", sectors=TB - 2048)


def test_without_data_the_section_is_null(machine) -> None:
    assert storage.collect(machine.ctx()) == {"storage": None}


def test_nvme_root(machine) -> None:
    nvme_root(machine)
    machine.proc_file("self/mountinfo", mountinfo(mnt(1, "259:2", "/", "ext4", "/dev/nvme0n1p2")))
    facts = probe(machine, data_dir(machine, "/home/me/data/train"))
    assert facts["kind"] == "nvme"
    assert facts["certain"] is True
    assert facts["method"] == "linux-sysfs"
    assert failing_rules(storage=facts) == []
    assert facts["resolved"] == "/home/me/data/train"
    assert (facts["mount_point"], facts["fs_type"], facts["source"]) == (
        "/",
        "ext4",
        "/dev/nvme0n1p2",
    )
    assert facts["device"] == "nvme0n1p2"
    assert facts["disks"] == [
        {
            "name": "nvme0n1",
            "rotational": False,
            "transport": "nvme",
            "removable": False,
            "model": "Samsung SSD 980 PRO 1TB",
            "size_bytes": TB * 512,
        }
    ]
    assert facts["backing_kind"] is None
    assert facts["notes"] == []
    assert facts["reasons"] == {}


def test_symlinked_data_is_resolved_to_the_mount_it_lands_on(machine) -> None:
    nvme_root(machine)
    hdd = machine.block_device("sdb", SATA1, rotational=1, model="ST4000DM004-2CV1")
    machine.block_device("sdb1", parent=hdd, dev="8:17")
    machine.proc_file(
        "self/mountinfo",
        mountinfo(
            mnt(1, "259:2", "/", "ext4", "/dev/nvme0n1p2"),
            mnt(2, "8:17", "/mnt/disk1", "ext4", "/dev/sdb1"),
        ),
    )
    target = data_dir(machine, "/mnt/disk1/train")
    link = data_dir(machine, "/home/me/data") / "train"
    link.symlink_to("../../../mnt/disk1/train")
    facts = probe(machine, link)
    assert facts["path"] == str(link)
    assert facts["resolved"] == "/mnt/disk1/train"
    assert target.exists()
    assert (facts["mount_point"], facts["kind"], names(facts)) == ("/mnt/disk1", "hdd", ["sdb"])


def test_sata_ssd(machine) -> None:
    disk = machine.block_device(
        "sda", SATA0, rotational=0, model="Samsung SSD 870 EVO 1TB", sectors=TB
    )
    machine.block_device("sda1", parent=disk, dev="8:1")
    machine.proc_file("self/mountinfo", mountinfo(mnt(1, "8:1", "/", "xfs", "/dev/sda1")))
    facts = probe(machine, data_dir(machine, "/data"))
    assert (facts["kind"], facts["certain"], names(facts)) == ("ssd", True, ["sda"])
    assert facts["disks"][0]["transport"] == "sata"
    assert failing_rules(storage=facts) == []


def test_hdd_behind_md_raid(machine) -> None:
    machine.block_device("sda", SATA0, rotational=1, model="WDC WD40EFRX-68N32N0", sectors=TB)
    machine.block_device("sdb", SATA1, rotational=1, model="WDC WD40EFRX-68N32N0", sectors=TB)
    machine.block_device("md0", dev="9:0", rotational=1, slaves=["sda", "sdb"])
    machine.proc_file("self/mountinfo", mountinfo(mnt(3, "9:0", "/raid", "ext4", "/dev/md0")))
    facts = probe(machine, data_dir(machine, "/raid/imagenet"))
    assert facts["device"] == "md0"
    assert (facts["kind"], facts["certain"], names(facts)) == ("hdd", True, ["sda", "sdb"])
    assert {d["transport"] for d in facts["disks"]} == {"sata"}
    assert failing_rules(storage=facts) == ["EC401"]


def test_usb_hdd_is_usb_whatever_it_claims(machine) -> None:
    disk = machine.block_device(
        "sdc", USB, rotational=1, removable=0, model="Elements 25A3", vendor="WD"
    )
    machine.block_device("sdc1", parent=disk, dev="8:33")
    machine.proc_file(
        "self/mountinfo",
        mountinfo(mnt(4, "8:33", "/media/me/Elements", "exfat", "/dev/sdc1")),
    )
    facts = probe(machine, data_dir(machine, "/media/me/Elements/coco"))
    assert (facts["kind"], facts["certain"], names(facts)) == ("usb", True, ["sdc"])
    assert facts["disks"][0]["transport"] == "usb"
    assert facts["disks"][0]["rotational"] is True
    assert failing_rules(storage=facts) == ["EC402"]


def test_hdd_behind_lvm(machine) -> None:
    hdd = machine.block_device("sdb", SATA1, rotational=1, model="ST8000VN004-2M21")
    machine.block_device("sdb1", parent=hdd, dev="8:17")
    machine.block_device("dm-0", dev="253:0", rotational=1, slaves=["sdb1"])
    machine.sys_file("devices/virtual/block/dm-0/dm/name", "vg-data\n")
    machine.proc_file(
        "self/mountinfo", mountinfo(mnt(5, "253:0", "/data", "ext4", "/dev/mapper/vg-data"))
    )
    facts = probe(machine, data_dir(machine, "/data/train"))
    assert facts["device"] == "dm-0"
    assert (facts["kind"], facts["certain"], names(facts)) == ("hdd", True, ["sdb"])


def test_device_mapper_found_by_name_when_major_minor_is_anonymous(machine) -> None:
    """btrfs reports an anonymous 0:NN device; the /dev/mapper source still leads to dm-0."""
    machine.block_device("sdb", SATA1, rotational=0, model="CT2000MX500SSD1")
    machine.block_device("sdb1", parent=machine.sys / SATA1 / "sdb", dev="8:17")
    machine.block_device("dm-0", dev="253:0", rotational=0, slaves=["sdb1"])
    machine.sys_file("devices/virtual/block/dm-0/dm/name", "cryptdata\n")
    machine.proc_file(
        "self/mountinfo", mountinfo(mnt(5, "0:45", "/data", "btrfs", "/dev/mapper/cryptdata"))
    )
    facts = probe(machine, data_dir(machine, "/data"))
    assert (facts["device"], facts["kind"], names(facts)) == ("dm-0", "ssd", ["sdb"])


def test_btrfs_found_by_source_name(machine) -> None:
    nvme_root(machine)
    machine.proc_file("self/mountinfo", mountinfo(mnt(1, "0:32", "/", "btrfs", "/dev/nvme0n1p2")))
    facts = probe(machine, data_dir(machine, "/srv/data"))
    assert (facts["device"], facts["kind"]) == ("nvme0n1p2", "nvme")


def test_loop_device_backed_by_a_file_on_an_hdd(machine) -> None:
    hdd = machine.block_device("sda", SATA0, rotational=1, model="ST2000DM008-2FR1")
    machine.block_device("sda1", parent=hdd, dev="8:1")
    machine.block_device("loop0", dev="7:0", rotational=0, backing_file="/srv/images/datasets.img")
    machine.root_file("srv/images/datasets.img", "")
    machine.proc_file(
        "self/mountinfo",
        mountinfo(
            mnt(1, "8:1", "/", "ext4", "/dev/sda1"),
            mnt(6, "7:0", "/mnt/image", "ext4", "/dev/loop0"),
        ),
    )
    facts = probe(machine, data_dir(machine, "/mnt/image/train"))
    assert facts["device"] == "loop0"
    assert (facts["kind"], facts["certain"], names(facts)) == ("hdd", True, ["sda"])


def test_loop_device_whose_backing_file_is_not_visible(machine) -> None:
    machine.block_device("loop3", dev="7:3", rotational=1, backing_file="/host/x.img (deleted)")
    machine.proc_file("self/mountinfo", mountinfo(mnt(6, "7:3", "/", "squashfs", "/dev/loop3")))
    facts = probe(machine, data_dir(machine, "/opt/data"))
    assert (facts["kind"], facts["certain"], facts["disks"]) == ("unknown", False, None)
    assert facts["device"] == "loop3"
    assert "/host/x.img" in facts["reasons"]["disks"]
    assert "(deleted)" not in facts["reasons"]["disks"]


def test_loop_device_backed_by_a_file_on_nfs_is_network(machine) -> None:
    machine.block_device("loop1", dev="7:1", rotational=0, backing_file="/mnt/nfs/data.sqsh")
    machine.root_file("mnt/nfs/data.sqsh", "")
    machine.proc_file(
        "self/mountinfo",
        mountinfo(
            mnt(7, "0:60", "/mnt/nfs", "nfs4", "fileserver:/export"),
            mnt(8, "7:1", "/mnt/sq", "squashfs", "/dev/loop1", "ro"),
        ),
    )
    facts = probe(machine, data_dir(machine, "/mnt/sq/train"))
    assert (facts["kind"], facts["device"], facts["disks"]) == ("network", "loop1", [])


def test_sd_card_is_flash_but_uncertain(machine) -> None:
    card = machine.block_device(
        "mmcblk0",
        "devices/platform/fe340000.mmc/mmc_host/mmc0/mmc0:aaaa/block",
        rotational=0,
        removable=0,
    )
    machine.sys_file(
        "devices/platform/fe340000.mmc/mmc_host/mmc0/mmc0:aaaa/block/mmcblk0/device/name",
        "SD64G\n",
    )
    machine.block_device("mmcblk0p2", parent=card, dev="179:2")
    machine.proc_file("self/mountinfo", mountinfo(mnt(1, "179:2", "/", "ext4", "/dev/mmcblk0p2")))
    facts = probe(machine, data_dir(machine, "/home/pi/data"))
    assert (facts["kind"], facts["certain"], names(facts)) == ("ssd", False, ["mmcblk0"])
    assert facts["disks"][0]["model"] == "SD64G"
    assert "SD/eMMC" in facts["notes"][0]


def test_nfs(machine) -> None:
    nvme_root(machine)
    machine.proc_file(
        "self/mountinfo",
        mountinfo(
            mnt(1, "259:2", "/", "ext4", "/dev/nvme0n1p2"),
            mnt(7, "0:60", "/mnt/nfs", "nfs4", "fileserver:/export/datasets", "rw,vers=4.2"),
        ),
    )
    facts = probe(machine, data_dir(machine, "/mnt/nfs/imagenet"))
    assert (facts["kind"], facts["certain"], facts["disks"]) == ("network", True, [])
    assert (facts["fs_type"], facts["source"]) == ("nfs4", "fileserver:/export/datasets")
    assert facts["device"] is None
    assert failing_rules(storage=facts) == ["EC403"]


def test_gcsfuse(machine) -> None:
    machine.proc_file(
        "self/mountinfo",
        mountinfo(
            mnt(8, "0:70", "/mnt/gcs", "fuse.gcsfuse", "my-bucket", "rw,user_id=1000,group_id=1000")
        ),
    )
    facts = probe(machine, data_dir(machine, "/mnt/gcs/train"))
    assert (facts["kind"], facts["certain"], facts["disks"]) == ("fuse", True, [])
    assert facts["fs_type"] == "fuse.gcsfuse"
    assert failing_rules(storage=facts) == ["EC403"]


def test_tmpfs(machine) -> None:
    machine.proc_file(
        "self/mountinfo", mountinfo(mnt(9, "0:23", "/dev/shm", "tmpfs", "tmpfs", "rw,size=24g"))
    )
    facts = probe(machine, data_dir(machine, "/dev/shm/cache"))
    assert (facts["kind"], facts["certain"], facts["disks"]) == ("tmpfs", True, [])


def docker_overlay(point: str) -> str:
    options = (
        "rw,lowerdir=/var/lib/docker/overlay2/l/ABCD:/var/lib/docker/overlay2/l/EFGH,"
        "upperdir=/var/lib/docker/overlay2/0123abcd/diff,"
        "workdir=/var/lib/docker/overlay2/0123abcd/work"
    )
    return mnt(10, "0:50", point, "overlay", "overlay", options)


def test_overlay_with_its_upper_dir_on_nvme(machine) -> None:
    nvme_root(machine)
    machine.proc_file(
        "self/mountinfo",
        mountinfo(
            mnt(1, "259:2", "/", "ext4", "/dev/nvme0n1p2"),
            docker_overlay("/var/lib/docker/overlay2/0123abcd/merged"),
        ),
    )
    data_dir(machine, "/var/lib/docker/overlay2/0123abcd/diff")
    facts = probe(machine, data_dir(machine, "/var/lib/docker/overlay2/0123abcd/merged/data"))
    assert (facts["kind"], facts["backing_kind"], facts["certain"]) == ("overlay", "nvme", True)
    assert names(facts) == ["nvme0n1"]
    assert facts["fs_type"] == "overlay"
    assert failing_rules(storage=facts) == []


def test_overlay_inside_a_container_has_no_visible_backing(machine) -> None:
    machine.proc_file("self/mountinfo", mountinfo(docker_overlay("/")))
    facts = probe(machine, data_dir(machine, "/workspace/data"))
    assert (facts["kind"], facts["backing_kind"]) == ("overlay", None)
    assert "/var/lib/docker/overlay2/0123abcd/diff" in facts["reasons"]["backing_kind"]


@pytest.mark.parametrize(
    ("line", "point"),
    [
        (
            mnt(
                11,
                "0:57",
                "/mnt/c",
                "9p",
                "C:\\134",
                "rw,dirsync,aname=drvfs;path=C:\\134;uid=1000;gid=1000;symlinkroot=/mnt/,"
                "mmap,access=client,msize=262144,trans=virtio",
            ),
            "/mnt/c/Users/me/data",
        ),
        (mnt(11, "0:57", "/mnt/d", "drvfs", "D:", "rw,case=off"), "/mnt/d/data"),
        (mnt(11, "0:57", "/mnt/e", "9p", "drvfs", "rw,trans=fd"), "/mnt/e/data"),
    ],
    ids=["wsl2-9p", "wsl1-drvfs", "wsl2-9p-by-mount-point"],
)
def test_wsl_windows_drive_is_drvfs(machine, line: str, point: str) -> None:
    machine.proc_file("sys/kernel/osrelease", WSL2 + "\n")
    machine.proc_file("self/mountinfo", mountinfo(mnt(1, "8:32", "/", "ext4", "/dev/sdc"), line))
    facts = probe(machine, data_dir(machine, point))
    assert (facts["kind"], facts["certain"], facts["disks"]) == ("drvfs", True, [])
    assert failing_rules(storage=facts) == ["EC404"]


def test_plain_9p_outside_wsl_is_network(machine) -> None:
    machine.proc_file("sys/kernel/osrelease", "6.8.0-45-generic\n")
    machine.proc_file(
        "self/mountinfo", mountinfo(mnt(12, "0:57", "/mnt/c", "9p", "C:\\134", "rw,trans=virtio"))
    )
    facts = probe(machine, data_dir(machine, "/mnt/c/data"))
    assert facts["kind"] == "network"


def test_vm_virtio_disk_is_hdd_but_uncertain(machine) -> None:
    disk = machine.block_device("vda", VIRTIO, rotational=1, vendor="0x1af4", sectors=TB)
    machine.block_device("vda1", parent=disk, dev="254:1")
    machine.proc_file("self/mountinfo", mountinfo(mnt(1, "254:1", "/", "ext4", "/dev/vda1")))
    facts = probe(machine, data_dir(machine, "/home/ubuntu/data"))
    assert (facts["kind"], facts["certain"], names(facts)) == ("hdd", False, ["vda"])
    assert facts["disks"][0]["transport"] == "virtio"
    assert "virtio" in facts["notes"][0]
    assert "hypervisor" in facts["notes"][0]
    assert facts["reasons"]["disks.vda.model"] == "no device/model"


def test_perc_raid_volume_is_uncertain(machine) -> None:
    disk = machine.block_device(
        "sda", PERC, rotational=1, model="PERC H730P Mini", vendor="DELL", sectors=TB * 4
    )
    machine.block_device("sda2", parent=disk, dev="8:2")
    machine.proc_file("self/mountinfo", mountinfo(mnt(1, "8:2", "/", "xfs", "/dev/sda2")))
    facts = probe(machine, data_dir(machine, "/scratch"))
    assert (facts["kind"], facts["certain"], names(facts)) == ("hdd", False, ["sda"])
    assert facts["disks"][0]["transport"] == "scsi"
    assert "RAID controller" in facts["notes"][0]


def test_disks_of_different_kinds_give_the_slowest(machine) -> None:
    machine.block_device("nvme0n1", NVME, rotational=0, model="INTEL SSDPE2KX040T8")
    machine.block_device("sda", SATA0, rotational=1, model="ST4000NM0035-1V4")
    machine.block_device("md1", dev="9:1", rotational=0, slaves=["nvme0n1", "sda"])
    machine.proc_file("self/mountinfo", mountinfo(mnt(3, "9:1", "/raid", "ext4", "/dev/md1")))
    facts = probe(machine, data_dir(machine, "/raid"))
    assert (facts["kind"], facts["certain"], names(facts)) == ("hdd", False, ["nvme0n1", "sda"])
    assert "slowest" in facts["notes"][0]


def test_escaped_space_in_the_mount_point(machine) -> None:
    disk = machine.block_device("sdb", SATA1, rotational=0, model="CT1000MX500SSD1")
    machine.block_device("sdb1", parent=disk, dev="8:17")
    machine.proc_file(
        "self/mountinfo",
        mountinfo(
            mnt(1, "0:32", "/", "tmpfs", "none"),
            mnt(2, "8:17", "/mnt/My\\040Data", "ext4", "/dev/sdb1"),
        ),
    )
    facts = probe(machine, data_dir(machine, "/mnt/My Data/train"))
    assert (facts["mount_point"], facts["kind"]) == ("/mnt/My Data", "ssd")


def test_later_mount_on_the_same_point_wins(machine) -> None:
    nvme_root(machine)
    machine.proc_file(
        "self/mountinfo",
        mountinfo(
            mnt(1, "259:2", "/data", "ext4", "/dev/nvme0n1p2"),
            mnt(2, "0:90", "/data", "nfs", "nas:/vol/data"),
        ),
    )
    assert probe(machine, data_dir(machine, "/data/x"))["kind"] == "network"


def test_missing_dir(machine) -> None:
    machine.proc_file("self/mountinfo", mountinfo(mnt(1, "259:2", "/", "ext4", "/dev/nvme0n1p2")))
    missing = machine.root / "no/such/dir"
    facts = probe(machine, missing)
    assert (facts["kind"], facts["certain"], facts["disks"]) == ("unknown", False, None)
    assert "does not exist" in facts["reasons"]["kind"]
    assert facts["resolved"] is None
    assert "resolved" in facts["reasons"]


def test_unreadable_dir(machine, monkeypatch) -> None:
    def denied(path: str) -> tuple[str, bool]:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(bounded, "resolve", denied)
    facts = probe(machine, data_dir(machine, "/data"))
    assert (facts["kind"], facts["certain"]) == ("unknown", False)
    assert "Permission denied" in facts["reasons"]["kind"]


def test_data_that_is_a_file_reports_the_files_storage(machine) -> None:
    nvme_root(machine)
    machine.proc_file("self/mountinfo", mountinfo(mnt(1, "259:2", "/", "ext4", "/dev/nvme0n1p2")))
    archive = machine.root_file("data/train.tar", "x")
    facts = probe(machine, archive)
    assert (facts["kind"], facts["certain"], names(facts)) == ("nvme", True, ["nvme0n1"])
    assert facts["resolved"] == "/data/train.tar"
    assert any("names a file" in note for note in facts["notes"])


@pytest.fixture
def hanging_stat(monkeypatch):
    """bounded.resolve blocks like a stat on a dead NFS server, until the test ends."""
    release = threading.Event()

    def hang(path: str) -> tuple[str, bool]:
        release.wait(30)
        raise OSError(5, "Input/output error", path)

    monkeypatch.setattr(bounded, "resolve", hang)
    yield
    release.set()


@pytest.mark.usefixtures("hanging_stat")
def test_a_hanging_stat_gives_a_reason_not_a_hang(machine) -> None:
    machine.proc_file(
        "self/mountinfo",
        mountinfo(
            mnt(1, "0:32", "/", "ext4", "/dev/root"),
            mnt(7, "0:60", "/mnt/nfs", "nfs4", "deadserver:/export", "rw,hard"),
        ),
    )
    start = time.monotonic()
    facts = probe(machine, machine.root / "mnt/nfs/train", timeout=0.2)
    assert time.monotonic() - start < 3
    assert "did not answer within 0.2 s" in facts["reasons"]["resolved"]
    assert facts["resolved"] is None
    assert (facts["kind"], facts["certain"], facts["mount_point"]) == ("network", False, "/mnt/nfs")


@pytest.mark.usefixtures("hanging_stat")
def test_a_hanging_stat_on_macos_gives_a_reason_not_a_hang(machine) -> None:
    run = FakeRun({("/sbin/mount",): Completed(0, "//me@nas/d on /Volumes/d (smbfs)\n", "")})
    start = time.monotonic()
    facts = probe(machine, machine.root / "Volumes/d/x", system="Darwin", run=run, timeout=0.2)
    assert time.monotonic() - start < 3
    assert "did not answer" in facts["reasons"]["resolved"]
    assert (facts["kind"], facts["certain"]) == ("network", False)


def test_no_mountinfo(machine) -> None:
    facts = probe(machine, data_dir(machine, "/data"))
    assert facts["kind"] == "unknown"
    assert "mountinfo" in facts["reasons"]["kind"]


def test_mount_without_a_block_device(machine) -> None:
    machine.proc_file(
        "self/mountinfo", mountinfo(mnt(1, "0:40", "/", "zfs", "rpool/ROOT/ubuntu", "rw,xattr"))
    )
    facts = probe(machine, data_dir(machine, "/data"))
    assert (facts["kind"], facts["certain"], facts["disks"]) == ("unknown", False, None)
    assert "rpool/ROOT/ubuntu" in facts["reasons"]["kind"]


def test_parse_mountinfo_fields() -> None:
    line = (
        "36 35 98:0 /mnt1 /mnt/a\\040b rw,noatime master:1 shared:7 - ext3 /dev/root "
        "rw,errors=continue"
    )
    (mount,) = mounts.parse_mountinfo(line + "\nnot a mountinfo line\n")
    assert (mount.major, mount.minor, mount.root, mount.mount_point) == (98, 0, "/mnt1", "/mnt/a b")
    assert (mount.fs_type, mount.source, mount.super_options) == (
        "ext3",
        "/dev/root",
        "rw,errors=continue",
    )


def test_unsupported_system(machine) -> None:
    facts = probe(machine, data_dir(machine, "/data"), system="FreeBSD")
    assert facts["kind"] == "unknown"
    assert "FreeBSD" in facts["reasons"]["kind"]


def test_a_bug_becomes_a_reason(machine, monkeypatch) -> None:
    def broken(*args: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(mounts, "parse_mountinfo", broken)
    facts = probe(machine, data_dir(machine, "/data"))
    assert facts["kind"] == "unknown"
    assert "RuntimeError: boom" in facts["reasons"]["kind"]


# -- Windows: one PowerShell call answering JSON -----------------------------------------


class FakeRun:
    """A `run` that answers by argv (prefix match) and records the calls."""

    def __init__(self, answers: dict[tuple[str, ...], Any]):
        self.answers = answers
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], timeout: float) -> Completed:
        self.calls.append(list(argv))
        for prefix, answer in self.answers.items():
            if tuple(argv[: len(prefix)]) == prefix:
                if isinstance(answer, BaseException):
                    raise answer
                if callable(answer):
                    result: Completed = answer(argv)
                    return result
                return answer
        raise FileNotFoundError(2, "No such file or directory", argv[0])


def powershell(payload: Optional[dict[str, Any]], rc: int = 0, stderr: str = "") -> FakeRun:
    stdout = json.dumps(payload, separators=(",", ":")) + "\r\n" if payload is not None else ""
    return FakeRun({("powershell",): Completed(rc, stdout, stderr)})


def script_of(argv: Sequence[str]) -> str:
    return base64.b64decode(argv[-1]).decode("utf-16-le")


def windows(machine, path: str, run: Callable[..., Completed]) -> dict[str, Any]:
    facts = probe(machine, Path(path), system="Windows", run=run)
    assert facts["method"] == "windows-powershell"
    return facts


WIN_NVME = {
    "Resolved": "D:\\datasets\\imagenet",
    "IsFolder": True,
    "Drive": {"Name": "D", "Root": "D:\\", "DisplayRoot": None},
    "FileSystem": "NTFS",
    "Disk": {
        "Number": 1,
        "FriendlyName": "Samsung SSD 980 PRO 1TB",
        "BusType": "NVMe",
        "Size": 1000204886016,
    },
    "PhysicalDisks": {
        "DeviceId": "1",
        "FriendlyName": "Samsung SSD 980 PRO 1TB",
        "MediaType": "SSD",
        "BusType": "NVMe",
        "Size": 1000204886016,
    },
}


def test_windows_nvme_ssd(machine) -> None:
    run = powershell(WIN_NVME)
    facts = windows(machine, "D:\\datasets\\imagenet", run)
    assert (facts["kind"], facts["certain"], names(facts)) == ("nvme", True, ["PhysicalDisk1"])
    assert facts["disks"][0] == {
        "name": "PhysicalDisk1",
        "rotational": False,
        "transport": "nvme",
        "removable": None,
        "model": "Samsung SSD 980 PRO 1TB",
        "size_bytes": 1000204886016,
    }
    assert (facts["mount_point"], facts["fs_type"], facts["device"]) == (
        "D:\\",
        "ntfs",
        "PhysicalDrive1",
    )
    assert facts["source"] == "\\\\.\\PhysicalDrive1"
    (argv,) = run.calls
    assert argv[:4] == ["powershell", "-NoProfile", "-NonInteractive", "-EncodedCommand"]
    script = script_of(argv)
    assert "Get-Item -LiteralPath 'D:\\datasets\\imagenet'" in script
    assert "Get-PhysicalDisk" in script


def test_windows_hdd_sata(machine) -> None:
    payload = {
        "Resolved": "E:\\train",
        "IsFolder": True,
        "Drive": {"Name": "E", "Root": "E:\\", "DisplayRoot": None},
        "FileSystem": "NTFS",
        "Disk": {"Number": 2, "FriendlyName": "ST2000DM008-2FR102", "BusType": "SATA"},
        "PhysicalDisks": [
            {
                "DeviceId": "2",
                "FriendlyName": "ST2000DM008-2FR102",
                "MediaType": "HDD",
                "BusType": "SATA",
                "Size": 2000398934016,
            }
        ],
    }
    facts = windows(machine, "E:\\train", powershell(payload))
    assert (facts["kind"], facts["certain"], names(facts)) == ("hdd", True, ["PhysicalDisk2"])
    assert facts["disks"][0]["transport"] == "sata"


def test_windows_numeric_enumerations(machine) -> None:
    payload = dict(WIN_NVME, PhysicalDisks=[{"DeviceId": "0", "MediaType": 3, "BusType": 11}])
    facts = windows(machine, "D:\\datasets\\imagenet", powershell(payload))
    assert (facts["kind"], facts["disks"][0]["transport"]) == ("hdd", "sata")


def test_windows_usb(machine) -> None:
    payload = {
        "Resolved": "F:\\coco",
        "IsFolder": True,
        "Drive": {"Name": "F", "Root": "F:\\", "DisplayRoot": None},
        "FileSystem": "exFAT",
        "Disk": {"Number": 3, "FriendlyName": "WD Elements 25A3", "BusType": "USB"},
        "PhysicalDisks": [
            {
                "DeviceId": "3",
                "FriendlyName": "WD Elements 25A3",
                "MediaType": "Unspecified",
                "BusType": "USB",
                "Size": 4000787030016,
            }
        ],
    }
    facts = windows(machine, "F:\\coco", powershell(payload))
    assert (facts["kind"], facts["certain"], names(facts)) == ("usb", True, ["PhysicalDisk3"])
    assert facts["disks"][0]["rotational"] is None
    assert facts["reasons"]["disks.PhysicalDisk3.rotational"] == "MediaType is Unspecified"


def test_windows_raid_volume_is_uncertain(machine) -> None:
    payload = dict(
        WIN_NVME,
        PhysicalDisks=[
            {
                "DeviceId": "0",
                "FriendlyName": "DELL PERC H330",
                "MediaType": "HDD",
                "BusType": "RAID",
            }
        ],
    )
    facts = windows(machine, "D:\\datasets\\imagenet", powershell(payload))
    assert (facts["kind"], facts["certain"]) == ("hdd", False)
    assert "RAID" in facts["notes"][0]


def test_windows_mapped_network_drive(machine) -> None:
    payload = {
        "Resolved": "Z:\\imagenet",
        "IsFolder": True,
        "Drive": {"Name": "Z", "Root": "Z:\\", "DisplayRoot": "\\\\nas01\\datasets"},
        "FileSystem": None,
    }
    facts = windows(machine, "Z:\\imagenet", powershell(payload))
    assert (facts["kind"], facts["certain"], facts["disks"]) == ("network", True, [])
    assert (facts["source"], facts["mount_point"]) == ("\\\\nas01\\datasets", "Z:\\")


def test_windows_unc_path_needs_no_powershell(machine) -> None:
    run = FakeRun({})
    facts = windows(machine, "\\\\nas01\\datasets\\imagenet", run)
    assert (facts["kind"], facts["source"]) == ("network", "\\\\nas01\\datasets")
    assert run.calls == []


def test_windows_powershell_missing(machine) -> None:
    run = FakeRun({})
    facts = windows(machine, "C:\\data", run)
    assert (facts["kind"], facts["certain"], facts["disks"]) == ("unknown", False, None)
    assert [argv[0] for argv in run.calls] == ["powershell", "pwsh"]
    assert "could not be started" in facts["reasons"]["kind"]


def test_windows_falls_back_to_pwsh(machine) -> None:
    stdout = json.dumps(WIN_NVME)
    run = FakeRun({("pwsh",): Completed(0, stdout, "")})
    assert windows(machine, "D:\\datasets\\imagenet", run)["kind"] == "nvme"


def test_windows_powershell_hangs(machine) -> None:
    run = FakeRun({("powershell",): subprocess.TimeoutExpired("powershell", 5)})
    facts = windows(machine, "C:\\data", run)
    assert facts["kind"] == "unknown"
    assert "did not answer within 5 s" in facts["reasons"]["kind"]


def test_windows_missing_path(machine) -> None:
    payload = {"Error": "Get-Item: Cannot find path 'C:\\nope' because it does not exist."}
    facts = windows(machine, "C:\\nope", powershell(payload))
    assert facts["kind"] == "unknown"
    assert "does not exist" in facts["reasons"]["kind"]


def test_windows_garbage_output(machine) -> None:
    run = powershell(None, rc=1, stderr="powershell : the term is not recognized\r\n")
    facts = windows(machine, "C:\\data", run)
    assert facts["kind"] == "unknown"
    assert "exit 1" in facts["reasons"]["kind"]


def test_windows_path_quotes_are_escaped() -> None:
    assert "'C:\\it''s data'" in windows_script("C:\\it's data")


# -- macOS: mount, then diskutil info -plist ----------------------------------------------

MAC_MOUNT = """\
/dev/disk3s1s1 on / (apfs, sealed, local, read-only, journaled)
devfs on /dev (devfs, local, nobrowse)
/dev/disk3s6 on /System/Volumes/VM (apfs, local, noexec, journaled, noatime, nobrowse)
/dev/disk3s5 on /System/Volumes/Data (apfs, local, journaled, nobrowse, protect)
map auto_home on /System/Volumes/Data/home (autofs, automounted, nobrowse)
/dev/disk5s2 on /Volumes/Backup Drive (exfat, local, nodev, nosuid, noowners)
//me@nas01._smb._tcp.local/datasets on /Volumes/datasets (smbfs, nodev, nosuid, mounted by me)
"""

PLIST_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN"'
    ' "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n<plist version="1.0">\n<dict>\n'
)

MAC_INTERNAL = (
    PLIST_HEAD
    + """\
\t<key>APFSContainerReference</key>
\t<string>disk3</string>
\t<key>BusProtocol</key>
\t<string>Apple Fabric</string>
\t<key>DeviceIdentifier</key>
\t<string>disk3s1s1</string>
\t<key>DeviceNode</key>
\t<string>/dev/disk3s1s1</string>
\t<key>FilesystemType</key>
\t<string>apfs</string>
\t<key>IORegistryEntryName</key>
\t<string>Macintosh HD</string>
\t<key>Internal</key>
\t<true/>
\t<key>MediaName</key>
\t<string></string>
\t<key>MountPoint</key>
\t<string>/</string>
\t<key>ParentWholeDisk</key>
\t<string>disk3</string>
\t<key>RemovableMedia</key>
\t<false/>
\t<key>SolidState</key>
\t<true/>
\t<key>TotalSize</key>
\t<integer>994662584320</integer>
\t<key>VolumeName</key>
\t<string>Macintosh HD</string>
</dict>
</plist>
"""
)

MAC_USB = (
    PLIST_HEAD
    + """\
\t<key>BusProtocol</key>
\t<string>USB</string>
\t<key>DeviceIdentifier</key>
\t<string>disk5s2</string>
\t<key>DeviceNode</key>
\t<string>/dev/disk5s2</string>
\t<key>Ejectable</key>
\t<true/>
\t<key>FilesystemType</key>
\t<string>exfat</string>
\t<key>Internal</key>
\t<false/>
\t<key>MediaName</key>
\t<string>Elements 25A3</string>
\t<key>MountPoint</key>
\t<string>/Volumes/Backup Drive</string>
\t<key>ParentWholeDisk</key>
\t<string>disk5</string>
\t<key>Removable</key>
\t<false/>
\t<key>RemovableMedia</key>
\t<false/>
\t<key>SolidState</key>
\t<false/>
\t<key>TotalSize</key>
\t<integer>4000787030016</integer>
</dict>
</plist>
"""
)


def mac_run(diskutil: dict[str, str]) -> FakeRun:
    answers: dict[tuple[str, ...], Any] = {("/sbin/mount",): Completed(0, MAC_MOUNT, "")}
    for point, plist in diskutil.items():
        answers[("/usr/sbin/diskutil", "info", "-plist", point)] = Completed(0, plist, "")
    return FakeRun(answers)


def test_macos_internal_ssd(machine) -> None:
    run = mac_run({"/": MAC_INTERNAL})
    facts = probe(machine, data_dir(machine, "/Users/me/data"), system="Darwin", run=run)
    assert facts["method"] == "macos-diskutil"
    assert (facts["kind"], facts["certain"], names(facts)) == ("nvme", True, ["disk3"])
    assert facts["disks"][0] == {
        "name": "disk3",
        "rotational": False,
        "transport": "nvme",
        "removable": False,
        "model": "Macintosh HD",
        "size_bytes": 994662584320,
    }
    assert (facts["mount_point"], facts["fs_type"], facts["device"]) == ("/", "apfs", "disk3s1s1")
    assert failing_rules(storage=facts) == []


def test_macos_external_usb(machine) -> None:
    run = mac_run({"/Volumes/Backup Drive": MAC_USB})
    facts = probe(
        machine, data_dir(machine, "/Volumes/Backup Drive/coco"), system="Darwin", run=run
    )
    assert (facts["kind"], facts["certain"], names(facts)) == ("usb", True, ["disk5"])
    assert facts["disks"][0]["rotational"] is True
    assert facts["source"] == "/dev/disk5s2"
    assert failing_rules(storage=facts) == ["EC402"]


def test_macos_smb_share_is_network_without_diskutil(machine) -> None:
    run = mac_run({})
    facts = probe(machine, data_dir(machine, "/Volumes/datasets/x"), system="Darwin", run=run)
    assert (facts["kind"], facts["fs_type"], facts["disks"]) == ("network", "smbfs", [])
    assert [argv[0] for argv in run.calls] == ["/sbin/mount"]


def test_macos_diskutil_fails(machine) -> None:
    run = FakeRun(
        {
            ("/sbin/mount",): Completed(0, MAC_MOUNT, ""),
            ("/usr/sbin/diskutil",): Completed(1, "", "Could not find disk: /\n"),
        }
    )
    facts = probe(machine, data_dir(machine, "/Users/me"), system="Darwin", run=run)
    assert facts["kind"] == "unknown"
    assert "Could not find disk" in facts["reasons"]["kind"]


def test_macos_missing_dir(machine) -> None:
    facts = probe(machine, machine.root / "nope", system="Darwin", run=mac_run({}))
    assert facts["kind"] == "unknown"
    assert "does not exist" in facts["reasons"]["kind"]


# -- the real machine ---------------------------------------------------------------------


def test_real_machine_tmp_path(tmp_path: Path) -> None:
    ctx = CollectContext(interpreter=current(), data=tmp_path)
    facts = storage.collect(ctx)["storage"]
    assert set(facts) == FIELDS
    assert facts["kind"] is not None
    assert facts["kind"] in storage.KINDS
    assert facts["path"] == str(tmp_path)


def test_output_matches_the_snapshot_schema(machine) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from envcheck.schemas import __file__ as schemas_init

    schema = json.loads((Path(schemas_init).parent / "snapshot.schema.json").read_text())
    section = schema.get("properties", {}).get("storage")
    if section is None:
        pytest.skip("the snapshot schema has no storage section yet")
    validator = jsonschema.Draft202012Validator({**section, "$defs": schema.get("$defs", {})})
    nvme_root(machine)
    machine.proc_file("self/mountinfo", mountinfo(mnt(1, "259:2", "/", "ext4", "/dev/nvme0n1p2")))
    for data in (data_dir(machine, "/data"), machine.root / "missing"):
        validator.validate(probe(machine, data))
    validator.validate(windows(machine, "D:\\datasets\\imagenet", powershell(WIN_NVME)))
