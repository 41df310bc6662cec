"""``rlgen data prepare``: a source data set to the parquet rows verl reads, and a manifest.

The dataset plugin's :class:`~rlgen.contributions.DatasetFormat` names the columns the
source must have and maps each row. This module loads the source (with pyarrow when it
is on disk in a form pyarrow reads, else with Hugging Face ``datasets``), feeds the rows to
``map_row`` one Arrow batch at a time in this process (the mapping is light: worker
processes would cost more in start-up and pickling than they save), then writes
``<split>.parquet`` and ``manifest.json``: rows in and out per split, every dropped row with
its reason, and each file's SHA-256.

Nothing is written until every split has mapped, and the manifest holds no timestamps:
the same input gives the same bytes, which ``rlgen data upload`` then skips.
"""
from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rlgen import __version__
from rlgen.contributions import DatasetFormat
from rlgen.data import MANIFEST, hub_dataset, local, staged
from rlgen.errors import RlgenError
from rlgen.plugin_host import discovery

BATCH_ROWS = 1000
#: verl's ``data.image_key`` default, and the type its rows hold: a list of {bytes, path}.
IMAGES = "images"
IMAGES_TYPE = pa.list_(pa.struct([("bytes", pa.binary()), ("path", pa.string())]))


def dataset_format(name: str) -> DatasetFormat:
    """The format of the installed dataset plugin ``name``."""
    plugins = {n: p for n, p in discovery.discover().items() if p.info.slot == "dataset"}
    if name not in plugins:
        raise RlgenError(f"unknown dataset '{name}' (installed: {', '.join(sorted(plugins)) or 'none'})")
    return discovery.dataset_format(plugins, name)


def load_source(source: str, config: str | None) -> dict[str, pa.Table]:
    """Each split's rows: a Hub name, a ``save_to_disk`` folder, or a folder of data files whose
    names give the splits (``train.parquet``, ``test.jsonl``, ``data/train-00000-of-00001.parquet``).

    ``save_to_disk`` folders and folders of ``<split>.parquet`` files are read with pyarrow
    (the same Arrow tables ``datasets`` would read, without its import); anything else goes
    through Hugging Face ``datasets``."""
    path = Path(source)
    if path.is_file():
        raise RlgenError(f"source '{source}' is a file: pass the folder that holds its train and test files")
    saved = (path / "dataset_dict.json").is_file() or (path / "state.json").is_file()
    if saved and config:
        raise RlgenError(f"source '{source}' was saved with save_to_disk: it has no configs to pick from")
    tables = local.read(path) if path.is_dir() and not config else None
    if tables is None:
        return _with_datasets(source, config, saved)
    if not any(t.num_rows for t in tables.values()):
        raise RlgenError(f"cannot load source '{source}': its files hold no rows")
    return tables


def _with_datasets(source: str, config: str | None, saved: bool) -> dict[str, pa.Table]:
    # Lazy: the optional extra rlgen[data] (datasets; seconds to import, not installed to measure here).
    import datasets

    if not sys.stderr.isatty():
        # Off a terminal (the dataset Job's log) progress bars are noise.
        datasets.disable_progress_bars()

    try:
        loaded = datasets.load_from_disk(source) if saved else datasets.load_dataset(source, config)
    except Exception as exc:  # datasets raises a dozen types; each becomes one line
        configs = [] if saved or config else _config_names(source)
        if len(configs) > 1:
            raise RlgenError(f"source '{source}' has several configs ({', '.join(configs)}): "
                             "pick one with --config") from None
        raise RlgenError(f"cannot load source '{source}': {' '.join(str(exc).split()) or type(exc).__name__}") from None
    if not isinstance(loaded, datasets.DatasetDict):
        raise RlgenError(f"source '{source}' is a single data set without splits: save a DatasetDict")
    return {split: data.with_format("arrow")[:] for split, data in loaded.items()}


def _config_names(source: str) -> list[str]:
    # Lazy: the optional extra rlgen[data] (datasets; seconds to import, not installed to measure here).
    import datasets

    try:
        return datasets.get_dataset_config_names(source)
    except Exception:  # the load's own error is the one to report
        return []


@dataclass
class SplitResult:
    split: str
    table: pa.Table
    rows_in: int
    dropped: list[tuple[int, str]]
    sha256: str = ""
    size: int = 0

    @property
    def file(self) -> str:
        return f"{self.split}.parquet"


