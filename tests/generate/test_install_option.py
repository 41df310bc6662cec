"""``rlgen.install``: how the generated CI and the data image install rlgen, said once."""
from __future__ import annotations

import pytest
from rlgen import __version__
from rlgen.generate.dataset_job import DATA_PACKAGES
from rlgen.tools import yamlio
from support.repos import REQUIRED, one_error_line, run_rlgen

GIT = "rlgen @ git+https://git.example.com/platform/rlgen.git@v0.1.0"
INDEX = "--index-url https://pypi.example.com/simple"
PACKAGES = " ".join(f'"{p}"' for p in DATA_PACKAGES)


def install_lines(repo) -> dict[str, list[str]]:
    files = [".github/workflows/validate.yaml", ".github/workflows/diff.yaml", "images/data/Dockerfile"]
    return {name: [line.strip() for line in (repo / name).read_text().splitlines() if "pip install" in line]
            for name in files}


def test_default_is_this_version_from_the_package_index(generate):
    repo = generate()
    assert install_lines(repo) == {
        ".github/workflows/validate.yaml": [f"pip install rlgen=={__version__}"],
        ".github/workflows/diff.yaml": [f"pip install rlgen=={__version__}"],
        "images/data/Dockerfile": [f"RUN pip install --no-cache-dir 'rlgen[data]=={__version__}' {PACKAGES} \\"],
    }
    assert "install" not in (yamlio.load((repo / "rlgen.yaml").read_text())["options"].get("rlgen") or {})


def test_a_git_tag_and_an_index_url_reach_the_ci_and_the_data_image(generate):
    repo = generate("--set", f"rlgen.install={GIT} {INDEX}")
    lines = install_lines(repo)
    expected = f"pip install '{GIT}' {INDEX}"
    assert lines[".github/workflows/validate.yaml"] == lines[".github/workflows/diff.yaml"] == [expected]
    (docker,) = lines["images/data/Dockerfile"]
    assert docker.startswith(f"RUN pip install --no-cache-dir 'rlgen[data] @ git+https://git.example.com/"
                             f"platform/rlgen.git@v0.1.0' {INDEX} ")
    # Written once, in rlgen.yaml, where regeneration reads it.
    assert yamlio.load((repo / "rlgen.yaml").read_text())["options"]["rlgen"]["install"] == f"{GIT} {INDEX}"


@pytest.mark.parametrize("value, message", [
    ("numpy==2.0", "the requirement must name rlgen, not 'numpy'"),
    ("rlgen==0.1.0 --user", "'--user': only --index-url"),
    ("rlgen==0.1.0 --index-url", "--index-url needs a value"),
    ("rlgen===", "not a pip requirement"),
])
def test_a_bad_install_is_refused_before_anything_is_written(tmp_path, value, message):
    result = run_rlgen("new", str(tmp_path / "repo"), "--no-input", *REQUIRED, "--set", f"rlgen.install={value}")
    line = one_error_line(result)
    assert line.startswith("rlgen: error: rlgen.install: ") and message in line
    assert not (tmp_path / "repo").exists()
