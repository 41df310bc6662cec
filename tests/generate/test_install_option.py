"""``rlgen.install``: how the generated CI and the data image install rlgen, said once."""
from __future__ import annotations

import json
from importlib import metadata

import pytest
from rlgen.generate.dataset_job import DATA_PACKAGES
from rlgen.plugin_host import install
from rlgen.tools import yamlio
from support.repos import POOL, GIT_URL, INSTALL, REGISTRY, REQUIRED, error_list, one_error_line, run_rlgen, storage_answers

GIT = "rlgen @ git+https://git.example.com/platform/rlgen.git@v0.1.0"
INDEX = "--index-url https://pypi.example.com/simple"
PINNED = INSTALL.removeprefix("rlgen==")
PACKAGES = " ".join(f'"{p}"' for p in DATA_PACKAGES)


def install_lines(repo) -> dict[str, list[str]]:
    files = [".github/workflows/validate.yaml", ".github/workflows/diff.yaml", ".github/workflows/cluster-status.yaml",
             "images/data/Dockerfile"]
    return {name: [line.strip() for line in (repo / name).read_text().splitlines() if "pip install" in line]
            for name in files}


def test_the_answer_reaches_the_ci_and_the_data_image(generate):
    repo = generate()  # rlgen.install=INSTALL, as every test answers it
    assert install_lines(repo) == {
        ".github/workflows/validate.yaml": [f"pip install rlgen=={PINNED}"],
        ".github/workflows/diff.yaml": [f"pip install rlgen=={PINNED}"],
        # rlgen status reads the cluster: the client is the extra rlgen[cluster].
        ".github/workflows/cluster-status.yaml": [f"pip install 'rlgen[cluster]=={PINNED}'"],
        "images/data/Dockerfile": [f"RUN pip install --no-cache-dir 'rlgen[data]=={PINNED}' {PACKAGES} \\"],
    }
    # An index release needs no git in the slim image.
    assert "git" not in (repo / "images" / "data" / "Dockerfile").read_text().replace("rlgen.git", "")


def test_an_editable_install_without_an_answer_is_refused_as_the_missing_answer(tmp_path):
    """The tests run an editable install: nothing an image build could install from. It is
    the missing answer, with why, before anything is generated."""
    result = run_rlgen("new", str(tmp_path / "repo"), "--no-input", "--set", f"rlgen.registry={REGISTRY}", *POOL,
                       "--set", f"rlgen.git_url={GIT_URL}", "--set", "rlgen.git_host=generic-hmac", *storage_answers())
    line, (item,) = error_list(result)
    assert line.startswith("rlgen: error: a required answer is missing: give each with --set")
    assert item.startswith("--set rlgen.install=VALUE (pip requirement of rlgen")
    assert "this rlgen is an editable install" in item
    assert not (tmp_path / "repo").exists()


def _dist(tmp_path, direct_url: dict | None):
    info = tmp_path / "rlgen-0.3.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rlgen\nVersion: 0.3.0\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return metadata.PathDistribution(info)


COMMIT = "4f0c2a9e8b1d6c3f5a7e9b0d2c4f6a8e0b1d3c5f"


@pytest.mark.parametrize("direct_url, requirement", [
    (None, "rlgen==0.3.0"),
    ({"url": "https://git.example.com/platform/rlgen.git", "vcs_info": {"vcs": "git", "commit_id": COMMIT,
                                                                        "requested_revision": "v0.3.0"}},
     f"rlgen @ git+https://git.example.com/platform/rlgen.git@{COMMIT}"),
    ({"url": "https://git.example.com/mono.git", "subdirectory": "tools/rlgen",
      "vcs_info": {"vcs": "git", "commit_id": COMMIT}},
     f"rlgen @ git+https://git.example.com/mono.git@{COMMIT}#subdirectory=tools/rlgen"),
    ({"url": "https://files.example.com/rlgen-0.3.0-py3-none-any.whl",
      "archive_info": {"hashes": {"sha256": "ab" * 32}}},
     f"rlgen @ https://files.example.com/rlgen-0.3.0-py3-none-any.whl#sha256={'ab' * 32}"),
    ({"url": "https://me:s3cret@files.example.com/rlgen-0.3.0.tar.gz", "archive_info": {}},
     "rlgen @ https://files.example.com/rlgen-0.3.0.tar.gz"),
], ids=["index", "vcs", "vcs-subdirectory", "archive-url", "no-password"])
def test_the_default_is_where_this_rlgen_came_from(tmp_path, direct_url, requirement):
    assert install.installed_source(_dist(tmp_path, direct_url)) == (requirement, "")
    assert install.install_error(requirement) is None


