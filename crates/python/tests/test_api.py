"""The package's contract beyond the model: errors and their classes, transactions that raise,
wrong arrays, threads sharing a snapshot, the GIL released during bulk calls, records of every
type, queries, and pandas/arrow conversion."""

import threading
import time

import numpy as np
import pytest

import tersedb


@pytest.fixture
def env(tmp_path):
    e = tersedb.open(tmp_path / "t.tdb")
    yield e
    e.close()


def test_exception_in_block_aborts(env):
    db = env.create_db("a")
    with env.write() as w:
        w.put_many(db, np.array([1, 2, 3], dtype=np.uint32))
    with pytest.raises(ZeroDivisionError):
        with env.write() as w:
            w.put_many(db, np.array([10, 11], dtype=np.uint32))
            assert w.len(db) == 5
            1 / 0
    with env.read() as r:
        assert r.range(db).keys.tolist() == [1, 2, 3]
    # The aborted transaction is over: a new writer can start.
    with env.write() as w:
        assert w.contains(db, 2)


def test_engine_errors_map_to_classes(env, tmp_path):
    db = env.create_db("a", record="u64")
    with pytest.raises(tersedb.DbExists, match='"a" already exists'):
        env.create_db("a")
    with pytest.raises(tersedb.DbNotFound):
        env.db("nope")
    with pytest.raises(tersedb.KeyExists, match='key 5 is already in database "a"'):
        with env.write() as w:
            w.put(db, 5, 1)
            w.put(db, 5, 2, mode="insert")
    with env.read() as r:
        assert not r.contains(db, 5)  # the block raised: aborted
    with pytest.raises(tersedb.KeyExists):
        with env.write() as w:
            w.put_many(db, np.array([7, 7], dtype=np.uint32), np.array([1, 2], dtype=np.uint64), mode="insert")
    with pytest.raises(tersedb.InvalidKey):
        with env.write() as w:
            w.put(db, 9, 1)
            w.put(db, 3, 1, mode="append")
    w = env.write()
    with pytest.raises(tersedb.WriteTxnActive):
        env.write()
    w.abort()
    with pytest.raises(tersedb.TransactionClosed):
        w.put(db, 1, 1)
    with pytest.raises(tersedb.TransactionClosed):
        w.commit()
    with pytest.raises(tersedb.Locked):
        tersedb.open(tmp_path / "t.tdb")
    with pytest.raises(tersedb.QueryError):
        env.read().query("SELECT NOPE(key) FROM a")
    with pytest.raises(tersedb.InvalidArgument):
        env.create_db("c64", key="u64", compression="bp128", block_size=1000)
    assert issubclass(tersedb.KeyExists, tersedb.Error)
    assert issubclass(tersedb.Corrupted, tersedb.Error)


def test_not_a_tersedb_file(tmp_path):
    p = tmp_path / "junk.tdb"
    p.write_bytes(b"hello" * 2000)
    with pytest.raises(tersedb.Error) as e:
        tersedb.open(p)
    assert isinstance(e.value, (tersedb.BadFormat, tersedb.Corrupted))


def test_corruption_is_reported(tmp_path):
    p = tmp_path / "c.tdb"
    env = tersedb.open(p, page_size=4096)
    db = env.create_db("a")
    with env.write() as w:
        w.put_many(db, np.arange(100_000, dtype=np.uint32))
    env.close()
    raw = bytearray(p.read_bytes())
    for off in range(3 * 4096 + 100, len(raw), 4096):  # a byte in every page after the metas
        raw[off] ^= 0xFF
    p.write_bytes(bytes(raw))
    with pytest.raises(tersedb.Corrupted, match="page"):
        env = tersedb.open(p)
        env.read().sum(env.db("a"))


