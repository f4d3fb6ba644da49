"""The chapters' claims about trained models, measured over seeds and numeric paths: where the margins come from.

Every cell whose numbers come from training checks the claims the prose makes with ``attn.book.claims.claim`` (a
bound, not a digit). This script executes each chapter that has a ``SEED = 0`` parameter (its first code cell)
once per seed and numeric path, each in a fresh kernel, collects every claim the runs checked (from the outputs'
metadata), and prints one row per claim: its bound, the smallest and largest value measured, the committed run's
value, and in how many runs it held (a claim that does not hold is recorded and the run goes on). A bound is set
from this table with a margin; a claim that does not hold in every run is not a claim, and its prose is
rewritten.

Numeric paths: "as is" (this machine's kernels) and "portable" (``attn.book.claims.SECOND_NUMERIC_PATH``: torch's
default CPU kernels and MKL's compatible path, which stand in for another CPU).

    .venv/bin/python benchmarks/claims.py [--seeds 0 1 2 3 4] [--chapters 02 03] [--jobs 2] [--json out.json]
                                          [--scheduler tcp://host:8786] [--check]
    .venv/bin/python benchmarks/claims.py --nulls [--chapters 10 12 13]

Each row also shows the claim's null over the runs (the same statistic under its control: chance, an untrained
model, the other arm), so the margin between bound and null can be read beside the margin between bound and value.
A run in which a claim's null meets its bound counts as not held. ``--nulls`` executes nothing: it reads the
committed chapters and prints, per chapter, how many claims carry a measured null, how many say why they have none
(``no_null``, an exact comparison), and how many do neither.

With ``--scheduler``, the runs go to a Dask cluster (``dask scheduler``; ``dask worker ADDRESS --nthreads 1`` on
each machine, with this repository and its environment at the same path): each run is a fresh kernel on one thread
with the same seed and numeric path, so its claims' values are the ones a local run gives on the same kind of CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import nullcontext
from pathlib import Path

import nbformat
from common import ROOT
from nbclient import NotebookClient

from attn.book.claims import SECOND_NUMERIC_PATH, Claim, recorded_claims
from attn.training import dask_executor, scheduler_address

PATHS = {"as is": {}, "portable": SECOND_NUMERIC_PATH}
PARAMETER = re.compile(r"^SEED = 0\b", re.MULTILINE)


def with_seed(nb: nbformat.NotebookNode, seed: int) -> nbformat.NotebookNode:
    """A copy of the chapter whose ``SEED = 0`` (first code cell) reads ``SEED = seed``."""
    nb = nbformat.from_dict(nb)
    first = next(c for c in nb.cells if c.cell_type == "code")
    if len(PARAMETER.findall(first.source)) != 1:
        raise ValueError("the chapter's first code cell must set its parameter as 'SEED = 0' (once)")
    first.source = PARAMETER.sub(f"SEED = {seed}", first.source)
    return nb


# Measuring, a claim that does not hold is recorded and the chapter goes on, so that every claim gets its values.
KEEP_GOING = """from attn.book.claims import ClaimError, claim as _claim


def claim(*args, **kwargs):  # benchmarks/claims.py: record a claim that does not hold, and go on
    try:
        _claim(*args, **kwargs)
    except ClaimError:
        pass"""


def run(path: Path, seed: int, path_name: str, timeout: int, keep: Path | None = None) -> dict:
    """Execute one chapter with one seed on one numeric path; its claims, failed cells and seconds (and, with
    ``keep``, the executed chapter written there: what its exercises' checks printed)."""
    nb = with_seed(nbformat.read(path, as_version=4), seed)
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells.insert(first + 1, nbformat.v4.new_code_cell(KEEP_GOING))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **PATHS[path_name]}
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})  # fmt: skip
    client.execute(env=env)
    errors = [
        (i, o.ename, o.evalue[:200])
        for i, c in enumerate(nb.cells) if c.cell_type == "code"
        for o in c.outputs if o.output_type == "error" and o.ename != "ClaimError"
    ]  # fmt: skip
    if keep is not None:
        nbformat.write(nb, keep / f"{path.stem}-seed{seed}-{path_name.replace(' ', '-')}.ipynb")
    return {"chapter": path.stem, "seed": seed, "path": path_name, "seconds": time.perf_counter() - start,
            "claims": recorded_claims(nb), "errors": errors}  # fmt: skip


