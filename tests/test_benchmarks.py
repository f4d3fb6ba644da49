"""The benchmark scripts still run and print their tables (no timing is asserted here)."""

import subprocess
import sys

from notebook_utils import ROOT


def test_attention_core_benchmark_prints_its_table():
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "attention_core.py"), "--quick", "--threads", "1"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if "attn ms" in line)
    rows = [line.split() for line in lines[header + 1 :] if line.strip()]
    assert len(rows) >= 4 and all(float(row[-3]) > 0 for row in rows)  # ratio column