def test_bad_arrays(env):
    db = env.create_db("a", record="f64")
    d64 = env.create_db("b", key="u64")
    with env.write() as w:
        with pytest.raises(TypeError, match="uint32"):
            w.put_many(db, np.arange(3), np.zeros(3))  # int64 keys
        with pytest.raises(TypeError, match="numpy array"):
            w.put_many(db, [1, 2, 3], np.zeros(3))
        with pytest.raises(ValueError, match="one-dimensional"):
            w.put_many(db, np.zeros((2, 2), dtype=np.uint32), np.zeros(4))
        with pytest.raises(TypeError, match="float64"):
            w.put_many(db, np.arange(3, dtype=np.uint32), np.zeros(3, dtype=np.float32))
        with pytest.raises(ValueError, match="must match"):
            w.put_many(db, np.arange(3, dtype=np.uint32), np.zeros(4))
        with pytest.raises(TypeError, match="values are required"):
            w.put_many(db, np.arange(3, dtype=np.uint32))
        with pytest.raises(TypeError, match="uint64"):
            w.put_many(d64, np.arange(3, dtype=np.uint32))
        with pytest.raises(TypeError, match="values=None"):
            w.put_many(d64, np.arange(3, dtype=np.uint64), np.zeros(3))
        with pytest.raises(TypeError):
            w.put_many(d64, np.arange(3, dtype=">u8"))  # big-endian
        with pytest.raises(ValueError, match="out of range"):
            w.put(db, -1, 1.0)
        with pytest.raises(ValueError, match="out of range"):
            w.put(db, 2**32, 1.0)
        with pytest.raises(TypeError, match="int"):
            w.put(db, "7", 1.0)
        with pytest.raises(TypeError, match="f64"):
            w.put(db, 7, "x")
        with pytest.raises(ValueError, match="mode"):
            w.put(db, 7, 1.0, mode="replace")
        # Strided (non-contiguous) arrays are accepted and copied.
        k = np.arange(20, dtype=np.uint32)[::2]
        assert w.put_many(db, k, np.arange(20, dtype=np.float64)[::2]) == 10
        assert w.get(db, 18) == 18.0
        # numpy scalars work as single keys.
        assert w.get(db, np.uint32(4)) == 4.0
    with pytest.raises(ValueError, match="record must be"):
        env.create_db("x", record="i8")
    with pytest.raises(ValueError, match="unknown compression"):
        env.create_db("x", compression="zip")


def test_records_of_every_type(env):
    n = 1000
    keys = np.arange(n, dtype=np.uint32) * 3
    cases = {
        "u32": np.arange(n, dtype=np.uint32) ^ 0xDEADBEEF,
        "u64": np.arange(n, dtype=np.uint64) << np.uint64(40),
        "i64": -np.arange(n, dtype=np.int64) * 10**12,
        "i32": (np.arange(n, dtype=np.int32) - 500) * 4_000_000,
        "i16": (np.arange(n, dtype=np.int16) - 500) * 60,
        "f64": np.linspace(-1, 1, n),
    }
    for (rec, vals), rc in [(c, rc) for c in cases.items() for rc in ("none", "auto")]:
        name = f"{rec}_{rc}"
        db = env.create_db(name, record=rec, compression="bp128", record_compression=rc)
        with env.write() as w:
            w.put_many(db, keys, vals)
        with env.read() as r:
            got, found = r.get_many(db, keys)
            assert found.all()
            assert got.dtype == vals.dtype and (got == vals).all()
            rk, rv = r.range(db, 30, 60)
            assert rk.tolist() == list(range(30, 61, 3))
            assert (rv == vals[10:21]).all()
            assert r.get(db, 3) == vals[1].item()
            assert r.query(f"SELECT COUNT(*) FROM {name} WHERE key <= 30") == {"COUNT(*)": 11}
            assert r.query(f"SELECT MAX(record) FROM {name}") == {"MAX(record)": vals.max().item()}
    with pytest.raises(ValueError, match="record_compression"):
        env.create_db("bad", record="f64", record_compression="zstd")
    with pytest.raises(Exception, match="compressed records need fixed-size records"):
        env.create_db("blobs_packed", record="bytes", record_compression="auto")
    db = env.create_db("blobs", record="bytes")
    blobs = [bytes([i % 256]) * (i * 37 % 5000) for i in range(300)]
    with env.write() as w:
        w.put_many(db, np.arange(300, dtype=np.uint32), blobs)
        with pytest.raises(TypeError, match="bytes"):
            w.put_many(db, np.arange(2, dtype=np.uint32), ["a", "b"])
    with env.read() as r:
        vals, found = r.get_many(db, np.array([0, 299, 1000], dtype=np.uint32))
        assert vals == [blobs[0], blobs[299], None] and found.tolist() == [True, True, False]
        assert r.range(db, 10, 12).values == blobs[10:13]
        assert list(r.items(db, 5, 6)) == [(5, blobs[5]), (6, blobs[6])]