def committed_values(path: Path) -> dict[str, object]:
    return {c["statement"]: c["value"] for c in recorded_claims(nbformat.read(path, as_version=4))}


def fmt(value: object, spec: str) -> str:
    """A measured value as the claim's own line shows it ("-" for none)."""
    return "-" if value is None else Claim("", value, fmt=spec).measured()


def passed(record: dict) -> bool:
    """A recorded claim held and its null (if any) did not meet the bound."""
    return bool(record["holds"]) and not record.get("null_holds", False)


def null_range(checks: list[dict], spec: str) -> str:
    """The null's smallest and largest value over the runs, as the claim's line shows it ("-" for none)."""
    nulls = [c.get("null") for c in checks if c.get("null") is not None]
    numbers = [v for v in nulls if isinstance(v, float)]
    if numbers:
        low, high = fmt(min(numbers), spec), fmt(max(numbers), spec)
        return low if low == high else f"{low} – {high}"
    if nulls:
        return " / ".join(sorted({fmt(v, spec) for v in nulls}))
    return "exact" if any(c.get("no_null") for c in checks) else "-"


def null_counts(chapters: list[Path]) -> list[str]:
    """One markdown row per committed chapter: its claims, how many carry a null, a reason for none, or neither."""
    lines = [
        "| chapter | claims | with a null | no null, with a reason | neither |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    totals = [0, 0, 0, 0]
    for path in chapters:
        claims = recorded_claims(nbformat.read(path, as_version=4))
        with_null = sum(c.get("null") is not None for c in claims)
        reason = sum(c.get("null") is None and bool(c.get("no_null")) for c in claims)
        counts = [len(claims), with_null, reason, len(claims) - with_null - reason]
        totals = [t + n for t, n in zip(totals, counts, strict=True)]
        lines.append(f"| {path.stem} | " + " | ".join(map(str, counts)) + " |")
    lines.append("| all | " + " | ".join(map(str, totals)) + " |")
    return lines


def table(results: list[dict], chapters: list[Path]) -> list[str]:
    """One markdown row per claim: chapter, claim, bound, min, max, committed value, null, held in n of n runs."""
    lines = [
        "| chapter | claim | bound | min | max | committed | null | held |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for path in chapters:
        runs = [r for r in results if r["chapter"] == path.stem]
        if not runs:
            continue
        committed = committed_values(path)
        seen: dict[str, list[dict]] = defaultdict(list)
        for r in runs:
            for c in r["claims"]:
                seen[c["statement"]].append(c)
        for statement, checks in seen.items():
            first = checks[0]
            spec = first.get("fmt", "")
            bound = Claim(**{k: first[k] for k in ("statement", "value", "at_least", "at_most", "equals", "fmt")})
            bound = bound.bound() or "yes"  # a yes/no claim has no bound in numbers
            values = [c["value"] for c in checks]
            numbers = [v for v in values if isinstance(v, float)]
            if numbers:
                low, high = fmt(min(numbers), spec), fmt(max(numbers), spec)
            else:
                distinct = sorted({fmt(v, spec) for v in values})
                low = high = " / ".join(distinct)
            held = sum(passed(c) for c in checks)
            row = (
                path.stem[:2],
                statement,
                bound,
                low,
                high,
                fmt(committed.get(statement), spec),
                null_range(checks, spec),
                f"{held}/{len(runs)}",
            )
            lines.append("| " + " | ".join(str(x).replace("|", "\\|") for x in row) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--paths", nargs="+", default=list(PATHS), choices=list(PATHS))
    parser.add_argument("--chapters", nargs="+", default=None, help="chapter numbers, e.g. 02 05 (default: all)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="chapters executed at once")
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None, type=scheduler_address,
                        help="execute the chapters on the Dask cluster whose scheduler is at ADDRESS (each worker with "
                        "this repository at the same path) instead of --jobs kernels here")  # fmt: skip
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    parser.add_argument("--json", type=Path, default=None, help="also write every run's claims here")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="also write every executed chapter into DIR (an existing folder)")  # fmt: skip
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit with status 1 if a claim did not hold or a cell failed in any run (make versions)",
    )
    parser.add_argument("--nulls", action="store_true",
                        help="execute nothing: count the committed chapters' claims that carry a null")  # fmt: skip
    parser.add_argument(
        "--load",
        type=Path,
        nargs="*",
        default=[],
        help="earlier --json files to include (runs measured again here replace theirs)",
    )
    args = parser.parse_args()

    chapters = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if args.chapters:
        chapters = [p for p in chapters if p.name[:2] in args.chapters]
    if args.nulls:
        print("\n".join(null_counts(chapters)))
        return
    chapters = [p for p in chapters if PARAMETER.search(next(c.source for c in nbformat.read(p, 4).cells
                                                             if c.cell_type == "code"))]  # fmt: skip
    if not chapters:  # a filter that matches nothing measures nothing: never an empty table that looks like a pass
        parser.error(f"--chapters {' '.join(args.chapters or [])}: no chapter with a 'SEED = 0' parameter matches")
    if args.json is not None:  # find out now, not after an hour of runs
        try:
            with args.json.open("a"):
                pass
        except OSError as error:
            parser.error(f"--json {args.json}: cannot write there ({error.strerror})")
    if args.keep is not None and not args.keep.is_dir():
        parser.error(f"--keep {args.keep}: not a folder")
    jobs = [(p, s, name) for p in chapters for s in args.seeds for name in args.paths]
    jobs.sort(key=lambda job: -job[0].stat().st_size)  # the long chapters first
    earlier = [r for f in args.load for r in json.loads(f.read_text())]
    print(f"{len(jobs)} runs: {len(chapters)} chapters x seeds {args.seeds} x paths {args.paths}, {args.jobs} at once",
          flush=True)  # fmt: skip
    again = {(p.stem, seed, name) for p, seed, name in jobs}
    results = [r for r in earlier if (r["chapter"], r["seed"], r["path"]) not in again]
    try:
        cluster = None if args.scheduler is None else dask_executor(args.scheduler)
    except ValueError as error:  # nothing answers there: one line, before any run
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        sys.exit(1)
    with ThreadPoolExecutor(args.jobs) if cluster is None else nullcontext(cluster) as pool:
        futures = [pool.submit(run, *job, args.timeout, args.keep) for job in jobs]
        for future in as_completed(futures):
            r = future.result()
            failed = sum(not passed(c) for c in r["claims"])
            print(f"{r['chapter']} seed {r['seed']} {r['path']:>8}: {len(r['claims'])} claims, {failed} not held, "
                  f"{len(r['errors'])} other errors, {r['seconds']:.0f} s", flush=True)  # fmt: skip
            for cell, name, value in r["errors"]:
                print(f"    cell {cell}: {name}: {value}", flush=True)
            results.append(r)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print()
    print("\n".join(table(results, chapters)))
    failed = [(r["chapter"], r["seed"], r["path"]) for r in results
              if r["errors"] or not all(passed(c) for c in r["claims"])]  # fmt: skip
    if args.check and failed:
        raise SystemExit(f"{len(failed)} of {len(results)} runs: a claim did not hold or a cell failed: {failed}")


if __name__ == "__main__":
    main()
