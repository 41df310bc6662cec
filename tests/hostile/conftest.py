"""The corpus figures: how the hostile cases ended, summed over xdist workers."""
from __future__ import annotations


def pytest_terminal_summary(terminalreporter):
    cases = []
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) == "call":
                props = dict(getattr(report, "user_properties", ()))
                if "hostile_exit" in props:
                    cases.append(props)
    if not cases:
        return
    clean = sum(1 for c in cases if c["hostile_exit"] == 2 and c["hostile_one_line"])
    terminalreporter.write_line(
        f"hostile corpus: {len(cases)} cases, {clean} clean refusals (exit 2, one line), "
        f"{sum(c['hostile_exit'] == 70 for c in cases)} exit 70, "
        f"{sum(c['hostile_exit'] == 0 for c in cases)} accepted, "
        f"{sum(bool(c['hostile_data_lost']) for c in cases)} data lost, "
        f"{sum(bool(c['hostile_changed']) or bool(c['hostile_leftovers']) for c in cases)} leftovers or changes, "
        f"{sum(len(c['hostile_secrets']) for c in cases)} secrets in outputs")