def test_i32_and_i16_records(env):
    # int32 and int16 arrays in and out (no int64 conversion), the extremes, sums past the
    # type's range, and values that do not fit refused.
    n = 3000
    keys = np.arange(n, dtype=np.uint64) * 10
    for rec, dt in [("i32", np.int32), ("i16", np.int16)]:
        info = np.iinfo(dt)
        vals = ((np.arange(n) % 41) - 20).astype(dt)
        vals[::97] = info.min
        vals[::89] = info.max
        db = env.create_db(rec, key="u64", record=rec)
        assert db.record == rec
        with env.write() as w:
            with pytest.raises(TypeError, match="int32" if rec == "i32" else "int16"):
                w.put_many(db, keys, vals.astype(np.int64))
            w.put_many(db, keys, vals)
            with pytest.raises(ValueError, match=f"does not fit {rec}"):
                w.put(db, 1, int(info.max) + 1)
            with pytest.raises(ValueError, match=f"does not fit {rec}"):
                w.put(db, 1, int(info.min) - 1)
        with env.read() as r:
            got, found = r.get_many(db, keys)
            assert found.all() and got.dtype == dt and (got == vals).all()
            assert r.get(db, 970) == int(info.min) and r.get(db, 10) == -19
            rk, rv = r.range(db, 0, 100)
            assert rv.dtype == dt and rv.tolist() == vals[:11].tolist()
            total = int(vals.astype(np.int64).sum())
            assert total > int(info.max)
            res = r.query(f"SELECT SUM(record), MIN(record), MAX(record) FROM {rec}")
            assert res == {"SUM(record)": total, "MIN(record)": int(info.min), "MAX(record)": int(info.max)}
            neg = vals[vals < 0].astype(np.int64)
            res = r.query(f"SELECT COUNT(*), SUM(record) FROM {rec} WHERE record < 0")
            assert res == {"COUNT(*)": len(neg), "SUM(record)": int(neg.sum())}


def test_query_returns_columns(env):
    db = env.create_db("events", record="i64")
    keys = np.arange(1, 101, dtype=np.uint32)
    with env.write() as w:
        w.put_many(db, keys, keys.astype(np.int64) * -2)
    with env.read() as r:
        res = r.query("SELECT COUNT(*), SUM(key), AVG(key), MIN(record), TOP(2), MAX(key) FROM events WHERE key > 90")
        assert res == {
            "COUNT(*)": 10,
            "SUM(key)": sum(range(91, 101)),
            "AVG(key)": 95.5,
            "MIN(record)": -200,
            "TOP(2, key)": [100, 99],
            "MAX(key)": 100,
        }
        assert r.query("SELECT AVG(key) FROM events WHERE key > 1000") == {"AVG(key)": None}


def test_sum_is_exact_beyond_64_bits(env):
    db = env.create_db("big", key="u64")
    keys = np.array([2**64 - 1 - i for i in range(1000)], dtype=np.uint64)
    with env.write() as w:
        w.put_many(db, keys)
    with env.read() as r:
        assert r.sum(db) == sum(int(k) for k in keys)
        assert r.max(db) == 2**64 - 1


def test_threads_read_one_snapshot(env):
    db = env.create_db("t", compression="streamvbyte")
    keys = np.arange(0, 2_000_000, 2, dtype=np.uint32)
    with env.write() as w:
        w.put_many(db, keys)
    r = env.read()
    with env.write() as w:  # a later commit is invisible to the snapshot
        w.put_many(db, np.array([1, 3], dtype=np.uint32))
    expect = int(keys.sum(dtype=np.uint64))
    errors = []

    def reader(i):
        try:
            for _ in range(3):
                assert r.sum(db) == expect
                assert r.len(db) == len(keys)
                probe = keys[i::7][:10000]
                assert r.contains_many(db, probe).all()
                assert (r.range(db, 1000, 3000).keys == np.arange(1000, 3001, 2)).all()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
    r.close()
    with pytest.raises(tersedb.TransactionClosed):
        r.len(db)


def test_bulk_calls_release_the_gil(env):
    db = env.create_db("g")
    keys = np.arange(3_000_000, dtype=np.uint32)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.01)
    before = len(ticks)
    start = time.perf_counter()
    with env.write(durability="none") as w:
        w.put_many(db, keys)
    took = time.perf_counter() - start
    stop.set()
    t.join()
    # While put_many ran (about a second), the other thread kept running Python code; with the
    # GIL held it would not have ticked at all (Rust code never reaches the eval loop's switch).
    assert len(ticks) - before >= 10, (len(ticks) - before, took)


def test_write_txn_reads_its_own_writes(env):
    db = env.create_db("w", record="u32")
    with env.write() as w:
        w.put(db, 1, 10)
        assert w.get(db, 1) == 10
        assert w.get(db, 2, default=-1) == -1
        vals, found = w.get_many(db, np.array([1, 2], dtype=np.uint32))
        assert vals.tolist() == [10, 0] and found.tolist() == [True, False]
        assert w.contains_many(db, np.array([1, 2], dtype=np.uint32)).tolist() == [True, False]
        assert w.erase(db, 1) and not w.erase(db, 1)
        w2 = w.create_db("inner")
        assert w.db("inner").name == w2.name == "inner"
        w.drop_db("inner")
    assert env.dbs() == ["w"]


