"""Local sources are read with pyarrow, without importing ``datasets``; the rows, the files
and the manifest are exactly those of reading them with ``datasets``."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.datafix import geometry3k_columns, gsm8k_columns, hf_offline, save  # noqa: F401

pytestmark = pytest.mark.usefixtures("hf_offline")
CASES = [("gsm8k", "disk"), ("gsm8k", "parquet"), ("geometry3k", "disk"), ("geometry3k", "parquet")]


def outputs(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize(("dataset", "form"), CASES)
def test_pyarrow_and_datasets_give_the_same_files(tmp_path, monkeypatch, dataset, form):
    from rlgen.data import local, prepare

    columns = gsm8k_columns if dataset == "gsm8k" else geometry3k_columns
    source = save(dataset, {"train": columns(2100), "test": columns(7, start=3000)}, tmp_path / "src", form)
    assert local.read(source) is not None
    prepare.prepare(dataset, tmp_path / "pyarrow", source=str(source))
    monkeypatch.setattr(local, "read", lambda folder: None)
    prepare.prepare(dataset, tmp_path / "datasets", source=str(source))
    assert outputs(tmp_path / "pyarrow") == outputs(tmp_path / "datasets")


def test_a_local_source_does_not_import_datasets(tmp_path):
    source = save("gsm8k", {"train": gsm8k_columns(20), "test": gsm8k_columns(5)}, tmp_path / "src", "disk")
    script = ("import sys; from pathlib import Path; from rlgen.data.prepare import prepare; "
              f"prepare('gsm8k', Path({str(tmp_path / 'out')!r}), source={str(source)!r}); "
              "print('datasets' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=os.environ)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
    assert (tmp_path / "out" / "train.parquet").is_file()
