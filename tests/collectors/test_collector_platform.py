"""platform collector: container detection and WSL, from a fake root, /proc and environment."""

from __future__ import annotations

import platform as stdlib_platform

import pytest

from envcheck.collectors import platform

KUBEPODS_CGROUP = (
    "12:memory:/kubepods/burstable/pod1234/abcdef\n"
    "11:cpu,cpuacct:/kubepods/burstable/pod1234/abcdef\n"
)
DOCKER_CGROUP = "12:memory:/docker/0123456789abcdef\n1:name=systemd:/docker/0123456789abcdef\n"
LIBPOD_CGROUP = "0::/machine.slice/libpod-0123456789abcdef.scope\n"
HOST_CGROUP = "0::/init.scope\n"


def _platform(machine, environ=None, osrelease: str = "6.5.0-35-generic") -> dict:
    machine.proc_file("sys/kernel/osrelease", osrelease + "\n")
    return platform.collect(machine.ctx(environ))["platform"]


@pytest.mark.parametrize(
    ("root_files", "cgroup", "environ", "expected"),
    [
        ([".dockerenv"], None, {}, "docker"),
        (["run/.containerenv"], None, {}, "podman"),
        ([], None, {"container": "podman"}, "podman"),
        ([], None, {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, "k8s"),
        ([], KUBEPODS_CGROUP, {}, "k8s"),
        ([], DOCKER_CGROUP, {}, "docker"),
        ([], LIBPOD_CGROUP, {}, "podman"),
        ([".dockerenv"], None, {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, "k8s"),
        ([".dockerenv"], KUBEPODS_CGROUP, {}, "docker"),
        ([], HOST_CGROUP, {}, None),
        ([], None, {"KUBERNETES_SERVICE_HOST": ""}, None),
        ([], None, {}, None),
    ],
    ids=[
        "dockerenv",
        "containerenv",
        "container-env-var",
        "k8s-env",
        "k8s-cgroup",
        "docker-cgroup",
        "libpod-cgroup",
        "k8s-env-beats-dockerenv",
        "dockerenv-beats-cgroup",
        "host-cgroup",
        "empty-k8s-env",
        "nothing",
    ],
)
def test_container_detection(machine, root_files, cgroup, environ, expected) -> None:
    for rel in root_files:
        machine.root_file(rel)
    if cgroup is not None:
        machine.proc_file("1/cgroup", cgroup)
    assert _platform(machine, environ)["container"] == expected


@pytest.mark.parametrize(
    ("osrelease", "environ", "wsl", "version"),
    [
        ("5.15.90.1-microsoft-standard-WSL2", {}, True, 2),
        ("4.19.128-microsoft-standard", {}, True, 2),
        ("4.4.0-19041-Microsoft", {}, True, 1),
        ("4.4.0-19041-Microsoft", {"WSL_INTEROP": "/run/WSL/1_interop"}, True, 2),
        ("6.5.0-35-generic", {}, False, None),
        ("5.10.0-28-cloud-amd64", {"WSL_INTEROP": "/run/WSL/1_interop"}, False, None),
    ],
    ids=["wsl2", "wsl2-lowercase", "wsl1", "wsl-interop", "plain", "plain-with-interop"],
)
def test_wsl(machine, osrelease, environ, wsl, version) -> None:
    facts = _platform(machine, environ, osrelease)
    assert facts["release"] == osrelease
    assert facts["wsl"] is wsl
    assert facts["wsl_version"] == version


def test_interpreter_section_and_python_version(machine) -> None:
    ctx = machine.ctx()
    machine.proc_file("sys/kernel/osrelease", "6.5.0-35-generic")
    sections = platform.collect(ctx)
    assert sections["interpreter"] == ctx.interpreter.to_json()
    assert sections["platform"]["python"] == ctx.interpreter.version
    assert sections["platform"]["python_implementation"] == ctx.interpreter.implementation


def test_missing_osrelease_falls_back_to_uname(machine) -> None:
    facts = platform.collect(machine.ctx())["platform"]
    assert facts["release"] == stdlib_platform.uname().release
