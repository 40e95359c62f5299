"""tersedb: an embedded key-value store whose B+-tree keeps integer keys compressed.

    import numpy as np, tersedb

    env = tersedb.open("events.tdb")
    db = env.create_db("events", key="u32", record="i64", compression="bp128")
    with env.write() as w:                      # commits on success, aborts on an exception
        keys = np.arange(0, 1_000_000, 3, dtype=np.uint32)
        w.put_many(db, keys, keys.astype(np.int64) * 10)
    with env.read() as r:                       # a snapshot, shareable between threads
        keys, values = r.range(db, 100, 200)     # numpy arrays; both ends inclusive
        total = r.sum(db)                        # computed inside the tree, block by block
        r.query("SELECT COUNT(*), AVG(record) FROM events WHERE key > 1000")   # a dict
        res = r.execute("SELECT key / 1000, AVG(record) FROM events GROUP BY key / 1000")
        res.columns, res.rows                    # names; a list of tuples
        res.to_dict()                            # name -> numpy array

Bulk calls take and return numpy arrays and release the GIL; errors are ``tersedb.Error``
subclasses carrying the engine's message.
"""

from ._tersedb import (  # noqa: F401
    BadFormat,
    Closed,
    ConfigMismatch,
    Corrupted,
    Db,
    DbExists,
    DbNotFound,
    DiskFull,
    Env,
    Error,
    InvalidArgument,
    InvalidKey,
    InvalidRecord,
    IoError,
    Iter,
    KeyExists,
    Locked,
    PreviousIo,
    QueryError,
    QueryResult,
    Range,
    ReadOnly,
    ReadTxn,
    TransactionClosed,
    WriteTxn,
    WriteTxnActive,
    __version__,
    in_memory,
    open,
)

__all__ = [
    "open",
    "in_memory",
    "Env",
    "Db",
    "ReadTxn",
    "WriteTxn",
    "Range",
    "Iter",
    "QueryResult",
    "Error",
    "IoError",
    "Corrupted",
    "BadFormat",
    "PreviousIo",
    "Locked",
    "ReadOnly",
    "WriteTxnActive",
    "DbNotFound",
    "DbExists",
    "ConfigMismatch",
    "KeyExists",
    "InvalidKey",
    "InvalidRecord",
    "InvalidArgument",
    "DiskFull",
    "QueryError",
    "TransactionClosed",
    "Closed",
]
