"""Bulk calls from Python against the same engine calls from Rust and against the same work with
Python's sqlite3 and the lmdb package, in one run (docs/BENCHMARKS.md has the figures).

Workloads, each timed `--repeats` times (the table shows medians):
  put       N ascending u32 keys (a numpy array) into an empty key-only table, one transaction,
            commit included, no fsync (tersedb durability "none"; sqlite journal_mode=OFF,
            synchronous=OFF; lmdb sync=False). Converting the array into what sqlite3 / lmdb
            take is part of their time.
  sum       SUM of every key (tersedb: the median of 21 calls per repeat).
  contains  1M seeded random probes in [0, 2N) (half present) to a found mask: `contains_many`
            for tersedb, `SELECT k ... WHERE k IN (30,000 probes)` batches for sqlite3, one
            `get` per probe for lmdb (its Python API has no batch lookup).
The Rust baseline is `cargo run --release -p tersedb --example bulk_calls` (the calls
`put_many`, `sum` and `contains_many` make, in a Rust loop).

Usage: python crates/python/bench/bench.py [--keys N] [--repeats R] [--dir DIR] [--no-peers]
Needs the tersedb package (pip install crates/python), numpy, lmdb, and cargo.
"""

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import tersedb

ROOT = Path(__file__).resolve().parents[3]
SUM_CALLS = 21  # a SUM takes milliseconds: each repeat reports the median of 21 calls


def probes(n):
    """The probe sequence of examples/bulk_calls.rs (xorshift64, seed 42)."""
    out = np.empty(1_000_000, dtype=np.uint32)
    x = 42
    mask = (1 << 64) - 1
    for i in range(len(out)):
        x ^= (x << 13) & mask
        x ^= x >> 7
        x ^= (x << 17) & mask
        out[i] = x % (2 * n)
    return out


