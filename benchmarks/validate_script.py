"""The baseline ``rlgen validate`` must beat: the short script a CI step would otherwise run.
It builds the top kustomization roots (in parallel), reads every object with libyaml and
checks it against the JSON schema of its kind, from a folder laid out as k8s/ + crds/.

usage: validate_script.py SCHEMA_DIR ROOT...
"""
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema
import yaml

KUSTOMIZE = ["kubectl", "kustomize"]


def schema_path(folder: Path, obj: dict) -> Path:
    group, _, version = obj["apiVersion"].rpartition("/")
    kind = obj["kind"].lower()
    if group and "." in group:
        return folder / "crds" / group / f"{kind}_{version}.json"
    suffix = f"-{group.split('.')[0]}" if group else ""
    return folder / "k8s" / f"{kind}{suffix}-{version}.json"


def main() -> int:
    folder, roots = Path(sys.argv[1]), sys.argv[2:]
    with ThreadPoolExecutor(max_workers=2) as pool:
        texts = list(pool.map(lambda r: subprocess.run([*KUSTOMIZE, r], check=True, capture_output=True,
                                                       text=True).stdout, roots))
    validators, problems, checked = {}, 0, 0
    for text in texts:
        for obj in yaml.load_all(text, Loader=yaml.CSafeLoader):
            path = schema_path(folder, obj)
            if not path.is_file():
                continue
            if path not in validators:
                schema = json.loads(path.read_text())
                validators[path] = jsonschema.validators.validator_for(schema)(schema)
            problems += sum(1 for _ in validators[path].iter_errors(obj))
            checked += 1
    print(json.dumps({"checked": checked, "problems": problems}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
