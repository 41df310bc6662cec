"""rlgen data prepare: real ``datasets`` loading of small offline data sets in the real
shapes, the rows verl reads, the manifest, and one-line errors that write nothing."""
from __future__ import annotations

import io
import json
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rlgen.errors import RlgenError
from support.datafix import (  # noqa: F401
    geometry3k_columns,
    gsm8k_columns,
    hf_offline,
    invoke,
    png,
    save,
)
from support.repos import run_rlgen

pytestmark = pytest.mark.usefixtures("hf_offline")


def rows(path):
    return pq.read_table(path).to_pylist()


def fail(result) -> str:
    """The error of a failed command, checked to be the one line the user sees."""
    assert isinstance(result.exception, RlgenError), result.output
    message = str(result.exception)
    assert message and "\n" not in message
    return message


def test_gsm8k_rows_are_the_tool_agent_rows_verl_reads(tmp_path):
    train = gsm8k_columns(40)
    train["answer"][5] = "The farm sold every sheep, so nothing is left."
    source = save("gsm8k", {"train": train, "test": gsm8k_columns(12, start=500)}, tmp_path / "src", "disk")
    out = tmp_path / "out"

    result = invoke("prepare", "--dataset", "gsm8k", "--source", source, "--out", out, "-o", "table")

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == (
        f"train: 40 rows in, 39 out, 1 dropped (1 x answer has no '#### <number>' line) -> {out / 'train.parquet'}")
    got = rows(out / "train.parquet")
    assert [r["extra_info"]["index"] for r in got] == [i for i in range(40) if i != 5]
    thousands = next(r for r in got if r["extra_info"]["index"] == 3)
    assert thousands["extra_info"]["answer"].endswith("#### 3,050")
    assert thousands["reward_model"] == {"style": "rule", "ground_truth": "3050"}
    assert thousands["extra_info"]["tools_kwargs"] == {"calc_gsm8k_reward": {"create_kwargs": {"ground_truth": "3050"}}}
    assert thousands["extra_info"]["need_tools_kwargs"] is True
    assert thousands["data_source"] == "openai/gsm8k"
    assert thousands["agent_name"] == "tool_agent"
    assert thousands["ability"] == "math"
    system, user = thousands["prompt"]
    assert system["role"] == "system" and "calc_gsm8k_reward" in system["content"]
    assert user == {"role": "user", "content": f"{train['question'][3]} Let's think step by step and output "
                                              "the final answer after `####`."}
    assert all("," not in r["reward_model"]["ground_truth"] for r in got)
    assert {r["extra_info"]["split"] for r in rows(out / "test.parquet")} == {"test"}


def test_manifest_counts_rows_lists_dropped_rows_and_hashes_each_file(tmp_path):
    import hashlib

    test = gsm8k_columns(10)
    test["answer"][2] = test["answer"][7] = "no final line"
    source = save("gsm8k", {"train": gsm8k_columns(30), "test": test}, tmp_path / "src", "parquet")
    out = tmp_path / "out"
    assert invoke("prepare", "--dataset", "gsm8k", "--source", source, "--out", out).exit_code == 0

    manifest = json.loads((out / "manifest.json").read_text())
    reason = "answer has no '#### <number>' line"
    assert manifest["dataset"] == "gsm8k" and manifest["source"] == str(source)
    assert manifest["splits"]["test"]["rows_in"] == 10 and manifest["splits"]["test"]["rows_out"] == 8
    assert manifest["splits"]["test"]["dropped"] == {reason: 2}
    assert manifest["splits"]["train"]["dropped"] == {}
    assert manifest["dropped_rows"] == [{"split": "test", "index": 2, "reason": reason},
                                        {"split": "test", "index": 7, "reason": reason}]
    for split, entry in manifest["splits"].items():
        data = (out / entry["file"]).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest() and entry["bytes"] == len(data)
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "test.parquet", "train.parquet"]


@pytest.mark.parametrize("form", ["parquet", "jsonl"])
def test_every_source_form_and_every_run_gives_the_same_bytes(tmp_path, form):
    splits = {"train": gsm8k_columns(25), "test": gsm8k_columns(5, start=100)}
    outputs = []
    for name, kind in [("disk", "disk"), ("again", "disk"), (form, form)]:
        source = save("gsm8k", splits, tmp_path / f"src-{name}", kind)
        out = tmp_path / f"out-{name}"
        assert invoke("prepare", "--dataset", "gsm8k", "--source", source, "--out", out).exit_code == 0
        manifest = json.loads((out / "manifest.json").read_text())
        outputs.append(((out / "train.parquet").read_bytes(), (out / "test.parquet").read_bytes(),
                        manifest["splits"]))
    assert outputs[0] == outputs[1] == outputs[2]


