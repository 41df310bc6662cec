"""What ``rlgen e2e`` builds and runs: the toolchain's own pins (the package ships toolchain/, not
a copy), a pool shaped from the repository's pods, and one line when a program is missing."""
from __future__ import annotations

import os

from support.repos import one_error_line, run_rlgen
from support.toolchain import PROJECT, pinned

from rlgen.e2e import programs
from rlgen.e2e.cluster import pool_of
from rlgen.kube.needs import Needs, PodShape, RayJobNeed


def test_the_package_builds_and_reads_the_projects_toolchain():
    assert programs.TOOLCHAIN.resolve() == (PROJECT / "toolchain").resolve()
    for module, folder in programs.FOLDERS.items():
        assert programs.pinned(module) == pinned(folder, module)
    assert set(programs.TOOL_FOLDERS) <= {p.name for p in (PROJECT / "toolchain").iterdir() if p.is_dir()}


def test_the_pool_has_the_labels_taints_and_devices_the_gpu_pods_ask_for():
    lingjun = (("key", "node-role.alibabacloud.com/lingjun"), ("operator", "Exists"))
    gpu = PodShape("workers", 2, 8, (lingjun,), (("aliyun.accelerator/nvidia_name", "NVIDIA-H20"),))
    head = PodShape("head", 1, 0, ((("key", "dedicated"), ("operator", "Exists"), ("effect", "NoSchedule")),), ())
    needs = Needs(rayjobs=[RayJobNeed("trainer", "rl-training", "K8sJobMode", [head, gpu])], extended={"rdma/hca"})
    pool = pool_of(needs, 8, 3)
    assert pool.taints == [{"key": "node-role.alibabacloud.com/lingjun", "value": "true", "effect": "NoSchedule"}]
    assert pool.labels == {"node-role.alibabacloud.com/lingjun": "true", "aliyun.accelerator/nvidia_name": "NVIDIA-H20"}
    assert pool.describe() == ("3 node(s) of 8 nvidia.com/gpu, rdma/hca, "
                               "taint node-role.alibabacloud.com/lingjun=true:NoSchedule")


def test_a_program_missing_from_path_is_one_line_naming_it(generate):
    repo = generate()
    result = run_rlgen("e2e", str(repo), env={**os.environ, "PATH": "/nonexistent"})
    line = one_error_line(result)
    assert line.startswith("rlgen: error: not on PATH: etcd, kube-apiserver,") and "kubectl" in line, line


def test_an_unknown_cluster_is_one_line_naming_the_clusters(generate):
    line = one_error_line(run_rlgen("e2e", str(generate()), "--cluster", "nope"))
    assert line == f"rlgen: error: --cluster: no cluster 'nope' syncs {generate()} (clusters/: production)", line


def test_install_tools_links_the_pinned_builds_and_prints_the_folder_once(tmp_path):
    from support.toolchain import BIN, build, tool

    for name in ("etcd", "kube-apiserver", "kwok", "ray-operator", "source-controller"):
        tool(name)  # built: the install below finds every stamp current and builds nothing
    env = {**os.environ, "RLGEN_TOOLCHAIN_CACHE": str(build.cache_root())}
    result = run_rlgen("e2e", "--install-tools", str(tmp_path / "tools"), env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{tmp_path / 'tools' / 'bin'}\n"
    linked = {p.name: p.resolve() for p in (tmp_path / "tools" / "bin").iterdir()}
    # Every program a run needs but the runner's own (age comes with age-keygen).
    needed = set(programs.PROGRAMS + programs.SOPS_PROGRAMS) - {"kubectl", "openssl", "git", "go"}
    assert set(linked) == needed | {"age"}
    assert all(target == (BIN / name).resolve() for name, target in linked.items())
