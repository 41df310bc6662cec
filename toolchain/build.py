"""Build the pinned upstream toolchain from source, once per version.

Each folder beside this file is a Go consumer module: its ``go.mod`` requires one upstream
release and lists the commands to build as ``tool`` directives, its ``go.sum`` pins every
dependency. A build lands in the cache under ``<folder>-<version>/`` with a stamp of everything
that shaped it (go.mod, go.sum, the Go version, the link flags); a second run with the same stamp
builds nothing. ``.toolchain/bin/`` in the project links every command of the current builds.

A folder whose commands embed files their module leaves out (``go:embed`` of generated files)
has a ``source.py``: run with a folder to write into, it writes there a copy of each such module
with the files added, and ``replace.json`` (module path -> that copy). The build then uses the
folder's go.mod with those replacements (``-modfile``), so nothing is written into the module
cache (``go install -overlay`` refuses files beneath GOMODCACHE). A ``# needs: <folder> ...``
line in the script names the toolchain folders whose commands it runs; they are built first and
put on its PATH. The stamp of such a folder covers every file in it.

    python3 toolchain/build.py            # build what is missing, print the bin folder
    python3 toolchain/build.py --check    # exit 1 when a build is missing or stale

A folder may hold its own ``main`` packages over upstream's (a command that links only what runs,
where upstream's one binary links much more); ``WRAPS`` names the release such a command is
named for, and the stamp covers its files. A folder whose go.mod needs a newer Go than the
machine's is built with the one ``$GOTOOLCHAIN`` names (``export GOTOOLCHAIN=go1.27.3``, as the
README says); every other folder with the machine's own Go.

The cache is ``$RLGEN_TOOLCHAIN_CACHE``, else ``$XDG_CACHE_HOME/rlgen/toolchain``, else
``~/.cache/rlgen/toolchain``. Only the standard library is used: this runs before any virtual
environment exists.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
LINKS = HERE.parent / ".toolchain" / "bin"

#: Version stamps the upstream release process sets at link time, so that ``--version`` and the
#: API server's /version answer the pinned release rather than "v0.0.0-master".
LDFLAGS = {
    "kubernetes": ("-X k8s.io/component-base/version.gitVersion={version} "
                   "-X k8s.io/component-base/version.gitMajor={major} "
                   "-X k8s.io/component-base/version.gitMinor={minor} "
                   "-X k8s.io/component-base/version.gitTreeState=clean"),
    "kubeconform": "-X main.version={version}",
    "cyclonus": "-X github.com/mattfenwick/cyclonus/pkg/cli.version={version}",
    "kueue": "-X sigs.k8s.io/kueue/pkg/version.GitVersion={version}",
    # goreleaser's {{ .Version }} (flux2's .goreleaser.yml): no "v"; flux prefixes it to name the
    # release whose manifests it embeds.
    "flux-cli": "-X main.VERSION={release}",
    # Argo CD's Makefile: its VERSION file (no "v"), a clean tree.
    "argocd": "-X github.com/argoproj/argo-cd/v3/common.version={release} "
              "-X github.com/argoproj/argo-cd/v3/common.gitTreeState=clean",
}

#: Builds run side by side. Each ``go install`` compiles on every core; two keep both cores busy
#: through each other's links and serial steps.
BUILDS_AT_ONCE = 2

#: Commands whose package is not named as upstream's release names the binary.
RENAMED = {"go.etcd.io/etcd/server/v3": "etcd"}

#: Folders whose command is a ``main`` of their own (module doc) -> the upstream module it runs.
WRAPS = {"argocd": "github.com/argoproj/argo-cd/v3"}

#: The Go release ``$GOTOOLCHAIN`` names for the folders that need a newer Go than the machine's
#: (Makefile, scripts/ci.sh and the README export it; the generated e2e workflow sets it).
NEWER_GO = "go1.27.3"

#: The script that writes the module sources a folder's ``go:embed`` patterns need (module doc).
SOURCE = "source.py"


@dataclass(frozen=True)
class Module:
    folder: Path
    tools: tuple[str, ...]
    requires: dict[str, str]
    #: The go.mod's ``go`` line: the oldest Go that builds it.
    go: str = "1"

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def version(self) -> str:
        """The releases this folder pins, one per upstream module its tools come from."""
        return "+".join(dict.fromkeys(module_version(self, tool) for tool in self.tools))

    def binaries(self) -> list[str]:
        return [RENAMED.get(tool, go_binary(tool)) for tool in self.tools]

    @property
    def source(self) -> Path | None:
        script = self.folder / SOURCE
        return script if script.is_file() else None

    def needs(self) -> list[str]:
        """The toolchain folders whose commands the source script runs."""
        if not self.source:
            return []
        found = re.search(r"^# needs: (.+)$", self.source.read_text(), re.MULTILINE)
        return found.group(1).split() if found else []


def go_binary(tool: str) -> str:
    """The file ``go install`` writes: the last path element that is not a major version."""
    parts = tool.rstrip("/").split("/")
    return parts[-2] if re.fullmatch(r"v\d+", parts[-1]) else parts[-1]


def module_version(module: Module, tool: str) -> str:
    if module.name in WRAPS:
        tool = WRAPS[module.name]
    owners = [path for path in module.requires if tool == path or tool.startswith(path + "/")]
    if not owners:
        raise SystemExit(f"{module.folder / 'go.mod'}: no require line for the module of {tool}")
    return module.requires[max(owners, key=len)]


def read_module(folder: Path) -> Module:
    text = (folder / "go.mod").read_text()
    tools: list[str] = []
    requires: dict[str, str] = {}
    go = "1"
    block = None
    for raw in text.splitlines():
        line = raw.split("//")[0].strip()
        if not line:
            continue
        if line.endswith("(") and line.split()[0] in {"tool", "require", "replace", "exclude"}:
            block = line.split()[0]
            continue
        if line == ")":
            block = None
            continue
        words = line.split()
        kind, rest = (block, words) if block else (words[0], words[1:])
        if kind == "go" and rest:
            go = rest[0]
        elif kind == "tool" and rest:
            tools.append(rest[0])
        elif kind == "require" and len(rest) >= 2:
            requires[rest[0]] = rest[1]
    if not tools:
        raise SystemExit(f"{folder / 'go.mod'}: no tool directive")
    return Module(folder, tuple(tools), requires, go)


def modules() -> list[Module]:
    return [read_module(p.parent) for p in sorted(HERE.glob("*/go.mod"))]


def cache_root() -> Path:
    if os.environ.get("RLGEN_TOOLCHAIN_CACHE"):
        return Path(os.environ["RLGEN_TOOLCHAIN_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rlgen" / "toolchain"


def release(version: str) -> tuple[int, ...]:
    """``go1.26.8`` or ``1.27.0`` as numbers, to compare."""
    return tuple(int(n) for n in re.findall(r"\d+", version))


def go_env(module: Module | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # The machine's own Go builds, with the checksums of go.sum and nothing from a workspace.
    env.update(GOTOOLCHAIN="local", GOWORK="off", GOFLAGS="-mod=readonly -buildvcs=false", CGO_ENABLED="0")
    if module and release(module.go) > release(local_go()):
        wanted = os.environ.get("GOTOOLCHAIN", "")
        if not re.fullmatch(r"go[\d.]+", wanted) or release(wanted) < release(module.go):
            print(f"toolchain: {module.name} needs Go {module.go} ({module.folder / 'go.mod'}); this machine "
                  f"has {local_go()}: export GOTOOLCHAIN={NEWER_GO} (the README's set-up does)", file=sys.stderr)
            raise SystemExit(2)
        env["GOTOOLCHAIN"] = wanted
    return env


@functools.cache
def local_go() -> str:
    return subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=True,
                          env=go_env()).stdout.strip()


def go_version(module: Module) -> str:
    """The Go that builds ``module``: the machine's, or the newer one ``$GOTOOLCHAIN`` names."""
    env = go_env(module)
    return local_go() if env["GOTOOLCHAIN"] == "local" else env["GOTOOLCHAIN"]


