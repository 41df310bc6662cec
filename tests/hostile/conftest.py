"""The corpus figures: how the hostile cases ended, summed over xdist workers from what each
case recorded (support/hostile.py), never written by hand."""
from __future__ import annotations


def figures(properties: list[dict]) -> str:
    cases = [p for p in properties if "hostile_exit" in p]
    scans = [p for p in properties if "hostile_scanner_findings" in p]
    if not cases and not scans:
        return ""
    clean = sum(c["hostile_expected"] == 2 and c["hostile_exit"] == 2 and c["hostile_one_line"] for c in cases)
    met = sum(c["hostile_exit"] == c["hostile_expected"] for c in cases)
    return (
        f"hostile corpus: {len(cases)} cases, {met} ended as expected; "
        f"{clean} clean refusals (exit 2, one line) of {sum(c['hostile_expected'] == 2 for c in cases)} refusals; "
        f"{sum(c['hostile_exit'] == 70 for c in cases)} exit 70; "
        f"{sum(c['hostile_exit'] == 0 and c['hostile_expected'] != 0 for c in cases)} accepted but bad; "
        f"{sum(bool(c['hostile_data_lost']) for c in cases)} data lost; "
        f"{sum(bool(c['hostile_changed']) or bool(c['hostile_leftovers']) for c in cases)} leftovers or changes; "
        f"{sum(len(c['hostile_secrets']) for c in cases)} secrets in outputs; "
        f"{sum(s['hostile_scanner_findings'] for s in scans)} secrets found by the scanners in "
        f"{', '.join(sorted({w for s in scans for w in s['hostile_scanned']})) or 'nothing scanned'}")


def pytest_terminal_summary(terminalreporter):
    properties = []
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) == "call":
                properties.append(dict(getattr(report, "user_properties", ())))
    if line := figures(properties):
        terminalreporter.write_line(line)
    kills = [p["hostile_kill"] for p in properties if "hostile_kill" in p]
    if kills:
        terminalreporter.write_line(f"SIGKILL trials: {len(kills)}; " + "; ".join(
            f"{kills.count(k)} {k}" for k in sorted(set(kills))))
