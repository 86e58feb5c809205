"""A fuzzing campaign over every input format (issues 19 and 6), outside the test suite.

    python benchmarks/fuzz_campaign.py [--inputs 200] [--seed 1] [--timeout 10] [--formats "SBML,.rxn"]

Each input is a mutated seed file loaded through the public loader in a worker process (see
``tests/fuzzing.py``); prints one Markdown row per format: ok / clean error / no line number /
foreign exception / RecursionError / hang / process died, then every finding (what was not ok or a
clean error) with the label that regenerates its input (``format/seed/index``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import fuzzing  # noqa: E402

COLUMNS = [("ok", "ok"), ("clean", "clean error"), ("no-line", "no line number"), ("foreign", "foreign exception"),
           ("recursion", "RecursionError"), ("hang", "hang"), ("died", "process died")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=int, default=200, help="inputs per format (default 200)")
    ap.add_argument("--seed", type=int, default=1, help="campaign seed (the test suite uses 0)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per input before it counts as a hang")
    ap.add_argument("--formats", default="", help="comma-separated format names (default: all)")
    args = ap.parse_args()
    fmts = fuzzing.formats()
    others = fuzzing.all_seed_bytes(fmts)
    if args.formats:
        wanted = [s.strip() for s in args.formats.split(",")]
        fmts = [f for f in fmts if f.name in wanted]
    runner = fuzzing.Runner(timeout=args.timeout)
    total: Counter = Counter()
    rows, findings = [], []
    t0 = time.perf_counter()
    try:
        for fmt in fmts:
            counts: Counter = Counter()
            for label, files in fuzzing.cases(fmt, args.inputs, args.seed, others):
                outcome, detail, _ = runner.run(fmt.name, files, support=fmt.support)
                counts[outcome] += 1
                if outcome not in ("ok", "clean"):
                    findings.append(f"- {label}: {outcome}: {detail}")
            total.update(counts)
            rows.append((fmt.name, counts))
            print(f"{fmt.name}: {dict(counts)}", file=sys.stderr, flush=True)
    finally:
        runner.close()
    print(f"{sum(total.values())} inputs, seed {args.seed}, {args.timeout:g} s per input, "
          f"{time.perf_counter() - t0:.0f} s\n")
    print("| format | " + " | ".join(title for _, title in COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    for name, counts in rows + [("**total**", total)]:
        print(f"| {name} | " + " | ".join(str(counts[key]) for key, _ in COLUMNS) + " |")
    if findings:
        print("\nfindings:")
        print("\n".join(findings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
