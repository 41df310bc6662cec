"""A plain ``pip install rlgen`` (what a generated repository's CI runs) leaves the cluster
client, the data stack and cookiecutter out: the commands that need them say which extra to install, in one
line, and the commands of the CI never import them."""
from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

from support.repos import REPO, one_error_line

# A module set to None in sys.modules is one Python cannot import or find: as if not installed.
WITHOUT = "import sys\nfor m in {modules!r}: sys.modules[m] = None\nsys.argv = ['rlgen', *{args!r}]\n" \
          "from rlgen.cli import main\nmain()\n"


def rlgen_without(modules: list[str], *args: str, cwd) -> subprocess.CompletedProcess:
    code = WITHOUT.format(modules=modules, args=list(args))
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True)


def test_the_cluster_client_the_data_stack_and_cookiecutter_are_extras():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    core = " ".join(project["dependencies"])
    assert not {"kubernetes", "datasets", "pyarrow", "cookiecutter"} & set(core.replace(">", " ").split())
    extras = project["optional-dependencies"]
    assert any(d.startswith("kubernetes") for d in extras["cluster"])
    assert any(d.startswith("datasets") for d in extras["data"])
    assert any(d.startswith("cookiecutter") for d in extras["template"])
    assert "rlgen[data,cluster,template]" in extras["test"]


@pytest.mark.parametrize("command", ["doctor", "status"])
def test_cluster_commands_without_the_extra_name_it(repo, command):
    line = one_error_line(rlgen_without(["kubernetes"], command, cwd=repo))
    assert "pip install 'rlgen[cluster]'" in line and "kubernetes" in line


def test_data_commands_without_the_extra_name_it(tmp_path):
    line = one_error_line(rlgen_without(["pyarrow", "datasets"], "data", "prepare", "--dataset", "gsm8k",
                                        "--out", str(tmp_path / "out"), cwd=tmp_path))
    assert "pip install 'rlgen[data]'" in line
    line = one_error_line(rlgen_without(["alibabacloud_oss_v2"], "data", "upload", str(tmp_path),
                                        "oss://bucket/prefix", cwd=tmp_path))
    assert "pip install 'rlgen[data]'" in line


def test_a_team_template_without_the_extra_names_it(tmp_path):
    template = tmp_path / "team"
    template.mkdir()
    (template / "cookiecutter.json").write_text('{"project_slug": "x"}')
    line = one_error_line(rlgen_without(["cookiecutter"], "new", str(tmp_path / "repo"), "--no-input",
                                        "--template", str(template), cwd=tmp_path))
    assert "pip install 'rlgen[template]'" in line and "cookiecutter" in line
    assert not (tmp_path / "repo").exists()


def test_validate_and_diff_need_no_extra(repo):
    """The generated CI's two commands run where no extra is installed."""
    hidden = ["kubernetes", "urllib3", "requests", "cookiecutter", "arrow", "datasets", "pyarrow", "huggingface_hub",
              "modelscope", "alibabacloud_oss_v2"]
    result = rlgen_without(hidden, "validate", "--offline", "-o", "json", cwd=repo)
    assert result.returncode == 0, result.stderr
    result = rlgen_without(hidden, "diff", "--base", "HEAD", "-o", "json", cwd=repo)
    assert result.returncode == 0, result.stderr