@pytest.mark.parametrize("direct_url, why", [
    ({"url": "file:///home/me/rlgen", "dir_info": {"editable": True}}, "an editable install"),
    ({"url": "file:///home/me/rlgen", "dir_info": {}}, "a local directory"),
    ({"url": "file:///home/me/dist/rlgen-0.3.0-py3-none-any.whl", "archive_info": {}}, "a local file"),
    ({"url": "file:///home/me/rlgen", "vcs_info": {"vcs": "git", "commit_id": COMMIT}}, "a local git repository"),
], ids=["editable", "directory", "wheel-file", "local-git"])
def test_a_source_no_build_can_reach_is_not_a_default(tmp_path, direct_url, why):
    requirement, reason = install.installed_source(_dist(tmp_path, direct_url))
    assert requirement is None and reason.startswith(why)


def test_a_git_requirement_puts_git_in_the_data_image(generate):
    docker = (generate("--set", f"rlgen.install={GIT}") / "images" / "data" / "Dockerfile").read_text()
    git_step, pip_step = docker.index("apt-get install --yes --no-install-recommends git"), docker.index("pip install")
    assert git_step < pip_step


def test_the_update_workflow_installs_from_rlgen_install_only(generate):
    index = (generate("--set", f"rlgen.install=rlgen==0.1.0 {INDEX}") / ".github" / "workflows" / "rlgen-update.yaml")
    text = index.read_text()
    # An update re-renders a team's template when rlgen.yaml records one: cookiecutter is rlgen[template].
    assert f"pip install --upgrade 'rlgen[template]' {INDEX}" in text
    # The update pins the version it rendered with, on the same index.
    assert f'--set "rlgen.install=rlgen==$(rlgen --version | cut -d\' \' -f3) {INDEX}"' in text
    pinned = (generate("--set", f"rlgen.install={GIT}") / ".github" / "workflows" / "rlgen-update.yaml").read_text()
    assert f"pip install 'rlgen[template] @ git+https://git.example.com/platform/rlgen.git@v0.1.0'" in pinned
    assert "--upgrade" not in pinned
    for workflow in (text, pinned):
        assert "github.token" not in workflow and "GITHUB_TOKEN }}" not in workflow
        assert "token: ${{ secrets.RLGEN_UPDATE_TOKEN }}" in workflow
        # The REST API calls that open the pull request use it too.
        assert "\n          TOKEN: ${{ secrets.RLGEN_UPDATE_TOKEN }}\n" in workflow


def test_the_readme_names_the_update_token(generate):
    assert "**`RLGEN_UPDATE_TOKEN`**" in (generate() / "README.md").read_text()


def test_validate_runs_on_pushes_to_the_synced_branch(generate):
    workflow = (generate("--set", "rlgen.git_branch=release") / ".github" / "workflows" / "validate.yaml")
    on = yamlio.load(workflow.read_text())["on"]
    assert on["push"]["branches"] == ["release"]


def test_a_git_tag_and_an_index_url_reach_the_ci_and_the_data_image(generate):
    repo = generate("--set", f"rlgen.install={GIT} {INDEX}")
    lines = install_lines(repo)
    expected = f"pip install '{GIT}' {INDEX}"
    assert lines[".github/workflows/validate.yaml"] == lines[".github/workflows/diff.yaml"] == [expected]
    assert lines[".github/workflows/cluster-status.yaml"] == [
        f"pip install 'rlgen[cluster] @ git+https://git.example.com/platform/rlgen.git@v0.1.0' {INDEX}"]
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


@pytest.mark.parametrize("answer", [GIT, f"rlgen==0.3.0 {INDEX}"], ids=["git", "index"])
def test_the_readme_says_how_to_install_the_rlgen_the_repository_pins(generate, answer):
    """A researcher installs the rlgen the CI installs, from the README, with the cluster extra
    for doctor and status; a Git source needs git."""
    repo = generate("--set", f"rlgen.install={answer}")
    readme = (repo / "README.md").read_text()
    section = readme[readme.index("## Installing rlgen\n"):].split("\n## ", 1)[0]
    commands = [line.split("#")[0].strip() for line in section.splitlines() if line.startswith("pip install ")]
    lines = install_lines(repo)
    assert commands == [*lines[".github/workflows/validate.yaml"], *lines[".github/workflows/cluster-status.yaml"]]
    assert ("it needs `git`" in section) == answer.startswith("rlgen @ git+")