def rust(path, n, codec, repeats):
    cmd = ["cargo", "run", "--release", "-q", "-p", "tersedb", "--example", "bulk_calls", "--"]
    out = subprocess.run(
        cmd + [path, str(n), codec or "none", str(repeats)],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def python_tersedb(path, n, codec, repeats, probe):
    keys = np.arange(n, dtype=np.uint32)
    t = {"put": [], "sum": [], "contains": []}
    for _ in range(repeats):
        if os.path.exists(path):
            os.remove(path)
        env = tersedb.open(path, durability="none")
        db = env.create_db("t", compression=codec)
        s = time.perf_counter()
        with env.write() as w:
            w.put_many(db, keys)
        t["put"].append(time.perf_counter() - s)
        with env.read() as r:
            sums = []
            for _ in range(SUM_CALLS):
                s = time.perf_counter()
                total = r.sum(db)
                sums.append(time.perf_counter() - s)
                assert total == n * (n - 1) // 2
            t["sum"].append(med(sums))
            s = time.perf_counter()
            found = r.contains_many(db, probe)
            t["contains"].append(time.perf_counter() - s)
            assert found.sum() == (probe < n).sum()
        env.close()
    os.remove(path)
    return t


def python_sqlite(path, n, repeats, probe):
    keys = np.arange(n, dtype=np.uint32)
    plist = probe.tolist()
    t = {"put": [], "sum": [], "contains": []}
    for _ in range(repeats):
        if os.path.exists(path):
            os.remove(path)
        con = sqlite3.connect(path)
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        con.execute("CREATE TABLE t(k INTEGER PRIMARY KEY)")
        con.commit()
        s = time.perf_counter()
        con.executemany("INSERT INTO t(k) VALUES (?)", zip(keys.tolist()))
        con.commit()
        t["put"].append(time.perf_counter() - s)
        s = time.perf_counter()
        total = con.execute("SELECT SUM(k) FROM t").fetchone()[0]
        t["sum"].append(time.perf_counter() - s)
        assert total == n * (n - 1) // 2
        s = time.perf_counter()
        # Batches of 30,000 probes in one IN list each (sqlite's limit is 32,766 parameters),
        # the present keys mapped back to a mask: a per-probe query costs ~20 us in sqlite3.
        found = np.zeros(len(plist), dtype=bool)
        for i in range(0, len(plist), 30_000):
            chunk = plist[i : i + 30_000]
            q = f"SELECT k FROM t WHERE k IN ({','.join('?' * len(chunk))})"
            present = np.array([r[0] for r in con.execute(q, chunk)], dtype=np.uint32)
            found[i : i + 30_000] = np.isin(probe[i : i + 30_000], present)
        t["contains"].append(time.perf_counter() - s)
        assert found.sum() == (probe < n).sum()
        con.close()
    os.remove(path)
    return t


def python_lmdb(path, n, repeats, probe):
    import lmdb

    keys = np.arange(n, dtype=np.uint32)
    pbytes = [p.tobytes() for p in probe]
    t = {"put": [], "sum": [], "contains": []}
    for _ in range(repeats):
        for p in (path, path + "-lock"):
            if os.path.exists(p):
                os.remove(p)
        env = lmdb.open(path, map_size=1 << 34, subdir=False, sync=False, metasync=False, max_dbs=2)
        db = env.open_db(b"t", integerkey=True)  # native-order u32 keys, ordered numerically
        s = time.perf_counter()
        kb = memoryview(keys.tobytes())
        with env.begin(write=True, db=db) as txn:
            txn.cursor().putmulti(((kb[i : i + 4], b"") for i in range(0, 4 * n, 4)), append=True)
        t["put"].append(time.perf_counter() - s)
        with env.begin(db=db) as txn:
            s = time.perf_counter()
            ks = np.frombuffer(b"".join(txn.cursor().iternext(values=False)), dtype=np.uint32)
            total = int(ks.sum(dtype=np.uint64))
            t["sum"].append(time.perf_counter() - s)
            assert total == n * (n - 1) // 2
            s = time.perf_counter()
            hits = sum(txn.get(p) is not None for p in pbytes)
            t["contains"].append(time.perf_counter() - s)
            assert hits == (probe < n).sum()
        env.close()
    for p in (path, path + "-lock"):
        os.remove(p)
    return t


def med(v):
    return statistics.median(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=10_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temporary one)")
    ap.add_argument("--no-peers", action="store_true", help="tersedb only (Python and Rust)")
    a = ap.parse_args()
    n = a.keys
    d = a.dir or tempfile.mkdtemp(prefix="tersedb-bench-")
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "tersedb", "--example", "bulk_calls"],
        cwd=ROOT, check=True,
    )
    probe = probes(n)
    rows = {}
    # Rust and Python alternate, one repeat each, so a change of load on a shared machine
    # falls on both.
    for _ in range(a.repeats):
        for codec in (None, "bp128"):
            name = codec or "none"
            for who, t in (
                ("Rust", rust(f"{d}/rust.tdb", n, codec, 1)),
                ("Python", python_tersedb(f"{d}/py.tdb", n, codec, 1, probe)),
            ):
                row = rows.setdefault(f"tersedb {name}: {who}", {"put": [], "sum": [], "contains": []})
                for op in row:
                    row[op] += t[op]
    if not a.no_peers:
        peers = max(1, min(a.repeats, 3))
        rows["sqlite3 (Python)"] = python_sqlite(f"{d}/s.sqlite", n, peers, probe)
        rows["lmdb (Python)"] = python_lmdb(f"{d}/l.mdb", n, peers, probe)

    cpu = next(
        (l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"
    )
    print(f"{n:,} ascending u32 keys, 1M probes, median of {a.repeats} (peers: up to 3); CPU: {cpu}\n")
    print("| | put_many | sum (full range) | contains_many (1M) |")
    print("|---|---:|---:|---:|")
    for name, t in rows.items():
        print(f"| {name} | {med(t['put']):.3f} s | {med(t['sum']) * 1e3:.2f} ms | {med(t['contains']):.3f} s |")
    print()
    for codec in ("none", "bp128"):
        r, p = rows[f"tersedb {codec}: Rust"], rows[f"tersedb {codec}: Python"]
        over = {op: med(p[op]) / med(r[op]) - 1 for op in ("put", "sum", "contains")}
        print(
            f"Python over Rust, {codec}: put_many {over['put']:+.1%}, sum {over['sum']:+.1%}, "
            f"contains_many {over['contains']:+.1%}"
        )
    print("\nraw seconds:", json.dumps(rows))


if __name__ == "__main__":
    main()