def test_reopen_and_read_only(tmp_path):
    p = tmp_path / "r.tdb"
    with tersedb.open(p, durability="none") as env:
        db = env.create_db("a", record="i64")
        with env.write() as w:
            w.put_many(db, np.arange(10, dtype=np.uint32), np.arange(10, dtype=np.int64) - 5)
        assert env.check() == []
    assert env.closed
    with pytest.raises(tersedb.Closed):
        env.read()
    ro = tersedb.open(p, read_only=True)
    assert ro.read_only
    db = ro.db("a")
    assert (db.key, db.record, db.compression) == ("u32", "i64", "auto")
    assert db.record_compression == "auto"
    assert ro.read().get(db, 0) == -5
    with pytest.raises(tersedb.ReadOnly):
        ro.write()
    with pytest.raises(tersedb.Error):
        tersedb.open(tmp_path / "missing.tdb", create=False)


def test_to_pandas():
    pd = pytest.importorskip("pandas")
    env = tersedb.in_memory()
    db = env.create_db("p", record="f64")
    keys = np.arange(5, dtype=np.uint32)
    with env.write() as w:
        w.put_many(db, keys, keys * 0.5)
    df = env.read().range(db).to_pandas()
    assert list(df.columns) == ["key", "value"]
    assert df["key"].dtype == np.uint32
    assert df["value"].tolist() == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert isinstance(df, pd.DataFrame)


def test_to_arrow():
    pa = pytest.importorskip("pyarrow")
    env = tersedb.in_memory()
    db = env.create_db("p", key="u64")
    with env.write() as w:
        w.put_many(db, np.array([5, 9], dtype=np.uint64))
    t = env.read().range(db).to_arrow()
    assert t.column_names == ["key"] and t.column("key").type == pa.uint64()


def test_range_hands_over_the_buffer():
    env = tersedb.in_memory()
    db = env.create_db("z")
    with env.write() as w:
        w.put_many(db, np.arange(10, dtype=np.uint32))
    keys = env.read().range(db).keys
    # Owned by a Rust Vec handed to numpy (base is the capsule holding it), writable, no copy.
    assert keys.base is not None and keys.flags.writeable and keys.flags.c_contiguous


def test_to_polars():
    pl = pytest.importorskip("polars")
    env = tersedb.in_memory()
    db = env.create_db("p", record="i64")
    keys = np.array([2, 4, 8], dtype=np.uint32)
    with env.write() as w:
        w.put_many(db, keys, np.array([-1, 0, 7], dtype=np.int64))
    df = env.read().range(db).to_polars()
    assert isinstance(df, pl.DataFrame)
    assert df.columns == ["key", "value"]
    assert df["key"].to_list() == [2, 4, 8]
    assert df["value"].to_list() == [-1, 0, 7]


def test_defaults_compress_and_none_does_not(tmp_path):
    """Without `compression`/`record_compression` a database gets what DbConfig::new gives:
    integer keys "auto", numeric records compressed, byte strings "head-tail"; "none" stores
    them as they are. Both hold the same data, the defaults in far fewer bytes."""
    n = 100000
    keys = np.arange(n, dtype=np.uint64) * 1000 + 1_790_000_000_000
    vals = np.round(np.random.default_rng(3).uniform(15, 30, n), 2)
    sizes = {}
    for kind in ("default", "none"):
        path = tmp_path / f"{kind}.tdb"
        with tersedb.open(path, durability="none") as env:
            if kind == "default":
                db = env.create_db("t", key="u64", record="f64")
                assert (db.compression, db.record_compression) == ("auto", "auto")
                assert env.create_db("s", key="bytes").compression == "head-tail"
                assert env.create_db("b", record="bytes").record_compression is None
            else:
                db = env.create_db(
                    "t", key="u64", record="f64", compression="none", record_compression="none"
                )
                assert (db.compression, db.record_compression) == (None, None)
                assert env.create_db("s", key="bytes", compression="none").compression is None
            with env.write() as w:
                w.put_many(db, keys, vals)
            with env.read() as t:
                got, found = t.get_many(db, keys)
                assert found.all() and (got == vals).all()
            assert env.check() == []
        sizes[kind] = path.stat().st_size
    assert sizes["default"] * 3 < sizes["none"], sizes
