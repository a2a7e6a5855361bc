"""The summary rows of the benchmarks: each bench script that measures one of issue 29's rows adds it
here (what, smdebug's figure, Vigil's, the target, met or not), to a JSON-lines file named by
--rows; scripts/bench.sh prints them all in one table at the end (`python3 bench/rows.py FILE`).

A figure is a number with its unit, or None when there is none (smdebug has no such workload, or
was not installed); `met` is None when no target applies.
"""
import json
import sys


def add(path, what, vigil, unit, smdebug=None, target=None, met=None, note=""):
    """Appends one row to `path` (nothing when path is None)."""
    if not path:
        return
    with open(path, "a") as f:
        f.write(json.dumps({"what": what, "vigil": vigil, "smdebug": smdebug, "unit": unit, "target": target,
                            "met": met, "note": note}) + "\n")


def _figure(value, unit):
    if value is None:
        return "-"
    if isinstance(value, float):
        value = ("%.3g" % value) if abs(value) < 1000 else ("%.0f" % value)
    return "%s %s" % (value, unit)


def print_table(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    header = ("what", "smdebug 1.0.34", "Vigil", "target", "")
    table = [header] + [(r["what"], _figure(r["smdebug"], r["unit"]), _figure(r["vigil"], r["unit"]),
                         r["target"] or "-", {True: "met", False: "MISSED", None: ""}[r["met"]]) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("  ".join(cell.ljust(widths[j]) if j == 0 else cell.rjust(widths[j]) for j, cell in enumerate(row)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    for r in rows:
        if r["note"]:
            print("* %s: %s" % (r["what"], r["note"]))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: rows.py ROWS_FILE")
    print_table(sys.argv[1])
