"""flux2's module with the install manifests the flux CLI embeds (``cmd/flux/manifests/*.yaml``,
``go:embed``), which the module leaves out: flux2's ``make build`` bundles them from the
controllers' release assets.

They are assembled here offline, as upstream assembles them, from the Go module proxy only:

- each controller's ``<controller>.crds.yaml`` and ``<controller>.deployment.yaml`` as its release
  workflow makes them (``kustomize build config/crd`` and ``kustomize build config/manager``),
  from its module at the version flux2's ``manifests/bases/<controller>/kustomization.yaml``
  names, checked against ``manifests.sum`` beside this file;
- then flux2's ``manifests/scripts/bundle.sh``: ``kustomize build`` of each base (with those two
  files in place of its release URLs), of ``manifests/rbac`` and of ``manifests/policies``.

    python3 source.py OUT    # writes OUT/flux2 (the module with the manifests) and OUT/replace.json

``toolchain/build.py`` runs this before ``go install`` and builds with the folder's go.mod plus
``replace github.com/fluxcd/flux2/v2 => OUT/flux2``. The copy is of the module cache's source,
which ``go mod download`` checked against go.sum; ``go install -overlay`` cannot place the files
instead, as Go refuses to overlay files beneath GOMODCACHE.
"""
# needs: kustomize
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FLUX2 = "github.com/fluxcd/flux2/v2"
RELEASE_ASSET = re.compile(
    r"^(\s*-\s*)https://github\.com/fluxcd/([\w.-]+)/releases/download/(v[\w.+-]+)/([\w.-]+\.yaml)\s*$")


def go(*args: str) -> dict:
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOWORK": "off", "GOFLAGS": "-mod=readonly"}
    result = subprocess.run(["go", *args], cwd=HERE, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"source.py: go {' '.join(args)}: {result.stderr.strip()}")
    return json.loads(result.stdout)


def pinned_sums() -> dict[tuple[str, str], str]:
    sums = {}
    for line in (HERE / "manifests.sum").read_text().splitlines():
        if line.strip():
            module, version, digest = line.split()
            sums[(module, version)] = digest
    return sums


def module_path(repository: str, version: str) -> str:
    """Go's path of a fluxcd repository's root module at ``version`` (v2 and later end in /vN)."""
    major = int(version.lstrip("v").split(".")[0])
    return f"github.com/fluxcd/{repository}" + (f"/v{major}" if major >= 2 else "")


def controller_source(repository: str, version: str, sums: dict) -> Path:
    """The module's source at ``version``, downloaded through the module proxy (checked by
    GOSUMDB on first download) and compared with the checksum ``manifests.sum`` pins."""
    module = module_path(repository, version)
    if (module, version) not in sums:
        raise SystemExit(f"source.py: {HERE / 'manifests.sum'}: no line for {module} {version} "
                         f"(go mod download -json {module}@{version} prints its Sum)")
    info = go("mod", "download", "-json", f"{module}@{version}")
    if info.get("Sum") != sums[(module, version)]:
        raise SystemExit(f"source.py: {module}@{version}: checksum {info.get('Sum')} is not the one "
                         f"manifests.sum pins ({sums[(module, version)]})")
    return Path(info["Dir"])


def kustomize(folder: Path, output: Path) -> None:
    with output.open("w") as out:
        subprocess.run(["kustomize", "build", str(folder)], stdout=out, check=True)


def bundle(flux2: Path, out: Path, written: Path) -> None:
    """``cmd/flux/manifests``'s files, written into ``written``."""
    sums = pinned_sums()
    bases = out / "bases"
    written.mkdir(parents=True)
    for base in sorted(p for p in (flux2 / "manifests" / "bases").iterdir() if p.is_dir()):
        local = bases / base.name
        shutil.copytree(base, local)
        writable(local)
        lines = []
        for line in (base / "kustomization.yaml").read_text().splitlines():
            match = RELEASE_ASSET.match(line)
            if match:
                indent, repository, version, asset = match.groups()
                source = controller_source(repository, version, sums)
                part = "crd" if asset.endswith(".crds.yaml") else "manager"
                kustomize(source / "config" / part, local / asset)
                line = f"{indent}{asset}"
            lines.append(line)
        (local / "kustomization.yaml").write_text("\n".join(lines) + "\n")
        kustomize(local, written / f"{base.name}.yaml")
    for extra in ("rbac", "policies"):
        kustomize(flux2 / "manifests" / extra, written / f"{extra}.yaml")


def writable(folder: Path) -> None:
    """Copies of the module cache keep its read-only modes: the build and the clean-up write."""
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: source.py OUT", file=sys.stderr)
        return 2
    out = Path(argv[0]).resolve()
    cached = Path(go("mod", "download", "-json", FLUX2)["Dir"])
    module = out / "flux2"
    shutil.copytree(cached, module)
    writable(module)
    bundle(cached, out, module / "cmd" / "flux" / "manifests")
    (out / "replace.json").write_text(json.dumps({FLUX2: str(module)}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
