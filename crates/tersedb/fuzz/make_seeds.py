#!/usr/bin/env python3
"""Writes the seed corpora of the tersedb fuzz targets (seeds/<target>/): small inputs that reach
every list kind and operation; see tests/fuzz/*.rs for the input formats. Re-run after changing
a format: `python3 crates/tersedb/fuzz/make_seeds.py`."""
import os, struct

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = 3 + 9 + 8      # pages: u32, u64, Binary(6), 9 codecs, 8 schemes
CONFIGS = 1 + 9 + 8    # engine: u64, 9 codecs, 8 schemes


def write(target, name, data):
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def patch(page, off, data):
    return bytes([page]) + struct.pack("<H", off) + bytes([len(data)]) + data


# pages: every kind untouched (records none / fixed / variable in turn), and with one forged
# count (leaf header bytes 12..16) and one flipped payload byte on page 5.
for k in range(KINDS):
    rec = k % 3
    write("pages", f"kind{k:02}", bytes([k, rec, 0]))
    write("pages", f"kind{k:02}-count", bytes([k, rec, 0]) + patch(5, 12, b"\xff\xff\x00\x00"))
    write("pages", f"kind{k:02}-flip", bytes([k, rec, 4]) + patch(5, 40, b"\x10") + patch(6, 200, b"\x01"))
    write("pages", f"kind{k:02}-write", bytes([k, rec, 2]) + patch(4, 17, b"\x00"))

# pages, record kind 5 (compressed i16 status codes, one value nine times in ten: PDICT chunks)
# behind u32 keys, a codec (bp128), and auto on u32 and u64 keys; the patches land in leaves.
for k in (0, 7, 29, 30):
    write("pages", f"pdict-kind{k:02}", bytes([k, 5, 0]))
    write("pages", f"pdict-kind{k:02}-count", bytes([k, 5, 0]) + patch(5, 12, b"\xff\xff\x00\x00"))
    write("pages", f"pdict-kind{k:02}-flip", bytes([k, 5, 4]) + patch(5, 1000, b"\x10") + patch(6, 990, b"\x01"))
    write("pages", f"pdict-kind{k:02}-write", bytes([k, 5, 2]) + patch(5, 1010, b"\x00"))


# engine: ops (see tests/fuzz/engine.rs): 0 upsert, 1 insert, 2 erase [n u16][sel u8];
# 3 run [n u16][len u8]; 4 cursor erase [n u16][step u8]; 5 commit [sel u8]; 6 abort;
# 7 reopen; 8 crash [seed u8]; 9 fault [f u8]; 10 hold snapshot; 11 drop it; 12 check;
# 13 reads [lo u16][span u8][steps u8].
def key(n):
    return struct.pack("<H", n)


def prog(*parts):
    return b"".join(parts)


for c in range(CONFIGS):
    base = prog(
        b"\x03" + key(0) + bytes([200]),           # 200 keys ascending
        b"\x05\x01",                                # durable commit
        b"\x00" + key(50) + bytes([16]),            # upsert (an overflow value for var records)
        b"\x02" + key(7) + bytes([0]),              # erase
        b"\x01" + key(7) + bytes([3]),              # insert back
        b"\x0d" + key(20) + bytes([30, 25]),        # reads in the write txn and outside
        b"\x05\x00",                                # non-durable commit
        b"\x0a",                                    # hold a snapshot
        b"\x04" + key(10) + bytes([2]),             # cursor erase every 3rd
        b"\x05\x01",
        b"\x0d" + key(0) + bytes([60, 39]),
        b"\x0b",
    )
    write("engine", f"cfg{c:02}-basic", bytes([c]) + base)
    faults = prog(
        b"\x03" + key(100) + bytes([150]),
        b"\x05\x01",
        b"\x09" + bytes([4 * 2]),                   # the 3rd write from now fails
        b"\x03" + key(300) + bytes([80]),
        b"\x05\x01",                                # commit fails: reopen, old or new state
        b"\x09" + bytes([1 + 4 * 1]),               # the 2nd sync fails
        b"\x00" + key(5) + bytes([1]),
        b"\x05\x01",
        b"\x09" + bytes([2 + 4 * 1]),               # disk full one page past the end
        b"\x03" + key(500) + bytes([120]),
        b"\x05\x01",
        b"\x09\x03",                                # faults off
        b"\x08\x05",                                # crash images
        b"\x07",                                    # reopen
        b"\x0c",                                    # check
        b"\x0d" + key(90) + bytes([100, 20]),
    )
    write("engine", f"cfg{c:02}-faults", bytes([c]) + faults)

# query: real SELECTs over the harness's database `db` (u64 keys, i64 records).
queries = [
    "SELECT COUNT(*) FROM db",
    "SELECT COUNT(*), SUM(key), AVG(key), MIN(key), MAX(key), TOP(2), BOTTOM(2) FROM db",
    "SELECT COUNT(*), COUNT(key), COUNT(DISTINCT key), SUM(key), AVG(key), MIN(key), MAX(key), TOP(3), BOTTOM(2) FROM db",
    "SELECT AVG(key) FROM db WHERE key > (SELECT MAX(key) FROM db) / 2",
    "SELECT COUNT(*) FROM db WHERE key IN (3, 30000, 300000, 4)",
    "SELECT COUNT(*) FROM db WHERE 7 <= key OR key < 1 + 2 * 3 AND key > 0",
    "SELECT COUNT(*) FROM db WHERE key BETWEEN 4294967295 AND 99999999999999999999",
    "SELECT COUNT(*) FROM db WHERE key BETWEEN -99999999999 AND -1",
    "SELECT COUNT(*) FROM db WHERE NOT (key > (SELECT MAX(key) FROM db))",
    "SELECT COUNT(*) FROM db WHERE key NOT IN (1, (SELECT MIN(key) FROM db))",
    "SELECT COUNT(*) FROM db WHERE key = 1 / (2 - 2)",
    "SELECT COUNT(*) FROM db WHERE key > 1 AND record > 5",
    "SELECT COUNT(*), SUM(record), MIN(record), MAX(record), TOP(2, record), COUNT(DISTINCT record) FROM db WHERE record > 0 AND key >= 100",
    "SELECT COUNT(*) FROM db WHERE key = 18446744073709551615",
    "SELECT COUNT(*) FROM db WHERE key >= 0 AND key < 0",
    "SELECT COUNT(*) FROM db WHERE key IN ()",
    "SELECT COUNT(*) FROM db WHERE key = 5 # comment",
    "SELECT COUNT(*), SUM(key) FROM db WHERE key > 100 AND key != 207",
    "SELECT SUM(record) FROM db WHERE key < 150 OR key > 4294967295",
    "SELECT COUNT(*) FROM \"db\" WHERE key % 7 = 3",
]
for i, q in enumerate(queries):
    write("query", f"select{i:02}", q.encode())