def map_split(fmt: DatasetFormat, source: dict[str, pa.Table], split: str, limit: int | None) -> SplitResult:
    if split not in source:
        raise RlgenError(f"source has no '{split}' split (it has: {', '.join(source) or 'none'})")
    data = source[split]
    missing = [c for c in fmt.columns if c not in data.column_names]
    if missing:
        raise RlgenError(f"source split '{split}' has no column '{missing[0]}' "
                         f"(columns: {', '.join(data.column_names) or 'none'})")
    if limit is not None:
        data = data.slice(0, limit)
    if data.num_rows == 0:
        raise RlgenError(f"source split '{split}' is empty")
    data = data.select(list(fmt.columns))
    tables, dropped, index = [], [], 0
    for start in range(0, data.num_rows, BATCH_ROWS):
        rows = []
        for row in _source_rows(data.slice(start, BATCH_ROWS)):
            try:
                rows.append(_checked(fmt, fmt.map_row(row, split, index)))
            except ValueError as exc:
                dropped.append((index, str(exc)))
            index += 1
        if rows:
            tables.append(pa.Table.from_pylist(rows))
    if not tables:
        reason, count = Counter(r for _, r in dropped).most_common(1)[0]
        raise RlgenError(f"every row of split '{split}' was dropped ({count} of them: {reason})")
    # A batch whose values of a field are all None infers a null type: promote across batches.
    table = pa.concat_tables(tables, promote_options="permissive")
    if fmt.vision and IMAGES in table.column_names:
        # Paths are usually all None, which infers a null type; files that disagree on the
        # type cannot be read together (data.train_files may list several).
        table = table.set_column(table.column_names.index(IMAGES), IMAGES, table[IMAGES].cast(IMAGES_TYPE))
    return SplitResult(split, table, index, dropped)


def _source_rows(batch: pa.Table) -> list[dict]:
    """The rows as the source holds them. A JSON column whose rows mix types (a question null in
    one row, a list in another) comes from ``datasets`` as JSON text (``on_mixed_types``): each
    value is read back, so ``map_row`` drops a null or a list rather than train on '["a"]'."""
    rows = batch.to_pylist()
    for name in (f.name for f in batch.schema if getattr(f.type, "extension_name", "") == "arrow.json"):
        for row in rows:
            row[name] = None if row[name] is None else json.loads(row[name])
    return rows


def _checked(fmt: DatasetFormat, row: dict) -> dict:
    # rlgen validate trusts the declared agent loop; rows that disagree would train without tools.
    if row.get("agent_name") != fmt.agent_name:
        raise RlgenError(f"dataset plugin '{fmt.name}' declares agent_name {fmt.agent_name!r}, "
                         f"but its map_row wrote {row.get('agent_name')!r}")
    return row


def prepare(dataset: str, out: Path, source: str | None = None, config: str | None = None,
            limit: int | None = None) -> tuple[list[SplitResult], Path]:
    """The whole command: returns each split's result and the manifest's path."""
    fmt = dataset_format(dataset)
    source = source or fmt.source
    copies = (fmt.source, hub_dataset.MODELSCOPE_PREFIX + fmt.modelscope_source)
    config = config or (fmt.config if source in copies else None)
    if hub_dataset.is_modelscope(source):
        folder, left = hub_dataset.download(source, out, config)
        loaded = load_source(str(folder), left)
    else:
        loaded = load_source(source, config)
    results = [map_split(fmt, loaded, split, limit) for split in fmt.splits]
    out.mkdir(parents=True, exist_ok=True)
    # A manifest must never describe files other than the ones beside it, and a folder once
    # prepared always has one: the files and the manifest are committed together (staged).
    staged.recover(out)
    for result in results:
        result.sha256, result.size = _write_parquet(result.table, staged.partial(out / result.file))
    staged.commit(out, (json.dumps(_manifest(fmt, source, config, limit, results), indent=2, sort_keys=True)
                        + "\n").encode())
    return results, out / MANIFEST


def _manifest(fmt: DatasetFormat, source: str, config: str | None, limit: int | None,
              results: list[SplitResult]) -> dict:
    return {
        "dataset": fmt.name,
        "source": source,
        "config": config,
        "limit": limit,
        "generator": f"rlgen {__version__}",
        "splits": {
            r.split: {
                "file": r.file,
                "sha256": r.sha256,
                "bytes": r.size,
                "rows_in": r.rows_in,
                "rows_out": r.table.num_rows,
                "dropped": dict(sorted(Counter(reason for _, reason in r.dropped).items())),
            }
            for r in results
        },
        "dropped_rows": [{"split": r.split, "index": i, "reason": reason} for r in results for i, reason in r.dropped],
    }


def _write_parquet(table: pa.Table, path: Path) -> tuple[str, int]:
    pq.write_table(table, path)
    staged.sync(path)
    sha256 = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            sha256.update(chunk)
    return sha256.hexdigest(), path.stat().st_size