def ldflags(module: Module) -> str:
    version = module.version
    major, minor = (version.lstrip("v").split(".") + ["", ""])[:2]
    flags = LDFLAGS.get(module.name, "").format(version=version, major=major, minor=minor,
                                                 release=version.lstrip("v"))
    return ("-s -w " + flags).strip()


def stamp(module: Module) -> str:
    digest = hashlib.sha256()
    for part in ((module.folder / "go.mod").read_bytes(), (module.folder / "go.sum").read_bytes(),
                 go_version(module).encode(), ldflags(module).encode()):
        digest.update(hashlib.sha256(part).digest())
    # A source script and what it reads (the versions and checksums it pins), a main package of the
    # folder's own: they shape the build too. A folder of go.mod and go.sum alone adds nothing here.
    for path in sorted(p for p in module.folder.rglob("*") if p.is_file() and p.name not in ("go.mod", "go.sum")):
        name = path.relative_to(module.folder).as_posix()
        digest.update(hashlib.sha256(name.encode() + b"\0" + path.read_bytes()).digest())
    return digest.hexdigest()


def destination(module: Module) -> Path:
    return cache_root() / f"{module.name}-{module.version}"


def is_current(module: Module) -> bool:
    dest = destination(module)
    stamp_file = dest / "stamp"
    return (stamp_file.is_file() and stamp_file.read_text().strip() == stamp(module)
            and all((dest / "bin" / b).is_file() for b in module.binaries()))


def with_sources(module: Module, out: Path) -> Path:
    """Run the folder's source script into ``out``; return a go.mod that builds with its copies."""
    tools = [str(destination(m) / "bin") for m in modules() if m.name in module.needs()]
    subprocess.run([sys.executable, str(module.source), str(out)], cwd=module.folder, check=True,
                   env=go_env(module) | {"PATH": os.pathsep.join([*tools, os.environ.get("PATH", "")])})
    replace = json.loads((out / "replace.json").read_text())
    text = (module.folder / "go.mod").read_text()
    text += "".join(f"\nreplace {path} => {folder}\n" for path, folder in sorted(replace.items()))
    (out / "go.mod").write_text(text)
    # -modfile reads go.sum beside the go.mod it is given.
    shutil.copyfile(module.folder / "go.sum", out / "go.sum")
    return out / "go.mod"


