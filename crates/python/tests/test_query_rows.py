"""Row and GROUP BY queries from Python (`execute`) against a dict model: `GROUP BY key / N`
and `GROUP BY record` with every aggregate, rows in both orders with LIMIT/OFFSET, empty
results and NULL aggregates, string keys, uint64 keys above the int64 range, columns as numpy
arrays, pandas/arrow, and the errors. Hypothesis prints the failing example and its seed
(`--hypothesis-seed=N` replays it)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tersedb


def load(keys, recs, compression="auto"):
    env = tersedb.in_memory(page_size=1024)
    db = env.create_db("t", key="u64", record="i64", compression=compression)
    with env.write() as w:
        if keys:
            w.put_many(db, np.array(keys, dtype=np.uint64), np.array(recs, dtype=np.int64))
    return env, dict(zip(keys, recs))


entries = st.dictionaries(
    st.one_of(st.integers(0, 5000), st.integers(2**40, 2**40 + 300)),
    st.integers(-50, 50),
    max_size=300,
)
window = st.tuples(st.booleans(), st.one_of(st.none(), st.integers(0, 40)), st.integers(0, 30))


def order_limit(desc, limit, offset):
    text = " DESC" if desc else ""
    if limit is not None:
        text += f" LIMIT {limit}"
    if offset:
        text += f" OFFSET {offset}" if limit is not None else f" LIMIT 1000000 OFFSET {offset}"
    return text


def window_of(rows, desc, limit, offset):
    rows = rows[::-1] if desc else rows
    return rows[offset:][:limit] if limit is not None else rows[offset:]


@settings(max_examples=60, deadline=None)
@given(entries, st.sampled_from([1, 7, 100, 1000, 2**41]), window, st.sampled_from(["auto", "bp128", None]))
def test_group_by_key_buckets(m, width, win, compression):
    env, model = load(sorted(m), [m[k] for k in sorted(m)], compression)
    buckets = {}
    for k, v in sorted(model.items()):
        buckets.setdefault(k // width, []).append((k, v))
    want = [
        (
            b,
            b * width,
            len(es),
            sum(v for _, v in es),
            min(v for _, v in es),
            max(v for _, v in es),
            sum(v for _, v in es) / len(es),
            min(k for k, _ in es),
            sum(k for k, _ in es),
        )
        for b, es in sorted(buckets.items())
    ]
    desc, limit, offset = win
    with env.read() as r:
        res = r.execute(
            f"SELECT key / {width}, key / {width} * {width} AS start, COUNT(*) AS n, SUM(record), MIN(record), "
            f"MAX(record), AVG(record), MIN(key), SUM(key) FROM t GROUP BY key / {width} "
            f"ORDER BY key / {width}" + order_limit(desc, limit, offset)
        )
        got = res.rows
        assert got == window_of(want, desc, limit, offset)
        assert len(res) == len(got)
        assert res.columns == [
            f"key / {width}",
            "start",
            "n",
            "SUM(record)",
            "MIN(record)",
            "MAX(record)",
            "AVG(record)",
            "MIN(key)",
            "SUM(key)",
        ]
        cols = res.to_dict()
        assert list(cols) == res.columns
        assert cols["n"].dtype == np.int64 and cols["n"].tolist() == [g[2] for g in got]
        assert cols["AVG(record)"].dtype == (np.float64 if got else np.int64)
        assert cols["AVG(record)"].tolist() == [g[6] for g in got]
    env.close()


@settings(max_examples=60, deadline=None)
@given(entries, window, st.integers(0, 6000), st.integers(0, 6000))
def test_rows_in_order_with_limit_offset(m, win, a, b):
    env, model = load(sorted(m), [m[k] for k in sorted(m)])
    lo, hi = min(a, b), max(a, b)
    desc, limit, offset = win
    want = [(k, v) for k, v in sorted(model.items()) if lo <= k <= hi]
    with env.read() as r:
        res = r.execute(
            f"SELECT key, record FROM t WHERE key BETWEEN {lo} AND {hi} ORDER BY key" + order_limit(desc, limit, offset)
        )
        assert res.rows == window_of(want, desc, limit, offset)
        assert list(res) == res.rows
        star = r.execute("SELECT * FROM t ORDER BY key DESC")
        assert star.columns == ["key", "record"]
        assert star.rows == sorted(model.items(), reverse=True)
        if star.rows:
            assert star[0] == star.rows[0] and star[-1] == star.rows[-1]
            keys = star.column("key")
            assert keys.dtype == np.int64 and keys.tolist() == [k for k, _ in star.rows]
            assert star.column(1).tolist() == [v for _, v in star.rows]
    env.close()


@settings(max_examples=40, deadline=None)
@given(entries, window)
def test_group_by_record(m, win):
    env, model = load(sorted(m), [m[k] for k in sorted(m)])
    groups = {}
    for k, v in sorted(model.items()):
        groups.setdefault(v, []).append(k)
    want = [(v, len(ks), min(ks), max(ks), sum(ks) / len(ks)) for v, ks in sorted(groups.items())]
    desc, limit, offset = win
    with env.read() as r:
        res = r.execute(
            "SELECT record AS r, COUNT(*), MIN(key), MAX(key), AVG(key) FROM t GROUP BY record ORDER BY record"
            + order_limit(desc, limit, offset)
        )
        assert res.columns == ["r", "COUNT(*)", "MIN(key)", "MAX(key)", "AVG(key)"]
        assert res.rows == window_of(want, desc, limit, offset)
    env.close()


def test_empty_results_and_null_aggregates():
    env, _ = load([10, 20, 30], [1, 2, 3])
    with env.read() as r:
        none = r.execute("SELECT key, record FROM t WHERE key > 1000")
        assert len(none) == 0 and none.rows == [] and none.columns == ["key", "record"]
        cols = none.to_dict()
        assert cols["key"].dtype == np.int64 and len(cols["key"]) == 0
        with pytest.raises(IndexError, match="row 0 of a result of 0 rows"):
            none[0]
        assert r.execute("SELECT key / 5, COUNT(*) FROM t WHERE key > 1000 GROUP BY key / 5").rows == []
        agg = r.execute("SELECT COUNT(*), AVG(record), MIN(key), MAX(record) FROM t WHERE key > 1000")
        assert agg.rows == [(0, None, None, None)]
        assert agg.column("AVG(record)") == [None]  # NULL: a list, not a numpy array
        assert agg.column("COUNT(*)").tolist() == [0]
        assert r.query("SELECT COUNT(*), AVG(record) FROM t WHERE key > 1000") == {"COUNT(*)": 0, "AVG(record)": None}
        assert r.execute("SELECT COUNT(*), AVG(record) FROM t").rows == [(3, 2.0)]
    env.close()


def test_string_keys():
    env = tersedb.in_memory()
    db = env.create_db("fruit", key="bytes", record="u32")
    model = {b"apple": 3, b"apricot": 5, b"avocado": 3, b"banana": 2, b"blueberry": 5, b"cherry": 3}
    with env.write() as w:
        for k, v in model.items():
            w.put(db, k, v)
    with env.read() as r:
        res = r.execute("SELECT key, record FROM fruit WHERE key LIKE 'a%' ORDER BY key DESC LIMIT 2 OFFSET 1")
        assert res.rows == [(b"apricot", 5), (b"apple", 3)]
        assert res.column("key") == [b"apricot", b"apple"]
        assert res.column("record").tolist() == [5, 3]
        groups = r.execute("SELECT record, COUNT(*) AS n, MIN(key) FROM fruit GROUP BY record")
        want = {}
        for k, v in sorted(model.items()):
            want.setdefault(v, []).append(k)
        assert groups.rows == [(v, len(ks), ks[0]) for v, ks in sorted(want.items())]
        assert r.execute("SELECT COUNT(*) FROM fruit WHERE key >= 'b'").rows == [(3,)]
        assert r.execute("SELECT * FROM fruit").rows == sorted(model.items())
    env.close()


def test_uint64_keys_above_int64():
    big = [2**63 - 1, 2**63, 2**64 - 1]
    env, _ = load(big, [1, 2, 3])
    with env.read() as r:
        res = r.execute("SELECT key, record FROM t")
        keys = res.column("key")
        assert keys.dtype == np.uint64 and keys.tolist() == big
        assert res.column("record").dtype == np.int64
        s = r.execute("SELECT SUM(key) FROM t")
        assert s.rows == [(sum(big),)]
        assert s.column(0) == [sum(big)]  # beyond uint64: a list of Python ints
    env.close()


def test_lists_and_dataframes():
    env, model = load(list(range(0, 100, 3)), [k % 4 for k in range(0, 100, 3)])
    with env.read() as r:
        res = r.execute("SELECT key / 10 AS decade, COUNT(*) AS n, TOP(2) AS best, AVG(record) FROM t GROUP BY key / 10")
        assert res[0] == (0, 4, [9, 6], (0 + 3 + 2 + 1) / 4)
        assert res.column("best")[-1] == [99, 96]
        df = res.to_pandas()
        assert list(df.columns) == res.columns and df["n"].tolist() == res.column("n").tolist()
        table = res.to_arrow()
        assert table.column("decade").to_pylist() == list(range(10))
        assert res.to_polars()["n"].to_list() == res.column("n").tolist()
        assert "decade" in str(res) and "(10 rows)" in str(res)
        assert repr(res) == "QueryResult(10 rows: decade, n, best, AVG(record))"
    env.close()


def test_errors():
    env, _ = load([1, 2, 3], [4, 5, 6])
    with env.read() as r:
        with pytest.raises(tersedb.QueryError, match="execute"):
            r.query("SELECT key, record FROM t")
        with pytest.raises(tersedb.QueryError, match="execute"):
            r.query("SELECT key / 2, COUNT(*) FROM t GROUP BY key / 2")
        with pytest.raises(tersedb.QueryError, match="GROUP BY"):
            r.execute("SELECT key, COUNT(*) FROM t")
        with pytest.raises(tersedb.QueryError, match="did you mean"):
            r.execute("SELECT * FROM tt")
        res = r.execute("SELECT key, key FROM t")
        assert res.rows == [(1, 1), (2, 2), (3, 3)]
        with pytest.raises(ValueError, match="AS"):
            res.to_dict()
        with pytest.raises(KeyError, match='no column "nope"; the columns are "key", "key"'):
            res.column("nope")
        with pytest.raises(IndexError):
            res.column(2)
        assert res.column(-1).tolist() == [1, 2, 3]
        with pytest.raises(TypeError):
            res.column(1.5)
        with pytest.raises(IndexError):
            res[3]
        assert res[-3] == (1, 1)


def test_write_txn_sees_its_writes():
    env, _ = load([1, 2, 3], [4, 5, 6])
    db = env.db("t")
    with env.write() as w:
        w.put(db, 10, 7)
        assert w.execute("SELECT key, record FROM t WHERE key > 2").rows == [(3, 6), (10, 7)]
        assert w.query("SELECT COUNT(*) FROM t") == {"COUNT(*)": 4}
        w.abort()
    with env.read() as r:
        assert r.execute("SELECT COUNT(*) FROM t").rows == [(3,)]
    env.close()


def test_f64_records_group_and_average():
    env = tersedb.in_memory()
    db = env.create_db("temps", key="u64", record="f64", record_compression="auto")
    keys = np.arange(0, 600, dtype=np.uint64)
    vals = np.round(20 + np.sin(keys / 50.0) * 5, 1)
    vals[7] = np.nan
    vals[8] = -0.0
    vals[9] = 0.0
    with env.write() as w:
        w.put_many(db, keys, vals)
    model = dict(zip(keys.tolist(), vals.tolist()))
    with env.read() as r:
        res = r.execute("SELECT key / 60 AS minute, AVG(record), MAX(record) FROM temps WHERE key >= 60 GROUP BY key / 60")
        want = []
        for m in range(1, 10):
            vs = [v for k, v in model.items() if k // 60 == m]
            want.append((m, sum(vs) / len(vs), max(vs)))
        assert [row[0] for row in res] == [w[0] for w in want]
        got = res.to_dict()
        assert got["AVG(record)"].dtype == np.float64
        assert np.allclose(got["AVG(record)"], [w[1] for w in want], rtol=1e-12, atol=0)
        assert got["MAX(record)"].tolist() == [w[2] for w in want]
        # GROUP BY record: numbers in order, -0.0 with 0.0, NaN one group, last.
        groups = r.execute("SELECT record, COUNT(*) FROM temps GROUP BY record").rows
        finite = sorted({v for v in model.values() if v == v})
        assert [g[0] for g in groups[:-1]] == finite
        assert groups[-1][0] != groups[-1][0] and groups[-1][1] == 1  # NaN
        zeros = [g for g in groups if g[0] == 0.0]
        assert len(zeros) == 1 and zeros[0][1] == sum(1 for v in model.values() if v == 0.0)
        assert sum(g[1] for g in groups) == len(model)
    env.close()


def test_env_execute_runs_in_its_own_snapshot(tmp_path):
    env = tersedb.open(str(tmp_path / "e.tdb"))
    db = env.create_db("t", key="u64", record="i64")
    keys = np.arange(0, 3000, 3, dtype=np.uint64)
    with env.write() as w:
        w.put_many(db, keys, keys.astype(np.int64) - 500)
    q = "SELECT key / 100 AS b, COUNT(*) AS n, SUM(record) AS s FROM t WHERE key > 10 GROUP BY key / 100"
    res = env.execute(q)
    assert isinstance(res, tersedb.QueryResult)
    with env.read() as r:
        want = r.execute(q)
    assert res.columns == want.columns == ["b", "n", "s"]
    assert res.rows == want.rows and len(res) == 30
    got, exp = res.to_dict(), want.to_dict()
    assert all(np.array_equal(got[c], exp[c]) and got[c].dtype == exp[c].dtype for c in exp)
    assert env.execute("SELECT COUNT(*), AVG(key) FROM t").rows == [(1000, 1498.5)]
    # The last commit only: an open write transaction neither blocks it nor shows through.
    with env.write() as w:
        w.put(db, 10**6, 1)
        assert w.execute("SELECT COUNT(*) FROM t").rows == [(1001,)]
        assert env.execute("SELECT COUNT(*) FROM t").rows == [(1000,)]
    assert env.execute("SELECT key, record FROM t ORDER BY key DESC LIMIT 1").rows == [(10**6, 1)]
    with pytest.raises(tersedb.QueryError, match="did you mean"):
        env.execute("SELECT * FROM tt")
    env.close()
    with pytest.raises(tersedb.Error):
        env.execute("SELECT COUNT(*) FROM t")


def test_columns_as_numpy_match_the_rows():
    """to_dict()/column() build each numeric column in one pass: the arrays hold exactly the
    values of the rows, with the dtype of the whole column (int64; uint64 when a value is above
    int64; float64), and any other column (NULL, bytes, lists, a mix) is a list."""
    rng = np.random.default_rng(7)
    env = tersedb.in_memory()
    ints = env.create_db("ints", key="u64", record="i64")
    floats = env.create_db("floats", key="u32", record="f64")
    keys = np.unique(rng.integers(0, 2**62, 5000, dtype=np.uint64))
    keys[-1] = 2**64 - 1  # the last key above int64: the key column is uint64
    recs = rng.integers(-(2**62), 2**62, len(keys), dtype=np.int64)
    fkeys = np.arange(0, 5000, dtype=np.uint32)
    frecs = rng.standard_normal(len(fkeys))
    frecs[3] = np.nan
    with env.write() as w:
        w.put_many(ints, keys, recs)
        w.put_many(floats, fkeys, frecs)
    res = env.execute("SELECT key, record FROM ints")
    d = res.to_dict()
    assert d["key"].dtype == np.uint64 and np.array_equal(d["key"], keys)
    assert d["record"].dtype == np.int64 and np.array_equal(d["record"], recs)
    assert [tuple(r) for r in zip(d["key"].tolist(), d["record"].tolist())] == res.rows
    # Without the big key: int64 keys.
    small = env.execute(f"SELECT key FROM ints WHERE key < {2**63}").column("key")
    assert small.dtype == np.int64 and np.array_equal(small, keys[:-1].astype(np.int64))
    f = env.execute("SELECT key, record FROM floats").to_dict()
    assert f["key"].dtype == np.int64 and np.array_equal(f["key"], fkeys)
    assert f["record"].dtype == np.float64
    assert np.array_equal(f["record"], frecs, equal_nan=True)
    # Empty results: empty int64 arrays; aggregates: one-element arrays, or a list for NULL.
    empty = env.execute("SELECT key, record FROM floats WHERE key > 10000").to_dict()
    assert all(v.dtype == np.int64 and v.size == 0 for v in empty.values())
    agg = env.execute("SELECT COUNT(*) AS n, AVG(record) AS a, MAX(key) AS m FROM floats WHERE key > 10000")
    assert agg.column("n").tolist() == [0] and agg.column("n").dtype == np.int64
    assert agg.column("a") == [None] and agg.column("m") == [None]
    assert len(agg) == 1 and agg[0] == agg[-1] == (0, None, None) and agg.rows == [(0, None, None)]
    with pytest.raises(IndexError, match="row 1 of a result of 1 rows"):
        agg[1]
    assert res[len(keys) - 1] == res[-1] == (2**64 - 1, int(recs[-1]))
    # Byte strings and lists stay lists, as the rows have them.
    names = env.create_db("names", key="bytes", record="u32")
    with env.write() as w:
        w.put(names, b"b", 2)
        w.put(names, b"a", 1)
    res = env.execute("SELECT key, record FROM names")
    assert res.column("key") == [b"a", b"b"] and res.column("record").tolist() == [1, 2]
    tops = env.execute("SELECT key / 2500 AS b, TOP(2) AS t FROM floats GROUP BY key / 2500")
    assert tops.column("t") == [[2499, 2498], [4999, 4998]]
    env.close()
