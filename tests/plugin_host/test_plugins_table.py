"""Text rlgen prints in a table is the text it was given: a RAM ARN (``acs:ram::...``) is not an
emoji code, a ``[...]`` in a cluster's message is not markup."""
from __future__ import annotations

import os
from dataclasses import dataclass

from support.repos import ok, run_rlgen


def test_plugins_table_prints_ram_arns_as_they_are():
    out = ok(run_rlgen("plugins", "-o", "table", env={**os.environ, "COLUMNS": "200"}))
    assert "(acs:ram::<account>:role/<name>)" in out
    assert "\N{RAM}" not in out


@dataclass
class _Row:
    check: str
    detail: str


def test_report_tables_print_cells_as_they_are(capsys):
    from rlgen.kube.report import emit

    emit([_Row("rrsa", "role acs:ram::123:role/x [needs sts:AssumeRole] :smile:")], ("check", "detail"), "table")
    out = " ".join(capsys.readouterr().out.split())
    assert "acs:ram::123:role/x" in out and "[needs sts:AssumeRole]" in out and ":smile:" in out, out
