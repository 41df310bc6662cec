"""What the ``rlgen data`` tests share (test modules import it; the benchmark too):

- small data sets in the real shapes of openai/gsm8k (question, answer ending in
  ``#### 1,234``) and hiyouga/geometry3k (problem with ``<image>``, answer, images), built
  offline and saved the ways ``rlgen data prepare`` reads them;
- ``hf_offline``: Hugging Face caches in a temporary folder and no Hub access;
- ``invoke``: ``rlgen data ...`` in this process through click's runner.
"""
from __future__ import annotations

import io
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def hf_offline(tmp_path_factory):
    """``datasets`` reads these when first imported, which the tests leave to this fixture."""
    home = tmp_path_factory.mktemp("hf-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HOME", str(home))
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("HF_DATASETS_OFFLINE", "1")
        patch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        yield home


def invoke(*args, env: dict | None = None):
    """Run ``rlgen data ARGS`` in this process; stdout and stderr stay apart."""
    from click.testing import CliRunner
    from rlgen.commands.data import command as data_command

    return CliRunner().invoke(data_command, [str(a) for a in args], env=env)



def gsm8k_columns(n: int, start: int = 0) -> dict[str, list]:
    questions, answers = [], []
    for i in range(start, start + n):
        a, b = 17 * i + 3, 997 * (i % 7) + 5
        questions.append(f"A farm had {a} sheep and bought {b} more. How many sheep does it have now?")
        # Every third total reaches the thousands and is written with a comma, as in GSM8K.
        answers.append(f"It had {a} and bought {b}, so {a}+{b} = <<{a}+{b}={a + b}>>{a + b} sheep.\n#### {a + b:,}")
    return {"question": questions, "answer": answers}


def png(color: tuple[int, int, int], size: int = 16) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (size, size), color).save(buf, "PNG")
    return buf.getvalue()


def geometry3k_columns(n: int, start: int = 0) -> dict[str, list]:
    problems, answers, images = [], [], []
    for i in range(start, start + n):
        problems.append(f"<image>Find x so that the angle at vertex {i} is {30 + i % 60} degrees.")
        answers.append(str(30 + i % 60))
        images.append([{"bytes": png((i % 256, 40, 200)), "path": None}])
    return {"problem": problems, "answer": answers, "images": images}


def features(dataset: str):
    import datasets

    if dataset == "geometry3k":
        return datasets.Features({"problem": datasets.Value("string"), "answer": datasets.Value("string"),
                                  "images": datasets.List(datasets.Image())})
    return datasets.Features({"question": datasets.Value("string"), "answer": datasets.Value("string")})


def dataset_dict(dataset: str, splits: dict[str, dict[str, list]]):
    import datasets

    expected = features(dataset)
    return datasets.DatasetDict({
        split: datasets.Dataset.from_dict(columns, features=expected if set(columns) == set(expected) else None)
        for split, columns in splits.items()
    })


def save(dataset: str, splits: dict[str, dict[str, list]], path: Path, form: str) -> Path:
    """Save as ``disk`` (save_to_disk), ``parquet`` or ``jsonl`` (one file per split)."""
    data = dataset_dict(dataset, splits)
    if form == "disk":
        data.save_to_disk(str(path))
        return path
    path.mkdir(parents=True, exist_ok=True)
    for split, ds in data.items():
        if form == "parquet":
            ds.to_parquet(str(path / f"{split}.parquet"))
        else:
            ds.to_json(str(path / f"{split}.jsonl"), lines=True)
    return path