def test_geometry3k_rows_carry_their_images_and_one_placeholder_each(tmp_path):
    import datasets
    from PIL import Image

    train = geometry3k_columns(12)
    train["problem"][4] = "<image><image>Compare the two triangles."
    train["answer"][9] = ""
    source = save("geometry3k", {"train": train, "test": geometry3k_columns(4, start=50)}, tmp_path / "src", "parquet")
    out = tmp_path / "out"

    result = invoke("prepare", "--dataset", "geometry3k", "--source", source, "--out", out)

    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["splits"]["train"]["dropped"] == {
        "answer is empty": 1, "the number of <image> placeholders differs from the number of images": 1}
    images_type = pq.read_schema(out / "train.parquet").field("images").type
    assert images_type.value_type == pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    # Read back the way verl's RLHFDataset does.
    loaded = datasets.load_dataset("parquet", data_files={"train": str(out / "train.parquet")})["train"]
    assert len(loaded) == 10
    for row in loaded:
        index = row["extra_info"]["index"]
        assert row["images"] == [{"bytes": train["images"][index][0]["bytes"], "path": None}]
        assert Image.open(io.BytesIO(row["images"][0]["bytes"])).size == (16, 16)
        # The tool-agent loop, so rollouts of these rows call the sandbox tool.
        assert row["agent_name"] == "tool_agent"
        system, message = row["prompt"]
        assert system["role"] == "system" and "tool" in system["content"]
        assert message["role"] == "user" and message["content"].count("<image>") == len(row["images"])
        assert message["content"].startswith(train["problem"][index]) and "\\boxed{}" in message["content"]
        assert row["reward_model"] == {"style": "rule", "ground_truth": train["answer"][index]}
        answer = train["answer"][index]
        assert row["extra_info"] == {"split": "train", "index": index, "answer": answer,
                                     "question": train["problem"][index], "need_tools_kwargs": True,
                                     # What rlgen's calc_geo3k_reward grades against.
                                     "tools_kwargs": {"calc_geo3k_reward": {"create_kwargs": {"ground_truth": answer}}}}
        assert row["data_source"] == "hiyouga/geometry3k" and row["ability"] == "math"


def test_limit_maps_only_the_first_rows_of_each_split(tmp_path):
    source = save("gsm8k", {"train": gsm8k_columns(30), "test": gsm8k_columns(30)}, tmp_path / "src", "disk")
    out = tmp_path / "out"
    assert invoke("prepare", "--dataset", "gsm8k", "--source", source, "--out", out, "--limit", 7).exit_code == 0
    assert [r["extra_info"]["index"] for r in rows(out / "train.parquet")] == list(range(7))
    assert json.loads((out / "manifest.json").read_text())["limit"] == 7


def test_config_picks_one_subset_of_a_multi_config_source(tmp_path):
    source = tmp_path / "src"
    for config, start in [("main", 0), ("socratic", 1000)]:
        save("gsm8k", {"train": gsm8k_columns(6, start), "test": gsm8k_columns(2, start)}, source / config, "jsonl")
    (source / "README.md").write_text(
        "---\nconfigs:\n"
        "- config_name: main\n  data_files:\n  - {split: train, path: main/train.jsonl}\n"
        "  - {split: test, path: main/test.jsonl}\n"
        "- config_name: socratic\n  data_files:\n  - {split: train, path: socratic/train.jsonl}\n"
        "  - {split: test, path: socratic/test.jsonl}\n---\n")
    out = tmp_path / "out"

    message = fail(invoke("prepare", "--dataset", "gsm8k", "--source", source, "--out", out))
    assert message == f"source '{source}' has several configs (main, socratic): pick one with --config"
    assert not out.exists()

    assert invoke("prepare", "--dataset", "gsm8k", "--source", source, "--config", "socratic",
                  "--out", out).exit_code == 0
    assert rows(out / "train.parquet")[0]["extra_info"]["question"] == gsm8k_columns(1, 1000)["question"][0]


def test_unknown_dataset_names_the_installed_ones(tmp_path):
    message = fail(invoke("prepare", "--dataset", "gsm9k", "--out", tmp_path / "out"))
    assert message.startswith("unknown dataset 'gsm9k'")
    assert "geometry3k" in message and "gsm8k" in message
    assert not (tmp_path / "out").exists()


def test_a_source_without_an_expected_column_names_it(tmp_path):
    columns = gsm8k_columns(5)
    columns["solution"] = columns.pop("answer")
    source = save("gsm8k", {"train": columns, "test": columns}, tmp_path / "src", "jsonl")

    message = fail(invoke("prepare", "--dataset", "gsm8k", "--source", source, "--out", tmp_path / "out"))

    assert message == "source split 'train' has no column 'answer' (columns: question, solution)"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("form", ["no files", "empty files"])
