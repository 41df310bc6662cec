"""Regenerate the CRD-derived schemas of rlgen's catalog from the pinned upstream CRDs.

    python scripts/update_schemas.py           # rewrite generator/rlgen/schemas/catalog/crds + SOURCES.json
    python scripts/update_schemas.py --check   # exit 1, naming each file, when the shipped files differ

Each file of upstream/crds/MANIFEST.json is checked against its sha256, converted with rlgen's
own converter (`rlgen schemas import --compact`), and the outputs the manifest keeps replace
the catalog's. Entries of SOURCES.json that were not converted (the Kubernetes core schemas,
the hand-derived AlbConfig) are kept as they are; their files are checked against their sha256.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CONVERTED = "converted"
UPSTREAM = CATALOG = SOURCES = Path()


def use_root(root: Path) -> None:
    global UPSTREAM, CATALOG, SOURCES
    UPSTREAM = root / "upstream" / "crds"
    CATALOG = root / "generator" / "rlgen" / "schemas" / "catalog"
    SOURCES = CATALOG / "SOURCES.json"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fresh_files() -> tuple[dict[str, bytes], dict[str, dict]]:
    """{catalog path: bytes} and {catalog path: source entry} of every CRD-derived schema."""
    manifest = json.loads((UPSTREAM / "MANIFEST.json").read_text(encoding="utf-8"))["files"]
    files, sources = {}, {}
    with tempfile.TemporaryDirectory(prefix="rlgen-schemas-") as scratch:
        for entry in manifest:
            crd = UPSTREAM / entry["file"]
            if sha256(crd.read_bytes()) != entry["sha256"]:
                sys.exit(f"{crd}: sha256 differs from upstream/crds/MANIFEST.json")
            out = Path(scratch) / entry["file"]
            subprocess.run([sys.executable, "-m", "rlgen", "schemas", "import", "--compact", "--out", str(out),
                            str(crd)], check=True, stdout=subprocess.DEVNULL)
            for name in entry["schemas"]:
                data = (out / name).read_bytes()
                files[f"crds/{name}"] = data
                sources[f"crds/{name}"] = {
                    "url": entry["url"], "version": f"{entry['repository']} {entry['version']} ({entry['commit']})",
                    "upstream_sha256": entry["sha256"], "sha256": sha256(data),
                    "made": f"{CONVERTED}: rlgen schemas import --compact upstream/crds/{entry['file']}",
                }
    return files, sources


def planned() -> tuple[dict[str, bytes], dict]:
    """The catalog's files as they should be, and the SOURCES.json that describes them."""
    files, sources = fresh_files()
    kept = {path: entry for path, entry in json.loads(SOURCES.read_text(encoding="utf-8")).items()
            if not entry["made"].startswith(CONVERTED)}
    for path, entry in kept.items():
        files[path] = (CATALOG / path).read_bytes()
        if sha256(files[path]) != entry["sha256"]:
            sys.exit(f"{CATALOG / path}: sha256 differs from SOURCES.json (edit both together)")
    sources.update(kept)
    return files, dict(sorted(sources.items()))


def shipped() -> dict[str, bytes]:
    return {p.relative_to(CATALOG).as_posix(): p.read_bytes()
            for p in sorted(CATALOG.rglob("*.json")) if p != SOURCES}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when anything differs")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                        help="project checkout holding upstream/ and generator/ (default: this one)")
    args = parser.parse_args()
    use_root(args.root.resolve())
    files, sources = planned()
    sources_text = (json.dumps(sources, indent=2) + "\n").encode()
    current = shipped()
    stale = sorted(set(current) - set(files))
    changed = sorted(path for path, data in files.items() if current.get(path) != data)
    if SOURCES.read_bytes() != sources_text:
        changed.append("SOURCES.json")
    if args.check:
        for path in changed + stale:
            print(f"{CATALOG / path}: differs from a fresh conversion (run make schemas)")
        return 1 if changed or stale else 0
    for path in stale:
        (CATALOG / path).unlink()
    for path, data in files.items():
        (CATALOG / path).parent.mkdir(parents=True, exist_ok=True)
        (CATALOG / path).write_bytes(data)
    SOURCES.write_bytes(sources_text)
    for path in changed + stale:
        print(CATALOG / path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
