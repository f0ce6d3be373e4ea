"""pandas baseline for `cargo bench -p liteset --bench plugins` (pivot+flatten group).

Runs what Superset 6.0's `pivot` + `flatten` post-processing do (pandas 2.1.4: fill NULL
column keys, `pivot_table` with a per-column aggfunc and `dropna=False`, join the column levels
with ", ", `reset_index`) on the same generated data as the Rust benchmark, and prints the
median of several runs. Usage:

    python3 -m venv ~/.cache/liteset-bench-venv
    ~/.cache/liteset-bench-venv/bin/pip install pandas==2.1.4 numpy==1.26.4
    ~/.cache/liteset-bench-venv/bin/python tests/bench/pivot_pandas.py
"""

import statistics
import time

import numpy as np
import pandas as pd

REGIONS = ["East", "North", "South", "West", "Central"]


def frame(rows: int) -> pd.DataFrame:
    i = np.arange(rows, dtype=np.int64)
    ts = pd.to_datetime(1_577_836_800_000_000 + (i // 1000) * 86_400_000_000, unit="us")
    region = np.array(REGIONS, dtype=object)[i % 5]
    value = ((i * 7919) % 1000) / 10.0
    return pd.DataFrame({"__timestamp": ts, "region": region, "sum_revenue": value})


def pivot_flatten(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df[["region"]] = df[["region"]].fillna(value="<NULL>")
    out = df.pivot_table(
        values=["sum_revenue"],
        index=["__timestamp"],
        columns=["region"],
        aggfunc={"sum_revenue": "sum"},
        dropna=False,
        margins=False,
    )
    out.columns = [
        ", ".join(str(level).replace(",", "\\,") for level in col if level is not None)
        for col in out.columns.to_flat_index()
    ]
    return out.reset_index(level=0)


def main() -> None:
    print(f"pandas {pd.__version__}, numpy {np.__version__}")
    for rows, runs in [(10_000, 30), (1_000_000, 7)]:
        df = frame(rows)
        pivot_flatten(df)  # warm-up
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            out = pivot_flatten(df)
            times.append(time.perf_counter() - start)
        med = statistics.median(times)
        print(f"pivot+flatten {rows:>9} rows: median {med * 1000:.2f} ms over {runs} runs "
              f"-> {out.shape[0]} x {out.shape[1]}")


if __name__ == "__main__":
    main()