def test_an_empty_source_is_an_error(tmp_path, form):
    source = tmp_path / "src"
    if form == "no files":
        source.mkdir()
    else:
        save("gsm8k", {"train": {"question": [], "answer": []}, "test": {"question": [], "answer": []}}, source,
             "parquet")
    message = fail(invoke("prepare", "--dataset", "gsm8k", "--source", source, "--out", tmp_path / "out"))
    assert message.startswith(f"cannot load source '{source}': ")
    assert not (tmp_path / "out").exists()


def test_an_empty_split_is_an_error():
    from rlgen.data.prepare import dataset_format, map_split

    empty = {"train": pa.table({"question": pa.array([], pa.string()), "answer": pa.array([], pa.string())})}
    with pytest.raises(RlgenError, match="^source split 'train' is empty$"):
        map_split(dataset_format("gsm8k"), empty, "train", None)


def test_a_missing_split_is_named(tmp_path):
    source = save("gsm8k", {"train": gsm8k_columns(5), "validation": gsm8k_columns(5)}, tmp_path / "src", "disk")
    assert fail(invoke("prepare", "--dataset", "gsm8k", "--source", source, "--out", tmp_path / "out")) == \
        "source has no 'test' split (it has: train, validation)"


def test_every_row_dropped_is_an_error_not_an_empty_file(tmp_path):
    bad = {"question": ["q1", "q2"], "answer": ["no number", "none here"]}
    source = save("gsm8k", {"train": bad, "test": gsm8k_columns(2)}, tmp_path / "src", "disk")
    message = fail(invoke("prepare", "--dataset", "gsm8k", "--source", source, "--out", tmp_path / "out"))
    assert message == "every row of split 'train' was dropped (2 of them: answer has no '#### <number>' line)"
    assert not (tmp_path / "out").exists()


def test_the_rlgen_command_prepares_and_fails_with_exit_2_and_one_line(tmp_path):
    source = save("gsm8k", {"train": gsm8k_columns(8), "test": gsm8k_columns(3)}, tmp_path / "src", "disk")

    ok = run_rlgen("data", "prepare", "--dataset", "gsm8k", "--source", str(source), "--out", str(tmp_path / "out"))
    assert ok.returncode == 0, ok.stderr
    # Off a terminal the summary is JSON, non-ASCII kept.
    assert json.loads(ok.stdout)["manifest"] == str(tmp_path / "out" / "manifest.json")
    # Off a terminal (a Job's log) datasets draws no progress bars.
    assert ok.stderr == ""

    bad = run_rlgen("data", "prepare", "--dataset", "nope", "--out", str(tmp_path / "other"))
    assert bad.returncode == 2
    assert bad.stderr.startswith("rlgen: error: unknown dataset 'nope'") and bad.stderr.count("\n") == 1


def test_geometry3k_needs_a_vision_language_model():
    from rlgen_plugins import geometry3k

    def check(model):
        return geometry3k.rlgen_check(SimpleNamespace(spec=SimpleNamespace(model=model)))

    assert check("Qwen/Qwen2.5-VL-3B-Instruct") == []
    (problem,) = check("Qwen/Qwen2.5-3B-Instruct")
    assert problem.plugins == ("geometry3k", "rlgen") and "Qwen/Qwen2.5-3B-Instruct" in problem.message


def test_geometry3k_map_row_keeps_image_order_and_bytes():
    from rlgen_plugins.geometry3k import map_row

    images = [{"bytes": png((1, 2, 3)), "path": "a.png"}, {"bytes": png((4, 5, 6))}]
    row = map_row({"problem": "<image> and <image>: which is larger?", "answer": "A", "images": images}, "test", 3)
    assert row["images"] == [{"bytes": images[0]["bytes"], "path": "a.png"}, {"bytes": images[1]["bytes"], "path": None}]
    with pytest.raises(ValueError, match="an image has no bytes"):
        map_row({"problem": "<image>", "answer": "A", "images": [{"bytes": None, "path": "x.png"}]}, "test", 0)


def test_the_plugins_hub_source_loads_with_its_config(tmp_path, monkeypatch):
    """openai/gsm8k has two configs and no default: the dataset Job (which names only the
    source) must load the plugin's "main" config, while another source gets none."""
    from rlgen.data import prepare as prepare_module

    seen = []

    def fake_load(source, config):
        seen.append((source, config))
        return {"train": pa.table(gsm8k_columns(4)), "test": pa.table(gsm8k_columns(2, start=10))}

    monkeypatch.setattr(prepare_module, "load_source", fake_load)
    prepare_module.prepare("gsm8k", tmp_path / "a")
    prepare_module.prepare("gsm8k", tmp_path / "b", source="my-org/gsm8k-copy")
    assert seen == [("openai/gsm8k", "main"), ("my-org/gsm8k-copy", None)]
    assert json.loads((tmp_path / "a" / "manifest.json").read_text())["config"] == "main"
