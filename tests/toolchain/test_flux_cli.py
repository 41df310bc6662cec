"""The flux CLI built from flux2's module: the release it says it is, and the install manifests it
embeds (assembled by ``toolchain/flux-cli/source.py``) naming the controller releases the control
plane runs, with the CRDs of their modules."""
from __future__ import annotations

import re
import shutil
import subprocess

from ruamel.yaml import YAML
from support.toolchain import PROJECT, TOOLCHAIN, build, module_dir, pinned, tool

FLUX2 = "github.com/fluxcd/flux2/v2"
CONTROLLERS = ("source-controller", "kustomize-controller", "notification-controller")


def flux(*args: str) -> str:
    result = subprocess.run([tool("flux"), *args], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_flux_answers_the_pinned_release():
    assert flux("--version").strip() == f"flux version {pinned('flux-cli', FLUX2).lstrip('v')}"


def test_flux_install_applies_the_controllers_the_control_plane_runs_with_their_crds():
    docs = [d for d in YAML(typ="safe").load_all(flux("install", "--export")) if d]
    images = {c["image"] for d in docs if d["kind"] == "Deployment"
              for c in d["spec"]["template"]["spec"]["containers"]}
    for name in CONTROLLERS:
        version = pinned("flux", f"github.com/fluxcd/{name}")
        assert f"ghcr.io/fluxcd/{name}:{version}" in images, sorted(images)
    exported = {d["metadata"]["name"]: d for d in docs if d["kind"] == "CustomResourceDefinition"}
    for name in CONTROLLERS:
        bases = module_dir("flux", f"github.com/fluxcd/{name}") / "config" / "crd" / "bases"
        for path in sorted(bases.glob("*.yaml")):
            crd = YAML(typ="safe").load(path.read_text())
            # The same schema as the module the controller process runs, under flux's labels.
            assert exported[crd["metadata"]["name"]]["spec"] == crd["spec"], path.name


def bundled_versions() -> dict[str, str]:
    """Controller -> the release flux2's manifests/bases/<controller>/kustomization.yaml names."""
    bases = module_dir("flux-cli", FLUX2) / "manifests" / "bases"
    found = {}
    for kustomization in sorted(bases.glob("*/kustomization.yaml")):
        (version,) = set(re.findall(r"/releases/download/(v[^/]+)/", kustomization.read_text()))
        found[kustomization.parent.name] = version
    return found


def test_the_cli_release_bundles_the_controller_releases_the_control_plane_runs():
    bundled = bundled_versions()
    for name in CONTROLLERS:
        assert bundled[name] == pinned("flux", f"github.com/fluxcd/{name}"), name
    # source.py checks each controller module it reads against these checksums: one per release.
    sums = (TOOLCHAIN / "flux-cli" / "manifests.sum").read_text().split("\n")
    pinned_sums = {line.split()[0].removeprefix("github.com/fluxcd/").split("/v")[0]: line.split()[1]
                   for line in sums if line}
    assert pinned_sums == bundled


def test_the_cli_build_is_keyed_by_the_script_and_the_checksums_it_reads(tmp_path):
    folder = tmp_path / "flux-cli"
    shutil.copytree(PROJECT / "toolchain" / "flux-cli", folder, ignore=shutil.ignore_patterns("__pycache__"))
    module = build.read_module(folder)
    assert module.needs() == ["kustomize"]
    before = build.stamp(module)
    (folder / "manifests.sum").write_text((folder / "manifests.sum").read_text().replace("v1.9.3", "v1.9.4"))
    assert build.stamp(module) != before
