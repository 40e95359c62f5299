"""The package against a dict model: random bulk puts and erases (committed or aborted), reopen,
and every read (get, get_many, contains_many, range, iteration, sum/count/min/max) compared
with the model after each step. Hypothesis prints the failing sequence; its seed is in the
report (`--hypothesis-seed=N` replays it)."""

import numpy as np
import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import tersedb

KINDS = [
    ("u32", None, None, np.uint32, None),
    ("u32", "i64", "bp128", np.uint32, np.int64),
    ("u32", "f64", "streamvbyte", np.uint32, np.float64),
    ("u64", "u64", None, np.uint64, np.uint64),
    ("u32", "u32", "for", np.uint32, np.uint32),
    ("u64", "i64", "pfor-delta", np.uint64, np.int64),
    ("u64", None, "auto", np.uint64, None),
    ("u32", "u32", "auto", np.uint32, np.uint32),
    ("u64", "i32", None, np.uint64, np.int32),
    ("u32", "i16", "bp128", np.uint32, np.int16),
]


def keys_strategy(kdt):
    # Small key ranges make collisions, erases of present keys and dense blocks likely; the
    # extremes of the key type are in every draw's reach.
    top = int(np.iinfo(kdt).max)
    key = st.one_of(st.integers(0, 3000), st.integers(top - 50, top))
    return st.lists(key, max_size=400)


class Model(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        import tempfile

        self.dir = tempfile.TemporaryDirectory()
        self.path = self.dir.name + "/m.tdb"
        self.env = tersedb.open(self.path, page_size=1024)
        self.model = {}
        self.kind = None

    def teardown(self):
        self.env.close()
        self.dir.cleanup()

    @precondition(lambda self: self.kind is None)
    @rule(kind=st.sampled_from(KINDS))
    def create(self, kind):
        self.kind = kind
        key, rec, comp, _, _ = kind
        self.db = self.env.create_db("t", key=key, record=rec, compression=comp)

    def values_for(self, keys, seed):
        _, rec, _, _, vdt = self.kind
        if vdt is None:
            return None
        rng = np.random.default_rng(seed)
        if vdt is np.float64:
            return rng.normal(size=len(keys)) * 1e6
        info = np.iinfo(vdt)
        return rng.integers(info.min, info.max, size=len(keys), dtype=vdt, endpoint=True)

    @precondition(lambda self: self.kind is not None)
    @rule(data=st.data(), seed=st.integers(0, 2**32), commit=st.booleans(), sort=st.booleans())
    def put_many(self, data, seed, commit, sort):
        kdt = self.kind[3]
        keys = np.array(data.draw(keys_strategy(kdt)), dtype=kdt)
        if sort:
            keys = np.unique(keys)
        vals = self.values_for(keys, seed)

        class Abort(Exception):
            pass

        try:
            with self.env.write() as w:
                new = w.put_many(self.db, keys, vals)
                expect = len(set(keys.tolist()) - set(self.model))
                assert new == expect
                if not commit:
                    raise Abort()
        except Abort:
            return
        for i, k in enumerate(keys.tolist()):
            self.model[k] = None if vals is None else vals[i].item()

    @precondition(lambda self: self.kind is not None)
    @rule(data=st.data())
    def erase_many(self, data):
        kdt = self.kind[3]
        keys = np.array(data.draw(keys_strategy(kdt)), dtype=kdt)
        present = set(self.model)
        with self.env.write() as w:
            n = w.erase_many(self.db, keys)
        assert n == len(set(keys.tolist()) & present)
        for k in keys.tolist():
            self.model.pop(k, None)

    @precondition(lambda self: self.kind is not None)
    @rule()
    def reopen(self):
        self.env.close()
        self.env = tersedb.open(self.path, create=False)
        self.db = self.env.db("t")

    @precondition(lambda self: self.kind is not None)
    @rule(data=st.data())
    def ranges(self, data):
        # Bounds on present keys (inclusive ends matter) as often as anywhere else.
        top = int(np.iinfo(self.kind[3]).max)
        bound = st.integers(0, 3100) | st.integers(top - 60, top)
        if self.model:
            bound = bound | st.sampled_from(sorted(self.model))
        lo, hi = sorted((data.draw(bound), data.draw(bound)))
        inside = sorted(k for k in self.model if lo <= k <= hi)
        with self.env.read() as r:
            keys, values = r.range(self.db, lo, hi)
            assert keys.dtype == self.kind[3]
            assert keys.tolist() == inside
            if values is not None:
                assert values.tolist() == [self.model[k] for k in inside]
            assert r.count(self.db, lo, hi) == len(inside)
            assert r.sum(self.db, lo, hi) == sum(inside)
            assert r.min(self.db, lo, hi) == (inside[0] if inside else None)
            assert r.max(self.db, lo, hi) == (inside[-1] if inside else None)

    @invariant()
    def reads_match(self):
        if self.kind is None:
            return
        kdt = self.kind[3]
        everything = sorted(self.model)
        with self.env.read() as r:
            assert r.len(self.db) == len(self.model)
            keys, values = r.range(self.db)
            assert keys.tolist() == everything
            assert list(r.keys(self.db)) == everything
            assert r.sum(self.db) == sum(everything)
            probe = np.array(everything[:50] + [1, 2, 3, 2999, 3001], dtype=kdt)
            vals, found = r.get_many(self.db, probe)
            assert found.tolist() == [k in self.model for k in probe.tolist()]
            assert r.contains_many(self.db, probe).tolist() == found.tolist()
            if vals is None:
                assert self.kind[1] is None
            else:
                for k, v, f in zip(probe.tolist(), vals.tolist(), found.tolist()):
                    assert v == (self.model[k] if f else 0)
                    assert r.get(self.db, k) == (self.model[k] if f else None)
            if self.kind[1] is not None:
                assert list(r.items(self.db)) == [(k, self.model[k]) for k in everything]


Model.TestCase.settings = settings(max_examples=40, stateful_step_count=15, deadline=None)
TestModel = Model.TestCase


@pytest.mark.parametrize("n", [0, 1, 1023, 1024, 1025, 5000])
def test_iteration_crosses_batches(n):
    env = tersedb.in_memory()
    db = env.create_db("s", key="u64")
    keys = np.arange(n, dtype=np.uint64) * 7 + 2**40
    with env.write() as w:
        w.put_many(db, keys)
    with env.read() as r:
        assert list(r.keys(db)) == keys.tolist()
        assert list(r.keys(db, int(keys[n // 2]) if n else 0)) == keys[n // 2 :].tolist()
