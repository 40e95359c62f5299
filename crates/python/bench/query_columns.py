"""QueryResult columns as numpy arrays: `to_dict()` and `column()` of a row query of N rows
(`SELECT key, record`), u32 keys with i64 records and with f64 records, and of a GROUP BY of
N / 10 groups. Each figure is the median of `--repeats` calls on one result (the query runs once
per table, timed apart). docs/BENCHMARKS.md ("Query results as numpy columns") has the figures.

Usage: python crates/python/bench/query_columns.py [--rows N] [--repeats R]
Needs the tersedb package (pip install crates/python) and numpy.
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import tersedb


def median_s(f, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    n = a.rows
    with tempfile.TemporaryDirectory() as d:
        env = tersedb.open(str(Path(d) / "cols.tdb"))
        keys = np.arange(0, 3 * n, 3, dtype=np.uint32)
        ints = env.create_db("ints", key="u32", record="i64")
        floats = env.create_db("floats", key="u32", record="f64")
        with env.write(durability="none") as w:
            w.put_many(ints, keys, keys.astype(np.int64) - n)
            w.put_many(floats, keys, keys.astype(np.float64) / 7.0)
        print(f"{n:,} rows, median of {a.repeats}")
        print(f"{'result':<38} {'execute s':>10} {'to_dict s':>10} {'column s':>10}")
        with env.read() as r:
            for label, q, col in [
                ("SELECT key, record FROM ints", "SELECT key, record FROM ints", "record"),
                ("SELECT key, record FROM floats", "SELECT key, record FROM floats", "record"),
                (
                    "GROUP BY key / 30 (ints)",
                    "SELECT key / 30 AS b, COUNT(*) AS n, SUM(record) AS s FROM ints GROUP BY key / 30",
                    "s",
                ),
            ]:
                t = time.perf_counter()
                res = r.execute(q)
                ex = time.perf_counter() - t
                d = res.to_dict()
                assert all(isinstance(v, np.ndarray) for v in d.values()), label
                assert len(res) == len(next(iter(d.values())))
                td = median_s(res.to_dict, a.repeats)
                tc = median_s(lambda: res.column(col), a.repeats)
                print(f"{label:<38} {ex:>10.3f} {td:>10.3f} {tc:>10.3f}")
        env.close()


if __name__ == "__main__":
    main()