def build(module: Module) -> float:
    """Build into a temporary folder beside the cache entry, then rename: never half-written."""
    dest = destination(module)
    dest.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f".{dest.name}-", dir=dest.parent) as tmp:
        staged = Path(tmp) / "entry"
        (staged / "bin").mkdir(parents=True)
        env = go_env(module) | {"GOBIN": str(staged / "bin")}
        flags = [f"-modfile={with_sources(module, Path(tmp) / 'source')}"] if module.source else []
        subprocess.run(["go", "install", "-trimpath", f"-ldflags={ldflags(module)}", *flags, "tool"],
                       cwd=module.folder, env=env, check=True)
        for tool in module.tools:
            if tool in RENAMED:
                (staged / "bin" / go_binary(tool)).rename(staged / "bin" / RENAMED[tool])
        missing = [b for b in module.binaries() if not (staged / "bin" / b).is_file()]
        if missing:
            raise SystemExit(f"toolchain: {module.name}: go install wrote no {', '.join(missing)}")
        (staged / "stamp").write_text(stamp(module) + "\n")
        if dest.exists():
            shutil.rmtree(dest)
        staged.rename(dest)
    return time.monotonic() - started


def download(modules: list[Module]) -> dict[str, int]:
    """Fetch every module's sources at once (the network overlaps instead of waiting between
    compiles) and answer how many packages each build compiles: its cost, to start the slowest
    first."""
    def one(module: Module) -> int:
        # Listing the tools' packages fetches exactly the modules their build needs. -e: a source
        # script's files are not written yet, which fails the listing, not the download.
        listed = subprocess.run(["go", "list", *(["-e"] if module.source else []), "-deps", "tool"],
                                cwd=module.folder, env=go_env(module), check=True, stdout=subprocess.PIPE, text=True)
        return len(listed.stdout.split())

    with ThreadPoolExecutor(max_workers=len(modules) or 1) as pool:
        return dict(zip((m.name for m in modules), pool.map(one, modules)))


def build_logged(module: Module) -> None:
    print(f"toolchain: building {module.name} {module.version} ({', '.join(module.binaries())})", file=sys.stderr)
    seconds = build(module)
    print(f"toolchain: built {module.name} {module.version} in {seconds:.0f} s", file=sys.stderr)


def build_all(stale: list[Module], packages: dict[str, int]) -> None:
    """Two builds at once, each started as soon as the folders its source script needs are built:
    what another build needs first, then the most packages first. One build's links and serial
    steps leave a core idle that the other's compiles take, and the last to finish is a short one."""
    needed = {need for m in stale for need in m.needs()}
    waiting = sorted(stale, key=lambda m: (m.name not in needed, -packages[m.name]))
    done: set[str] = {m.name for m in modules()} - {m.name for m in stale}
    running: dict = {}
    with ThreadPoolExecutor(max_workers=BUILDS_AT_ONCE) as pool:
        while waiting or running:
            ready = [m for m in waiting if set(m.needs()) <= done]
            while ready and len(running) < BUILDS_AT_ONCE:
                module = ready.pop(0)
                waiting.remove(module)
                running[pool.submit(build_logged, module)] = module.name
            if not running:
                raise SystemExit(f"toolchain: {', '.join(m.name for m in waiting)} need folders that are not built")
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                future.result()  # a failed build stops the rest
                done.add(running.pop(future))


def link(module: Module) -> None:
    LINKS.mkdir(parents=True, exist_ok=True)
    for binary in module.binaries():
        target = destination(module) / "bin" / binary
        tmp = LINKS / f".{binary}.tmp"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target)
        tmp.replace(LINKS / binary)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a build is missing or stale")
    parser.add_argument("names", nargs="*", help="folders to build (default: all)")
    args = parser.parse_args(argv)
    if shutil.which("go") is None:
        print("toolchain: the go command is not on PATH (Go 1.26 builds the pinned tools)", file=sys.stderr)
        return 2
    every = modules()
    names = set(args.names or (m.name for m in every))
    # A source script's tools are built before it runs: first in the order, and chosen with it.
    names |= {need for m in every if m.name in names for need in m.needs()}
    chosen = sorted((m for m in every if m.name in names), key=lambda m: bool(m.source))
    stale = [m for m in chosen if not is_current(m)]
    if args.check:
        for m in stale:
            print(f"toolchain: {m.name} {m.version} is not built for {go_version(m)}", file=sys.stderr)
        return 1 if stale else 0
    build_all(stale, download(stale))
    for m in chosen:
        link(m)
    print(LINKS)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as err:
        print(f"toolchain: {' '.join(err.cmd[:2])} failed with exit {err.returncode}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
