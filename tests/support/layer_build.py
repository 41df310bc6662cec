"""The builder the images tests give ``images/build.sh`` as IMAGE_BUILD: no Docker daemon runs
here and the real bases (verl's images, python) are not reachable offline, so the build context
is laid as one layer (under ``/context``) onto a stand-in base already in the local registry, and
pushed to the reference by ``crane append`` (the toolchain's crane, go-containerregistry).

    python layer_build.py BASE CONTEXT REFERENCE

The Dockerfile's steps are not run: what the tests check is which images the script builds,
where they land and that each holds its context's files.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path


def layer(context: Path) -> bytes:
    """The context's files as a reproducible tar: sorted, owned by root, no timestamps."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(p for p in context.rglob("*") if p.is_file()):
            info = tarfile.TarInfo("context/" + path.relative_to(context).as_posix())
            data = path.read_bytes()
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def main(base: str, context: str, reference: str) -> int:
    crane = os.environ["CRANE"]
    with tempfile.TemporaryDirectory() as tmp:
        tar = Path(tmp) / "context.tar"
        tar.write_bytes(layer(Path(context)))
        return subprocess.run([crane, "append", "--base", base, "--new_layer", str(tar),
                               "--new_tag", reference]).returncode


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
