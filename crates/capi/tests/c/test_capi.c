/* The C API from C: every function of tersedb.h, its error codes on misuse (null, stale, foreign
 * and made-up handles, use after commit, small buffers, NULL and misaligned pointers), and a
 * snapshot read by several threads. Run by scripts/test.d/c.sh (also under valgrind).
 * Usage: test_capi DIR [N]   (DIR: a scratch directory; N: keys of the bulk tests) */
#include "tersedb.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (cond) {                                                                      \
      passed++;                                                                      \
    } else {                                                                         \
      failed++;                                                                      \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, \
              #cond, tersedb_last_error_message());                                  \
    }                                                                                \
  } while (0)

#define OK(call) CHECK((call) == TERSEDB_OK)
#define IS(code, call) CHECK((call) == (code))

static size_t n_keys = 100000;

struct reader {
  tersedb_txn txn;
  tersedb_db db;
  uint64_t expect_sum;
  int ok;
};

static void *read_snapshot(void *arg) {
  struct reader *r = arg;
  r->ok = 1;
  for (int round = 0; round < 3; round++) {
    tersedb_fold f;
    if (tersedb_fold_keys(r->txn, r->db, 0, UINT64_MAX, &f) != TERSEDB_OK || f.sum_lo != r->expect_sum ||
        f.sum_hi != 0)
      r->ok = 0;
    uint32_t k = (uint32_t)(2 * (n_keys / 2));
    if (tersedb_contains(r->txn, r->db, &k, sizeof k) != TERSEDB_OK) r->ok = 0;
  }
  return NULL;
}

static void test_handles_and_pointers(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/h.tdb", dir);
  CHECK(strcmp(tersedb_version(), "") != 0);

  tersedb_env zero = {0}, madeup = {987654321};
  IS(TERSEDB_EBADHANDLE, tersedb_env_close(zero));
  IS(TERSEDB_EBADHANDLE, tersedb_env_close(madeup));
  CHECK(strstr(tersedb_last_error_message(), "never issued") != NULL);
  IS(TERSEDB_EINVAL, tersedb_env_open(NULL, TERSEDB_CREATE, 0, &zero));
  IS(TERSEDB_EINVAL, tersedb_env_open(path, TERSEDB_CREATE, 0, NULL));
  IS(TERSEDB_EINVAL, tersedb_env_open(path, 0x100, 0, &zero));
  IS(TERSEDB_EINVAL, tersedb_env_open(path, TERSEDB_CREATE, 1000, &zero)); /* not a power of two */
  snprintf(path, sizeof path, "%s/missing.tdb", dir);
  IS(TERSEDB_EIO, tersedb_env_open(path, 0, 0, &zero));

  tersedb_env env;
  OK(tersedb_env_open_memory(0, &env));
  tersedb_txn w;
  OK(tersedb_txn_begin_write(env, 0, &w));
  tersedb_txn w2;
  IS(TERSEDB_EWRITETXNACTIVE, tersedb_txn_begin_write(env, 0, &w2));
  IS(TERSEDB_EINVAL, tersedb_txn_begin_write(env, 0x8, &w2));
  tersedb_db_config cfg = {TERSEDB_KEY_U32, TERSEDB_RECORD_NONE, 0, 0, NULL, NULL};
  tersedb_db db;
  OK(tersedb_db_create(w, "set", &cfg, &db));
  IS(TERSEDB_EDBEXISTS, tersedb_db_create(w, "set", &cfg, &db));
  IS(TERSEDB_EINVAL, tersedb_db_create(w, "x", NULL, &db));
  tersedb_db_config bad = {9, 0, 0, 0, NULL, NULL};
  IS(TERSEDB_EINVAL, tersedb_db_create(w, "x", &bad, &db));
  tersedb_db_config badcodec = {TERSEDB_KEY_U32, 0, 0, 0, "zip", NULL};
  IS(TERSEDB_EINVAL, tersedb_db_create(w, "x", &badcodec, &db));

  /* A handle of another kind, NULL and misaligned pointers, wrong key lengths. */
  tersedb_txn not_a_txn = {db.id};
  uint32_t k = 7;
  IS(TERSEDB_EBADHANDLE, tersedb_put(not_a_txn, db, &k, sizeof k, NULL, 0, TERSEDB_UPSERT));
  CHECK(strstr(tersedb_last_error_message(), "a database, not a transaction") != NULL);
  IS(TERSEDB_EINVAL, tersedb_put(w, db, NULL, 4, NULL, 0, TERSEDB_UPSERT));
  IS(TERSEDB_EINVALIDKEY, tersedb_put(w, db, &k, 3, NULL, 0, TERSEDB_UPSERT));
  IS(TERSEDB_EINVAL, tersedb_put(w, db, &k, sizeof k, NULL, 0, 99));
  uint32_t keys[4] = {1, 2, 3, 4};
  IS(TERSEDB_EINVAL, tersedb_put_many_u32(w, db, NULL, 4, NULL, 0, 0, NULL));
  IS(TERSEDB_EINVAL, tersedb_put_many_u32(w, db, (const uint32_t *)((const char *)keys + 1), 2, NULL, 0, 0, NULL));
  OK(tersedb_put_many_u32(w, db, keys, 0, NULL, 0, 0, NULL)); /* nothing to do */
  uint64_t wide[2] = {1, 2};
  IS(TERSEDB_EINVALIDKEY, tersedb_put_many_u64(w, db, wide, 2, NULL, 0, 0, NULL)); /* u64 into u32 */
  OK(tersedb_put(w, db, &k, sizeof k, NULL, 0, TERSEDB_INSERT));
  IS(TERSEDB_EKEYEXISTS, tersedb_put(w, db, &k, sizeof k, NULL, 0, TERSEDB_INSERT));
  k = 3;
  IS(TERSEDB_EINVALIDKEY, tersedb_put(w, db, &k, sizeof k, NULL, 0, TERSEDB_APPEND));
  size_t len;
  IS(TERSEDB_EINVAL, tersedb_get(w, db, &k, sizeof k, NULL, 0, NULL));
  IS(TERSEDB_NOTFOUND, tersedb_get(w, db, &k, sizeof k, NULL, 0, &len));
  k = 7;
  OK(tersedb_get(w, db, &k, sizeof k, NULL, 0, &len)); /* a set: empty records */
  CHECK(len == 0);

  /* Use after commit: every call on the handle is TERSEDB_ECLOSED. */
  OK(tersedb_txn_commit(w));
  IS(TERSEDB_ECLOSED, tersedb_put(w, db, &k, sizeof k, NULL, 0, TERSEDB_UPSERT));
  IS(TERSEDB_ECLOSED, tersedb_txn_commit(w));
  IS(TERSEDB_ECLOSED, tersedb_txn_abort(w));

  /* A read transaction cannot write (cursors in a write transaction: test_write_cursors). */
  tersedb_txn r;
  OK(tersedb_txn_begin_read(env, &r));
  IS(TERSEDB_EREADONLY, tersedb_put(r, db, &k, sizeof k, NULL, 0, TERSEDB_UPSERT));
  IS(TERSEDB_EREADONLY, tersedb_erase(r, db, &k, sizeof k));
  IS(TERSEDB_EREADONLY, tersedb_erase_many_u32(r, db, keys, 4, NULL));
  IS(TERSEDB_OK, tersedb_contains(r, db, &k, sizeof k));
  k = 8;
  IS(TERSEDB_NOTFOUND, tersedb_contains(r, db, &k, sizeof k));
  tersedb_db missing;
  IS(TERSEDB_EDBNOTFOUND, tersedb_db_open(r, "nope", &missing));
  OK(tersedb_txn_begin_write(env, TERSEDB_NO_SYNC, &w));
  tersedb_cursor c;
  OK(tersedb_cursor_open(w, db, &c));
  OK(tersedb_cursor_first(c));
  OK(tersedb_cursor_close(c));
  k = 7;
  OK(tersedb_erase(w, db, &k, sizeof k));
  IS(TERSEDB_NOTFOUND, tersedb_erase(w, db, &k, sizeof k));
  OK(tersedb_txn_abort(w)); /* the erase is undone */
  OK(tersedb_txn_abort(r)); /* closes a read transaction */
  OK(tersedb_txn_begin_read(env, &r));
  IS(TERSEDB_OK, tersedb_contains(r, db, &k, sizeof k));
  uint64_t faults = 99;
  OK(tersedb_env_check(env, &faults));
  CHECK(faults == 0);
  OK(tersedb_txn_commit(r));
  OK(tersedb_db_close(db));
  IS(TERSEDB_ECLOSED, tersedb_db_close(db));
  OK(tersedb_env_close(env));
  IS(TERSEDB_ECLOSED, tersedb_env_close(env));
}

static void test_u32_records(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/events.tdb", dir);
  remove(path);
  tersedb_env env;
  OK(tersedb_env_open(path, TERSEDB_CREATE | TERSEDB_NO_SYNC, 4096, &env));
  tersedb_env again;
  IS(TERSEDB_ELOCKED, tersedb_env_open(path, TERSEDB_CREATE, 0, &again));

  tersedb_txn w;
  OK(tersedb_txn_begin_write(env, 0, &w));
  tersedb_db_config cfg = {TERSEDB_KEY_U32, TERSEDB_RECORD_I64, 0, 0, "bp128", NULL};
  tersedb_db db;
  OK(tersedb_db_create(w, "events", &cfg, &db));
  uint32_t *keys = malloc(n_keys * sizeof *keys);
  int64_t *vals = malloc(n_keys * sizeof *vals);
  uint64_t sum = 0;
  for (size_t i = 0; i < n_keys; i++) {
    keys[i] = (uint32_t)(2 * i);
    vals[i] = -(int64_t)i * 1000; /* little-endian hosts: the native bytes are the record */
    sum += keys[i];
  }
  uint64_t added = 0;
  IS(TERSEDB_EINVALIDRECORD, tersedb_put_many_u32(w, db, keys, 2, vals, 4, TERSEDB_UPSERT, NULL));
  OK(tersedb_put_many_u32(w, db, keys, n_keys, vals, sizeof *vals, TERSEDB_APPEND, &added));
  CHECK(added == n_keys);
  OK(tersedb_put_many_u32(w, db, keys, 10, vals, sizeof *vals, TERSEDB_UPSERT, &added));
  CHECK(added == 0);
  OK(tersedb_txn_commit(w));

  tersedb_txn r;
  OK(tersedb_txn_begin_read(env, &r));
  tersedb_db db2;
  OK(tersedb_db_open(r, "events", &db2));
  uint64_t n = 0;
  OK(tersedb_len(r, db2, &n));
  CHECK(n == n_keys);
  uint32_t k = 20;
  int64_t v = 1;
  size_t len = 0;
  OK(tersedb_get(r, db2, &k, sizeof k, &v, sizeof v, &len));
  CHECK(len == 8 && v == -10000);
  char small[4];
  IS(TERSEDB_EBUFFER, tersedb_get(r, db2, &k, sizeof k, small, sizeof small, &len));
  CHECK(len == 8);
  k = 21;
  IS(TERSEDB_NOTFOUND, tersedb_get(r, db2, &k, sizeof k, &v, sizeof v, &len));

  uint32_t probe[4] = {0, 1, 4, (uint32_t)(2 * (n_keys - 1))};
  int64_t got[4];
  uint8_t found[4];
  uint64_t hits = 0;
  OK(tersedb_get_many_u32(r, db2, probe, 4, got, sizeof *got, found, &hits));
  CHECK(hits == 3 && found[0] == 1 && found[1] == 0 && found[2] == 1 && found[3] == 1);
  CHECK(got[0] == 0 && got[1] == 0 && got[2] == -2000 && got[3] == -(int64_t)(n_keys - 1) * 1000);
  IS(TERSEDB_EBUFFER, tersedb_get_many_u32(r, db2, probe, 4, got, 2, NULL, NULL));
  OK(tersedb_get_many_u32(r, db2, probe, 4, NULL, 0, NULL, &hits)); /* counts only */
  CHECK(hits == 3);

  tersedb_fold f;
  OK(tersedb_fold_keys(r, db2, 0, UINT64_MAX, &f));
  CHECK(f.count == n_keys && f.sum_lo == sum && f.sum_hi == 0 && f.min == 0 && f.max == 2 * (n_keys - 1));
  OK(tersedb_fold_keys(r, db2, 10, 20, &f));
  CHECK(f.count == 6 && f.sum_lo == 90 && f.min == 10 && f.max == 20);

  /* Threads read one snapshot. */
  pthread_t t[4];
  struct reader rd[4];
  for (int i = 0; i < 4; i++) {
    rd[i] = (struct reader){r, db2, sum, 0};
    pthread_create(&t[i], NULL, read_snapshot, &rd[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    CHECK(rd[i].ok);
  }

  /* Queries. */
  tersedb_result res;
  OK(tersedb_query(r, "SELECT COUNT(*), SUM(key), AVG(key), MIN(record), TOP(3) FROM events WHERE key < 1000", &res));
  size_t cols = 0;
  OK(tersedb_result_columns(res, &cols));
  CHECK(cols == 5);
  const char *name = NULL;
  OK(tersedb_result_name(res, 0, &name));
  CHECK(name && strcmp(name, "COUNT(*)") == 0);
  tersedb_value val;
  OK(tersedb_result_value(res, 0, &val));
  CHECK(val.kind == TERSEDB_INT && val.int_lo == 500 && val.int_hi == 0);
  OK(tersedb_result_value(res, 1, &val));
  CHECK(val.kind == TERSEDB_INT && val.int_lo == 249500);
  OK(tersedb_result_value(res, 2, &val));
  CHECK(val.kind == TERSEDB_FLOAT && val.f == 499.0);
  OK(tersedb_result_value(res, 3, &val));
  CHECK(val.kind == TERSEDB_INT && (int64_t)val.int_lo == -499000 && val.int_hi == -1);
  OK(tersedb_result_value(res, 4, &val));
  CHECK(val.kind == TERSEDB_LIST && val.len == 3);
  OK(tersedb_result_item(res, 4, 0, &val));
  CHECK(val.kind == TERSEDB_INT && val.int_lo == 998);
  IS(TERSEDB_EINVAL, tersedb_result_item(res, 4, 3, &val));
  IS(TERSEDB_EINVAL, tersedb_result_item(res, 0, 0, &val));
  IS(TERSEDB_EINVAL, tersedb_result_value(res, 5, &val));
  IS(TERSEDB_EINVAL, tersedb_result_name(res, 5, &name));
  OK(tersedb_result_free(res));
  IS(TERSEDB_ECLOSED, tersedb_result_columns(res, &cols));
  OK(tersedb_query(r, "SELECT AVG(key) FROM events WHERE key > 4000000000", &res));
  OK(tersedb_result_value(res, 0, &val));
  CHECK(val.kind == TERSEDB_NULL);
  OK(tersedb_result_free(res));
  IS(TERSEDB_EQUERY, tersedb_query(r, "SELECT NOPE(key) FROM events", &res));
  CHECK(strlen(tersedb_last_error_message()) > 0);

  /* Cursors: both directions across windows, staying put at the ends, seeks. */
  tersedb_cursor c;
  OK(tersedb_cursor_open(r, db2, &c));
  uint64_t key64 = 0;
  IS(TERSEDB_NOTFOUND, tersedb_cursor_key_u64(c, &key64)); /* unpositioned */
  IS(TERSEDB_NOTFOUND, tersedb_cursor_next(c));
  OK(tersedb_cursor_first(c));
  size_t steps = 1, in_order = 1;
  uint64_t prev = 0;
  OK(tersedb_cursor_key_u64(c, &prev));
  while (tersedb_cursor_next(c) == TERSEDB_OK) {
    uint64_t cur;
    tersedb_cursor_key_u64(c, &cur);
    in_order &= cur == prev + 2;
    prev = cur;
    steps++;
  }
  CHECK(steps == n_keys && in_order);
  OK(tersedb_cursor_key_u64(c, &key64)); /* stayed on the last key */
  CHECK(key64 == 2 * (n_keys - 1));
  steps = 1;
  while (tersedb_cursor_prev(c) == TERSEDB_OK) steps++;
  CHECK(steps == n_keys);
  OK(tersedb_cursor_key_u64(c, &key64));
  CHECK(key64 == 0);
  OK(tersedb_cursor_last(c));
  IS(TERSEDB_NOTFOUND, tersedb_cursor_next(c));
  OK(tersedb_cursor_prev(c));
  OK(tersedb_cursor_key_u64(c, &key64));
  CHECK(key64 == 2 * (n_keys - 2));
  k = 1001;
  IS(TERSEDB_NOTFOUND, tersedb_cursor_seek(c, &k, sizeof k, 1));
  IS(TERSEDB_NOTFOUND, tersedb_cursor_key_u64(c, &key64));
  OK(tersedb_cursor_seek(c, &k, sizeof k, 0));
  uint32_t key32 = 0;
  OK(tersedb_cursor_key(c, &key32, sizeof key32, &len));
  CHECK(len == 4 && key32 == 1002);
  IS(TERSEDB_EBUFFER, tersedb_cursor_key(c, small, 2, &len));
  OK(tersedb_cursor_value(c, &v, sizeof v, &len));
  CHECK(len == 8 && v == -501000);
  OK(tersedb_cursor_prev(c));
  OK(tersedb_cursor_key_u64(c, &key64));
  CHECK(key64 == 1000);
  k = 0xFFFFFFFFu;
  IS(TERSEDB_NOTFOUND, tersedb_cursor_seek(c, &k, sizeof k, 0));
  IS(TERSEDB_EINVALIDKEY, tersedb_cursor_seek(c, &k, 2, 0));

  /* The cursor keeps its snapshot after the transaction handle is closed. */
  OK(tersedb_txn_commit(r));
  OK(tersedb_cursor_last(c));
  OK(tersedb_cursor_close(c));
  IS(TERSEDB_ECLOSED, tersedb_cursor_first(c));

  /* Bulk erase, then the writes are visible to a new snapshot only. */
  OK(tersedb_txn_begin_read(env, &r));
  OK(tersedb_txn_begin_write(env, 0, &w));
  uint64_t erased = 0;
  OK(tersedb_erase_many_u32(w, db2, keys, n_keys / 2, &erased));
  CHECK(erased == n_keys / 2);
  OK(tersedb_len(w, db2, &n));
  CHECK(n == n_keys - n_keys / 2);
  OK(tersedb_get_many_u32(w, db2, probe, 4, NULL, 0, found, &hits)); /* a write txn reads too */
  CHECK(hits == 1 && found[3] == 1);
  OK(tersedb_txn_commit(w));
  OK(tersedb_len(r, db2, &n));
  CHECK(n == n_keys);
  OK(tersedb_txn_abort(r));

  uint64_t faults = 1;
  OK(tersedb_env_check(env, &faults));
  CHECK(faults == 0);
  OK(tersedb_db_close(db));
  OK(tersedb_db_close(db2));
  OK(tersedb_env_close(env));
  free(keys);
  free(vals);

  /* Reopen read-only. */
  OK(tersedb_env_open(path, TERSEDB_READ_ONLY, 0, &env));
  OK(tersedb_txn_begin_read(env, &r));
  OK(tersedb_db_open(r, "events", &db));
  OK(tersedb_len(r, db, &n));
  CHECK(n == n_keys - n_keys / 2);
  IS(TERSEDB_EREADONLY, tersedb_txn_begin_write(env, 0, &w));
  OK(tersedb_txn_abort(r));
  OK(tersedb_db_close(db));
  OK(tersedb_env_close(env));
}

static void test_u64_and_bytes(void) {
  tersedb_env env;
  OK(tersedb_env_open_memory(4096, &env));
  tersedb_txn w;
  OK(tersedb_txn_begin_write(env, 0, &w));
  tersedb_db_config c64 = {TERSEDB_KEY_U64, TERSEDB_RECORD_FIXED, 3, 0, NULL, NULL};
  tersedb_db d64;
  OK(tersedb_db_create(w, "wide", &c64, &d64));
  uint64_t keys[3] = {UINT64_MAX, UINT64_MAX - 1, 1};
  const char recs[9] = {'a', 'a', 'a', 'b', 'b', 'b', 'c', 'c', 'c'};
  uint64_t added;
  OK(tersedb_put_many_u64(w, d64, keys, 3, recs, 3, TERSEDB_UPSERT, &added));
  CHECK(added == 3);
  char out[3 * 4];
  uint8_t found[3];
  OK(tersedb_get_many_u64(w, d64, keys, 3, out, 4, found, NULL));
  CHECK(memcmp(out, "aaa\0bbb\0ccc\0", 12) == 0 && found[0] && found[1] && found[2]);
  uint64_t erased;
  OK(tersedb_erase_many_u64(w, d64, keys + 2, 1, &erased));
  CHECK(erased == 1);

  tersedb_db_config cb = {TERSEDB_KEY_BINARY, TERSEDB_RECORD_BYTES, 0, 0, "head-tail", NULL};
  tersedb_db db;
  OK(tersedb_db_create(w, "names", &cb, &db));
  OK(tersedb_put(w, db, "alice", 5, "engineer", 8, TERSEDB_INSERT));
  OK(tersedb_put(w, db, "bob", 3, "", 0, TERSEDB_INSERT));
  OK(tersedb_txn_commit(w));

  tersedb_txn r;
  OK(tersedb_txn_begin_read(env, &r));
  tersedb_fold f;
  OK(tersedb_fold_keys(r, d64, 0, UINT64_MAX, &f));
  CHECK(f.count == 2 && f.sum_hi == 1 && f.sum_lo == UINT64_MAX - 2 && f.min == UINT64_MAX - 1);
  IS(TERSEDB_EINVAL, tersedb_fold_keys(r, db, 0, 1, &f)); /* byte-string keys */
  char buf[16];
  size_t len;
  OK(tersedb_get(r, db, "alice", 5, buf, sizeof buf, &len));
  CHECK(len == 8 && memcmp(buf, "engineer", 8) == 0);
  tersedb_cursor c;
  OK(tersedb_cursor_open(r, db, &c));
  OK(tersedb_cursor_seek(c, "b", 1, 0));
  OK(tersedb_cursor_key(c, buf, sizeof buf, &len));
  CHECK(len == 3 && memcmp(buf, "bob", 3) == 0);
  uint64_t k64;
  IS(TERSEDB_EINVAL, tersedb_cursor_key_u64(c, &k64));
  OK(tersedb_cursor_value(c, buf, sizeof buf, &len));
  CHECK(len == 0);
  OK(tersedb_cursor_close(c));
  OK(tersedb_txn_commit(r));
  OK(tersedb_db_close(db));
  OK(tersedb_db_close(d64));
  OK(tersedb_env_close(env));
}

/* Row and GROUP BY queries against a model computed here by loops: time buckets, groups by
 * record, rows in both orders with LIMIT/OFFSET, empty results, NULL aggregates, string keys,
 * the typed getters and their errors, and a query in the write transaction. */
#define QN 2000
#define QW 100 /* bucket width of GROUP BY key / QW */
#define QR 23  /* distinct records */

static int64_t q_rec(size_t i) { return (int64_t)(i * 7 % QR) - 11; }

static void test_query_rows(void) {
  tersedb_env env;
  OK(tersedb_env_open_memory(4096, &env));
  tersedb_txn w;
  OK(tersedb_txn_begin_write(env, 0, &w));
  tersedb_db_config cfg = {TERSEDB_KEY_U64, TERSEDB_RECORD_I64, 0, 0, "auto", NULL};
  tersedb_db db;
  OK(tersedb_db_create(w, "ts", &cfg, &db));
  static uint64_t keys[QN];
  static int64_t vals[QN];
  for (size_t i = 0; i < QN; i++) {
    keys[i] = (uint64_t)i * i / 37 + 3 * i; /* ascending, gaps of varying width */
    vals[i] = q_rec(i);
  }
  OK(tersedb_put_many_u64(w, db, keys, QN, vals, sizeof *vals, TERSEDB_APPEND, NULL));

  /* The write transaction sees its own writes. */
  tersedb_result res;
  OK(tersedb_query(w, "SELECT COUNT(*) FROM ts", &res));
  uint64_t u = 0;
  OK(tersedb_result_u64(res, 0, 0, &u));
  CHECK(u == QN);
  OK(tersedb_result_free(res));
  OK(tersedb_txn_commit(w));

  tersedb_txn r;
  OK(tersedb_txn_begin_read(env, &r));

  /* GROUP BY key / QW: the model's buckets, ascending, then descending with LIMIT/OFFSET. */
  size_t nb = (size_t)(keys[QN - 1] / QW) + 1;
  uint64_t *cnt = calloc(nb, sizeof *cnt);
  int64_t *sum = calloc(nb, sizeof *sum), *mn = calloc(nb, sizeof *mn), *mx = calloc(nb, sizeof *mx);
  for (size_t i = 0; i < QN; i++) {
    size_t b = (size_t)(keys[i] / QW);
    if (cnt[b] == 0 || vals[i] < mn[b]) mn[b] = vals[i];
    if (cnt[b] == 0 || vals[i] > mx[b]) mx[b] = vals[i];
    cnt[b]++;
    sum[b] += vals[i];
  }
  size_t groups = 0;
  for (size_t b = 0; b < nb; b++) groups += cnt[b] > 0;
  CHECK(groups > 10 && groups < nb); /* some buckets are empty: they give no row */
  OK(tersedb_query(r,
                   "SELECT key / 100 * 100 AS start, COUNT(*) AS n, SUM(record), MIN(record), MAX(record), "
                   "AVG(record) FROM ts GROUP BY key / 100",
                   &res));
  size_t rows = 0, cols = 0;
  OK(tersedb_result_rows(res, &rows));
  OK(tersedb_result_columns(res, &cols));
  CHECK(rows == groups && cols == 6);
  const char *name = NULL;
  OK(tersedb_result_name(res, 0, &name));
  CHECK(name && strcmp(name, "start") == 0);
  OK(tersedb_result_name(res, 1, &name));
  CHECK(name && strcmp(name, "n") == 0);
  OK(tersedb_result_name(res, 5, &name));
  CHECK(name && strcmp(name, "AVG(record)") == 0);
  size_t row = 0, bad = 0;
  for (size_t b = 0; b < nb; b++) {
    if (cnt[b] == 0) continue;
    uint64_t start = 0, n = 0;
    int64_t s = 0, lo = 0, hi = 0;
    double avg = 0;
    if (tersedb_result_u64(res, row, 0, &start) != TERSEDB_OK || start != b * QW) bad++;
    if (tersedb_result_u64(res, row, 1, &n) != TERSEDB_OK || n != cnt[b]) bad++;
    if (tersedb_result_i64(res, row, 2, &s) != TERSEDB_OK || s != sum[b]) bad++;
    if (tersedb_result_i64(res, row, 3, &lo) != TERSEDB_OK || lo != mn[b]) bad++;
    if (tersedb_result_i64(res, row, 4, &hi) != TERSEDB_OK || hi != mx[b]) bad++;
    if (tersedb_result_f64(res, row, 5, &avg) != TERSEDB_OK || avg != (double)sum[b] / (double)cnt[b]) bad++;
    row++;
  }
  CHECK(bad == 0 && row == rows);
  /* Typed getters refuse what does not convert, naming the cell; nothing outside the table. */
  int64_t i64 = 0;
  double d = 0;
  const uint8_t *data = NULL;
  size_t len = 0;
  IS(TERSEDB_EINVAL, tersedb_result_i64(res, 0, 5, &i64)); /* a double */
  CHECK(strstr(tersedb_last_error_message(), "AVG(record)") != NULL);
  IS(TERSEDB_EINVAL, tersedb_result_bytes(res, 0, 0, &data, &len));
  IS(TERSEDB_EINVAL, tersedb_result_u64(res, rows, 0, &u));
  CHECK(strstr(tersedb_last_error_message(), "row") != NULL);
  IS(TERSEDB_EINVAL, tersedb_result_f64(res, 0, 6, &d));
  IS(TERSEDB_EINVAL, tersedb_result_u64(res, 0, 0, NULL));
  IS(TERSEDB_EINVAL, tersedb_result_cell_item(res, 0, 1, 0, NULL));
  tersedb_value val;
  OK(tersedb_result_cell(res, 0, 3, &val));
  CHECK(val.kind == TERSEDB_INT && (int64_t)val.int_lo == mn[0] && val.int_hi == (mn[0] < 0 ? -1 : 0));
  IS(TERSEDB_EINVAL, tersedb_result_cell_item(res, 0, 3, 0, &val)); /* not a list */
  int64_t min_rec = mn[0];
  for (size_t b = 0; b < nb; b++)
    if (cnt[b] && mn[b] < 0) {
      min_rec = mn[b];
      break;
    }
  CHECK(min_rec < 0);
  OK(tersedb_result_free(res));

  OK(tersedb_query(r, "SELECT key / 100, COUNT(*), TOP(2) FROM ts GROUP BY key / 100 ORDER BY key / 100 DESC LIMIT 3 OFFSET 2;",
                   &res));
  OK(tersedb_result_rows(res, &rows));
  CHECK(rows == 3);
  size_t skip = 2;
  row = 0;
  bad = 0;
  for (size_t b = nb; b-- > 0 && row < 3;) {
    if (cnt[b] == 0) continue;
    if (skip) {
      skip--;
      continue;
    }
    uint64_t g = 0, n = 0;
    if (tersedb_result_u64(res, row, 0, &g) != TERSEDB_OK || g != b) bad++;
    if (tersedb_result_u64(res, row, 1, &n) != TERSEDB_OK || n != cnt[b]) bad++;
    /* TOP(2) of the bucket: its two largest keys. */
    if (tersedb_result_cell(res, row, 2, &val) != TERSEDB_OK || val.kind != TERSEDB_LIST) bad++;
    size_t want = cnt[b] < 2 ? cnt[b] : 2;
    if (val.len != want) bad++;
    for (size_t j = 0; j < want; j++) {
      size_t last = QN;
      while (keys[last - 1] / QW != b) last--;
      tersedb_value item;
      if (tersedb_result_cell_item(res, row, 2, j, &item) != TERSEDB_OK || item.kind != TERSEDB_INT ||
          item.int_lo != keys[last - 1 - j])
        bad++;
    }
    row++;
  }
  CHECK(bad == 0 && row == 3);
  IS(TERSEDB_EINVAL, tersedb_result_cell_item(res, 0, 2, 2, &val));
  OK(tersedb_result_free(res));

  /* GROUP BY record: one group per distinct record, in record order. */
  OK(tersedb_query(r, "SELECT record, COUNT(*), MIN(key) FROM ts GROUP BY record", &res));
  OK(tersedb_result_rows(res, &rows));
  CHECK(rows == QR);
  bad = 0;
  for (size_t g = 0; g < QR && g < rows; g++) {
    int64_t rec = (int64_t)g - 11, got = 0;
    uint64_t n = 0, first = UINT64_MAX, k = 0, want = 0;
    for (size_t i = 0; i < QN; i++)
      if (vals[i] == rec) {
        want++;
        if (keys[i] < first) first = keys[i];
      }
    if (tersedb_result_i64(res, g, 0, &got) != TERSEDB_OK || got != rec) bad++;
    if (tersedb_result_u64(res, g, 1, &n) != TERSEDB_OK || n != want) bad++;
    if (tersedb_result_u64(res, g, 2, &k) != TERSEDB_OK || k != first) bad++;
  }
  CHECK(bad == 0);
  IS(TERSEDB_EINVAL, tersedb_result_u64(res, 0, 0, &u)); /* -11 is not a uint64_t */
  CHECK(strstr(tersedb_last_error_message(), "-11") != NULL);
  OK(tersedb_result_free(res));

  /* Rows: a key range backwards with LIMIT and OFFSET, SELECT *. */
  OK(tersedb_query(r, "SELECT * FROM ts WHERE key >= 1000 AND key < 5000 ORDER BY key DESC LIMIT 7 OFFSET 4", &res));
  OK(tersedb_result_rows(res, &rows));
  OK(tersedb_result_columns(res, &cols));
  CHECK(rows == 7 && cols == 2);
  OK(tersedb_result_name(res, 0, &name));
  CHECK(strcmp(name, "key") == 0);
  OK(tersedb_result_name(res, 1, &name));
  CHECK(strcmp(name, "record") == 0);
  size_t hi_i = QN;
  while (keys[hi_i - 1] >= 5000) hi_i--;
  bad = 0;
  for (size_t j = 0; j < 7 && j < rows; j++) {
    size_t i = hi_i - 1 - 4 - j;
    uint64_t k = 0;
    int64_t v = 0;
    if (tersedb_result_u64(res, j, 0, &k) != TERSEDB_OK || k != keys[i]) bad++;
    if (tersedb_result_i64(res, j, 1, &v) != TERSEDB_OK || v != vals[i]) bad++;
  }
  CHECK(bad == 0);
  OK(tersedb_result_free(res));

  /* Empty results: no rows; an aggregate query still has its one row, NULL where undefined. */
  OK(tersedb_query(r, "SELECT key, record FROM ts WHERE key > 100000000", &res));
  OK(tersedb_result_rows(res, &rows));
  OK(tersedb_result_columns(res, &cols));
  CHECK(rows == 0 && cols == 2);
  IS(TERSEDB_EINVAL, tersedb_result_cell(res, 0, 0, &val));
  IS(TERSEDB_EINVAL, tersedb_result_value(res, 0, &val));
  OK(tersedb_result_free(res));
  OK(tersedb_query(r, "SELECT key / 10, COUNT(*) FROM ts WHERE key > 100000000 GROUP BY key / 10", &res));
  OK(tersedb_result_rows(res, &rows));
  CHECK(rows == 0);
  OK(tersedb_result_free(res));
  OK(tersedb_query(r, "SELECT COUNT(*), AVG(record), MIN(key) FROM ts WHERE key > 100000000", &res));
  OK(tersedb_result_rows(res, &rows));
  CHECK(rows == 1);
  u = 99;
  OK(tersedb_result_u64(res, 0, 0, &u));
  CHECK(u == 0);
  d = 1.5;
  IS(TERSEDB_NOTFOUND, tersedb_result_f64(res, 0, 1, &d));
  CHECK(d == 1.5); /* untouched */
  IS(TERSEDB_NOTFOUND, tersedb_result_u64(res, 0, 2, &u));
  IS(TERSEDB_NOTFOUND, tersedb_result_i64(res, 0, 2, &i64));
  IS(TERSEDB_NOTFOUND, tersedb_result_bytes(res, 0, 2, &data, &len));
  OK(tersedb_result_cell(res, 0, 1, &val));
  CHECK(val.kind == TERSEDB_NULL);
  uint8_t is_null = 9;
  OK(tersedb_result_is_null(res, 0, 1, &is_null));
  CHECK(is_null == 1);
  OK(tersedb_result_is_null(res, 0, 0, &is_null));
  CHECK(is_null == 0);
  IS(TERSEDB_EINVAL, tersedb_result_is_null(res, 1, 0, &is_null));
  OK(tersedb_result_free(res));
  IS(TERSEDB_ECLOSED, tersedb_result_rows(res, &rows));
  IS(TERSEDB_ECLOSED, tersedb_result_u64(res, 0, 0, &u));
  IS(TERSEDB_EQUERY, tersedb_query(r, "SELECT key, COUNT(*) FROM ts", &res));
  CHECK(strstr(tersedb_last_error_message(), "GROUP BY") != NULL);
  OK(tersedb_txn_commit(r));
  free(cnt);
  free(sum);
  free(mn);
  free(mx);

  /* String keys: rows as byte strings, a LIKE prefix, GROUP BY record, COUNT(*). */
  OK(tersedb_txn_begin_write(env, 0, &w));
  tersedb_db_config cs = {TERSEDB_KEY_BINARY, TERSEDB_RECORD_U32, 0, 0, NULL, NULL};
  tersedb_db names;
  OK(tersedb_db_create(w, "fruit", &cs, &names));
  const char *fruit[6] = {"apple", "apricot", "avocado", "banana", "blueberry", "cherry"};
  uint32_t price[6] = {3, 5, 3, 2, 5, 3};
  for (int i = 0; i < 6; i++)
    OK(tersedb_put(w, names, fruit[i], strlen(fruit[i]), &price[i], sizeof price[i], TERSEDB_INSERT));
  OK(tersedb_txn_commit(w));
  OK(tersedb_txn_begin_read(env, &r));
  OK(tersedb_query(r, "SELECT key, record FROM fruit WHERE key LIKE 'a%' ORDER BY key DESC LIMIT 2", &res));
  OK(tersedb_result_rows(res, &rows));
  CHECK(rows == 2);
  OK(tersedb_result_bytes(res, 0, 0, &data, &len));
  CHECK(len == 7 && memcmp(data, "avocado", 7) == 0);
  OK(tersedb_result_cell(res, 0, 0, &val));
  CHECK(val.kind == TERSEDB_BYTES && val.len == 7);
  OK(tersedb_result_bytes(res, 1, 0, &data, &len));
  CHECK(len == 7 && memcmp(data, "apricot", 7) == 0);
  OK(tersedb_result_u64(res, 1, 1, &u));
  CHECK(u == 5);
  IS(TERSEDB_EINVAL, tersedb_result_u64(res, 0, 0, &u)); /* a byte string */
  CHECK(strstr(tersedb_last_error_message(), "avocado") != NULL);
  OK(tersedb_result_free(res));
  OK(tersedb_query(r, "SELECT record AS price, COUNT(*) AS n, MIN(key) FROM fruit GROUP BY record", &res));
  OK(tersedb_result_rows(res, &rows));
  CHECK(rows == 3);
  uint64_t want_n[3] = {1, 3, 2}, want_p[3] = {2, 3, 5};
  const char *want_min[3] = {"banana", "apple", "apricot"};
  bad = 0;
  for (size_t g = 0; g < 3 && g < rows; g++) {
    uint64_t p = 0, n = 0;
    if (tersedb_result_u64(res, g, 0, &p) != TERSEDB_OK || p != want_p[g]) bad++;
    if (tersedb_result_u64(res, g, 1, &n) != TERSEDB_OK || n != want_n[g]) bad++;
    if (tersedb_result_bytes(res, g, 2, &data, &len) != TERSEDB_OK || len != strlen(want_min[g]) ||
        memcmp(data, want_min[g], len) != 0)
      bad++;
  }
  CHECK(bad == 0);
  OK(tersedb_result_free(res));
  OK(tersedb_query(r, "SELECT COUNT(*) FROM fruit WHERE key >= 'b'", &res));
  OK(tersedb_result_u64(res, 0, 0, &u));
  CHECK(u == 3);
  OK(tersedb_result_free(res));
  OK(tersedb_txn_commit(r));
  OK(tersedb_db_close(names));
  OK(tersedb_db_close(db));
  OK(tersedb_env_close(env));
}

/* Cursors in the write transaction: they see its uncommitted puts and erases, made before the
 * cursor was opened or while it moves (across windows of 256 entries), and every call on them
 * is TERSEDB_ECLOSED once the transaction is committed or aborted. */
static void test_write_cursors(void) {
  tersedb_env env;
  OK(tersedb_env_open_memory(0, &env));
  tersedb_txn w;
  OK(tersedb_txn_begin_write(env, 0, &w));
  tersedb_db_config cfg = {TERSEDB_KEY_U32, TERSEDB_RECORD_I64, 0, 0, "bp128", NULL};
  tersedb_db db;
  OK(tersedb_db_create(w, "w", &cfg, &db));
  enum { M = 1000 };
  for (uint32_t i = 0; i < M; i++) {
    uint32_t k = 10 * i;
    int64_t v = 3 * (int64_t)k;
    OK(tersedb_put(w, db, &k, sizeof k, &v, sizeof v, TERSEDB_APPEND));
  }
  tersedb_cursor c;
  OK(tersedb_cursor_open(w, db, &c));
  /* Every uncommitted entry, in order, across windows. */
  size_t steps = 0, good = 1;
  uint64_t key = 0;
  int64_t v = 0;
  size_t len = 0;
  for (int s = tersedb_cursor_first(c); s == TERSEDB_OK; s = tersedb_cursor_next(c)) {
    good &= tersedb_cursor_key_u64(c, &key) == TERSEDB_OK && key == 10 * steps;
    good &= tersedb_cursor_value(c, &v, sizeof v, &len) == TERSEDB_OK && v == 30 * (int64_t)steps;
    steps++;
  }
  CHECK(steps == M && good);
  /* Puts and erases while the cursor stands inside a window. */
  uint32_t k = 500;
  OK(tersedb_cursor_seek(c, &k, sizeof k, 1));
  k = 505;
  v = -1;
  OK(tersedb_put(w, db, &k, sizeof k, &v, sizeof v, TERSEDB_UPSERT));
  OK(tersedb_cursor_next(c));
  OK(tersedb_cursor_key_u64(c, &key));
  CHECK(key == 505);
  OK(tersedb_cursor_value(c, &v, sizeof v, &len));
  CHECK(v == -1);
  OK(tersedb_cursor_next(c));
  OK(tersedb_cursor_key_u64(c, &key));
  CHECK(key == 510);
  k = 520;
  OK(tersedb_erase(w, db, &k, sizeof k));
  OK(tersedb_cursor_next(c));
  OK(tersedb_cursor_key_u64(c, &key));
  CHECK(key == 530);
  /* The current entry overwritten, then erased. */
  k = 530;
  v = 7;
  OK(tersedb_put(w, db, &k, sizeof k, &v, sizeof v, TERSEDB_UPSERT));
  OK(tersedb_cursor_value(c, &v, sizeof v, &len));
  CHECK(v == 7);
  OK(tersedb_erase(w, db, &k, sizeof k));
  IS(TERSEDB_NOTFOUND, tersedb_cursor_value(c, &v, sizeof v, &len));
  CHECK(strstr(tersedb_last_error_message(), "530 was erased") != NULL);
  OK(tersedb_cursor_next(c));
  OK(tersedb_cursor_key_u64(c, &key));
  CHECK(key == 540);
  OK(tersedb_cursor_prev(c));
  OK(tersedb_cursor_key_u64(c, &key));
  CHECK(key == 510);
  /* A key past the end appears to a cursor standing on the last one. */
  OK(tersedb_cursor_last(c));
  IS(TERSEDB_NOTFOUND, tersedb_cursor_next(c));
  k = 10 * M + 1;
  v = 9;
  OK(tersedb_put(w, db, &k, sizeof k, &v, sizeof v, TERSEDB_UPSERT));
  OK(tersedb_cursor_next(c));
  OK(tersedb_cursor_key_u64(c, &key));
  CHECK(key == 10 * M + 1);
  /* A read transaction's cursor sees the last commit only. */
  tersedb_txn r;
  OK(tersedb_txn_begin_read(env, &r));
  tersedb_cursor rc;
  IS(TERSEDB_EDBNOTFOUND, tersedb_cursor_open(r, db, &rc));
  OK(tersedb_txn_commit(r));

  /* Misuse: the transaction committed, its cursor is closed for everything but close. */
  OK(tersedb_txn_commit(w));
  IS(TERSEDB_ECLOSED, tersedb_cursor_next(c));
  CHECK(strstr(tersedb_last_error_message(), "committed or aborted") != NULL);
  IS(TERSEDB_ECLOSED, tersedb_cursor_prev(c));
  IS(TERSEDB_ECLOSED, tersedb_cursor_first(c));
  IS(TERSEDB_ECLOSED, tersedb_cursor_last(c));
  IS(TERSEDB_ECLOSED, tersedb_cursor_seek(c, &k, sizeof k, 0));
  IS(TERSEDB_ECLOSED, tersedb_cursor_key_u64(c, &key));
  IS(TERSEDB_ECLOSED, tersedb_cursor_key(c, &k, sizeof k, &len));
  IS(TERSEDB_ECLOSED, tersedb_cursor_value(c, &v, sizeof v, &len));
  IS(TERSEDB_ECLOSED, tersedb_cursor_open(w, db, &rc));
  OK(tersedb_cursor_close(c));
  IS(TERSEDB_ECLOSED, tersedb_cursor_close(c));

  /* The commit holds what the cursor saw; an aborted transaction's cursor is closed too. */
  OK(tersedb_txn_begin_read(env, &r));
  OK(tersedb_cursor_open(r, db, &rc));
  steps = 0;
  for (int s = tersedb_cursor_first(rc); s == TERSEDB_OK; s = tersedb_cursor_next(rc)) steps++;
  CHECK(steps == M + 1 - 2 + 1); /* 505 and 10M+1 in, 520 and 530 out */
  OK(tersedb_cursor_close(rc));
  OK(tersedb_txn_commit(r));
  OK(tersedb_txn_begin_write(env, 0, &w));
  OK(tersedb_cursor_open(w, db, &c));
  k = 1;
  OK(tersedb_put(w, db, &k, sizeof k, &v, sizeof v, TERSEDB_UPSERT));
  OK(tersedb_cursor_seek(c, &k, sizeof k, 1));
  OK(tersedb_txn_abort(w));
  IS(TERSEDB_ECLOSED, tersedb_cursor_value(c, &v, sizeof v, &len));
  OK(tersedb_cursor_close(c));
  OK(tersedb_db_close(db));
  OK(tersedb_env_close(env));
}

/* Deleting through a cursor (LMDB's mdb_cursor_del) against a model: a present[] array over the
 * keys 3*i. A walk erases runs of keys chosen by a seeded generator (runs longer than a cursor's
 * window of 256 entries among them), checking every key and value it stands on against the
 * model's next present key; then full scans both ways, the last key erased (the cursor in its
 * gap), two cursors on one key, a put while the cursor stands, misuse, and the commit. For
 * plain, BP128 and auto-coded keys. */
#define DN 3000
static uint32_t del_rng;
static uint32_t del_next(void) {
  del_rng = del_rng * 1103515245u + 12345u;
  return del_rng >> 8;
}

/* Whether cursor `c` scans (forward, then backward) exactly the model's present keys. */
static int del_scan_matches(tersedb_cursor c, const unsigned char *present) {
  int good = 1;
  uint64_t key = 0;
  int64_t v = 0;
  size_t len = 0, i = 0;
  for (int s = tersedb_cursor_first(c); s == TERSEDB_OK; s = tersedb_cursor_next(c)) {
    while (i < DN && !present[i]) i++;
    good &= i < DN && tersedb_cursor_key_u64(c, &key) == TERSEDB_OK && key == 3 * i;
    good &= tersedb_cursor_value(c, &v, sizeof v, &len) == TERSEDB_OK && v == 2 * (int64_t)key;
    i++;
  }
  while (i < DN && !present[i]) i++;
  good &= i == DN;
  size_t j = DN;
  for (int s = tersedb_cursor_last(c); s == TERSEDB_OK; s = tersedb_cursor_prev(c)) {
    while (j > 0 && !present[j - 1]) j--;
    good &= j > 0 && tersedb_cursor_key_u64(c, &key) == TERSEDB_OK && key == 3 * (j - 1);
    j--;
  }
  while (j > 0 && !present[j - 1]) j--;
  good &= j == 0;
  return good;
}

static void test_cursor_del(void) {
  const char *codecs[3] = {"none", "bp128", NULL};
  for (int ci = 0; ci < 3; ci++) {
    const unsigned seed = 17 + ci;
    del_rng = seed;
    const int failed_before = failed;
    tersedb_env env;
    OK(tersedb_env_open_memory(0, &env));
    tersedb_txn w;
    OK(tersedb_txn_begin_write(env, 0, &w));
    tersedb_db_config cfg = {TERSEDB_KEY_U32, TERSEDB_RECORD_I64, 0, 0, codecs[ci], NULL};
    tersedb_db db;
    OK(tersedb_db_create(w, "d", &cfg, &db));
    static unsigned char present[DN];
    int put_bad = 0;
    for (uint32_t i = 0; i < DN; i++) {
      uint32_t k = 3 * i;
      int64_t v = 2 * (int64_t)k;
      put_bad += tersedb_put(w, db, &k, sizeof k, &v, sizeof v, TERSEDB_APPEND) != TERSEDB_OK;
      present[i] = 1;
    }
    CHECK(put_bad == 0);
    tersedb_cursor c;
    OK(tersedb_cursor_open(w, db, &c));
    IS(TERSEDB_NOTFOUND, tersedb_cursor_del(c)); /* not positioned */
    CHECK(strstr(tersedb_last_error_message(), "not positioned") != NULL);

    /* The walk: keep or erase runs of keys; the cursor must stand on the model's next key. */
    size_t i = 0, seen = 0, erased = 0, bad = 0;
    uint64_t key = 0;
    int64_t v = 0;
    size_t len = 0;
    int s = tersedb_cursor_first(c);
    while (s == TERSEDB_OK && tersedb_cursor_key_u64(c, &key) == TERSEDB_OK) {
      while (i < DN && !present[i]) i++;
      if (i == DN || key != 3 * i) bad++;
      if (tersedb_cursor_value(c, &v, sizeof v, &len) != TERSEDB_OK || v != 2 * (int64_t)key) bad++;
      seen++;
      uint32_t r = del_next();
      size_t run = r % 8 == 0 ? 300 + r % 200 : 1 + r % 5; /* some runs span a whole window */
      if (r % 3 == 0) {
        for (size_t n = 0; n < run && s == TERSEDB_OK; n++) {
          if (tersedb_cursor_key_u64(c, &key) != TERSEDB_OK) break;
          while (i < DN && !present[i]) i++;
          if (i == DN || key != 3 * i) bad++;
          s = tersedb_cursor_del(c);
          if (s != TERSEDB_OK) bad++;
          present[i] = 0;
          erased++;
        }
      } else {
        for (size_t n = 0; n < run && s == TERSEDB_OK; n++) {
          s = tersedb_cursor_next(c);
          i++;
        }
      }
    }
    CHECK(bad == 0);
    CHECK(erased > 100 && erased < DN - 100);
    CHECK(del_scan_matches(c, present));
    uint64_t n = 0;
    OK(tersedb_len(w, db, &n));
    CHECK(n == DN - erased);

    /* The last key erased: the cursor stands in its gap. */
    size_t last = DN;
    while (!present[last - 1]) last--;
    OK(tersedb_cursor_last(c));
    OK(tersedb_cursor_del(c));
    present[last - 1] = 0;
    IS(TERSEDB_NOTFOUND, tersedb_cursor_key_u64(c, &key));
    CHECK(strstr(tersedb_last_error_message(), "no key follows") != NULL);
    IS(TERSEDB_NOTFOUND, tersedb_cursor_value(c, &v, sizeof v, &len));
    IS(TERSEDB_NOTFOUND, tersedb_cursor_del(c));
    IS(TERSEDB_NOTFOUND, tersedb_cursor_next(c));
    OK(tersedb_cursor_prev(c));
    while (!present[last - 1]) last--;
    OK(tersedb_cursor_key_u64(c, &key));
    CHECK(key == 3 * (last - 1));
    /* Again, and a key put past the gap is where `next` goes. */
    OK(tersedb_cursor_del(c));
    present[last - 1] = 0;
    uint32_t k = 3 * DN + 1;
    v = 5;
    OK(tersedb_put(w, db, &k, sizeof k, &v, sizeof v, TERSEDB_UPSERT));
    OK(tersedb_cursor_next(c));
    OK(tersedb_cursor_key_u64(c, &key));
    CHECK(key == 3 * DN + 1);
    OK(tersedb_cursor_del(c));
    IS(TERSEDB_NOTFOUND, tersedb_cursor_next(c));

    /* Two cursors on one key: the second sees the first's erase and moves on from there. */
    size_t a = 0;
    while (!present[a]) a++;
    size_t b = a + 1;
    while (!present[b]) b++;
    tersedb_cursor c2;
    OK(tersedb_cursor_open(w, db, &c2));
    k = 3 * (uint32_t)a;
    OK(tersedb_cursor_seek(c, &k, sizeof k, 1));
    OK(tersedb_cursor_seek(c2, &k, sizeof k, 1));
    OK(tersedb_cursor_del(c));
    present[a] = 0;
    IS(TERSEDB_NOTFOUND, tersedb_cursor_value(c2, &v, sizeof v, &len));
    IS(TERSEDB_NOTFOUND, tersedb_cursor_del(c2));
    CHECK(strstr(tersedb_last_error_message(), "was erased") != NULL);
    OK(tersedb_cursor_next(c2));
    OK(tersedb_cursor_key_u64(c2, &key));
    CHECK(key == 3 * b);
    OK(tersedb_cursor_key_u64(c, &key));
    CHECK(key == 3 * b);
    /* A put between the cursor's key and the next: a delete moves onto it. */
    k = 3 * (uint32_t)b + 1;
    v = 2 * (int64_t)k;
    OK(tersedb_put(w, db, &k, sizeof k, &v, sizeof v, TERSEDB_UPSERT));
    OK(tersedb_cursor_del(c));
    present[b] = 0;
    OK(tersedb_cursor_key_u64(c, &key));
    CHECK(key == 3 * b + 1);
    OK(tersedb_cursor_value(c, &v, sizeof v, &len));
    CHECK(v == 2 * (int64_t)(3 * b + 1));
    OK(tersedb_cursor_del(c));
    CHECK(del_scan_matches(c2, present));
    OK(tersedb_cursor_close(c2));
    OK(tersedb_txn_commit(w));
    IS(TERSEDB_ECLOSED, tersedb_cursor_del(c));
    OK(tersedb_cursor_close(c));

    /* The commit holds the model; a read transaction's cursor cannot delete. */
    tersedb_txn r;
    OK(tersedb_txn_begin_read(env, &r));
    OK(tersedb_cursor_open(r, db, &c));
    CHECK(del_scan_matches(c, present));
    OK(tersedb_cursor_first(c));
    IS(TERSEDB_EREADONLY, tersedb_cursor_del(c));
    CHECK(strstr(tersedb_last_error_message(), "read transaction") != NULL);
    OK(tersedb_cursor_close(c));
    OK(tersedb_txn_commit(r));
    uint64_t faults = 99;
    OK(tersedb_env_check(env, &faults));
    CHECK(faults == 0);
    OK(tersedb_db_close(db));
    OK(tersedb_env_close(env));
    if (failed != failed_before)
      fprintf(stderr, "test_cursor_del: codec %s, seed %u\n", codecs[ci] ? codecs[ci] : "(default)", seed);
  }

  /* Byte-string keys. */
  tersedb_env env;
  OK(tersedb_env_open_memory(0, &env));
  tersedb_txn w;
  OK(tersedb_txn_begin_write(env, 0, &w));
  tersedb_db_config cfg = {TERSEDB_KEY_BINARY, TERSEDB_RECORD_BYTES, 0, 0, NULL, NULL};
  tersedb_db db;
  OK(tersedb_db_create(w, "s", &cfg, &db));
  const char *names[4] = {"apple", "apricot", "banana", "cherry"};
  for (int j = 0; j < 4; j++) OK(tersedb_put(w, db, names[j], strlen(names[j]), "x", 1, TERSEDB_UPSERT));
  tersedb_cursor c;
  OK(tersedb_cursor_open(w, db, &c));
  OK(tersedb_cursor_seek(c, "ap", 2, 0));
  OK(tersedb_cursor_del(c));
  OK(tersedb_cursor_del(c));
  char buf[16];
  size_t len = 0;
  OK(tersedb_cursor_key(c, buf, sizeof buf, &len));
  CHECK(len == 6 && memcmp(buf, "banana", 6) == 0);
  uint64_t n = 0;
  OK(tersedb_len(w, db, &n));
  CHECK(n == 2);
  OK(tersedb_cursor_close(c));
  OK(tersedb_txn_commit(w));
  OK(tersedb_db_close(db));
  OK(tersedb_env_close(env));
}

static void test_not_a_tersedb_file(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/junk.tdb", dir);
  FILE *f = fopen(path, "wb");
  for (int i = 0; i < 5000; i++) fputs("junk", f);
  fclose(f);
  tersedb_env env;
  int s = tersedb_env_open(path, 0, 0, &env);
  CHECK(s == TERSEDB_EBADFORMAT || s == TERSEDB_ECORRUPTED);
}

/* The defaults (NULL compression fields): integer keys "auto", numeric records compressed; the
 * same data with "none" for both takes several times the file. Both read back and check clean. */
static void test_defaults(const char *dir) {
  enum { N = 100000 };
  static uint64_t keys[N];
  static double vals[N];
  for (size_t i = 0; i < N; i++) {
    keys[i] = 1790000000000ull + i * 1000 + (i * 7919) % 900;
    vals[i] = (double)(1500 + (i * 37) % 1500) / 100.0;
  }
  long size[2] = {0, 0};
  for (int none = 0; none < 2; none++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/defaults-%d.tdb", dir, none);
    remove(path);
    tersedb_env env;
    OK(tersedb_env_open(path, TERSEDB_CREATE | TERSEDB_NO_SYNC, 0, &env));
    tersedb_txn w;
    OK(tersedb_txn_begin_write(env, 0, &w));
    tersedb_db_config cfg = {TERSEDB_KEY_U64, TERSEDB_RECORD_F64, 0, 0, NULL, NULL};
    if (none) {
      cfg.compression = "none";
      cfg.record_compression = "none";
    }
    tersedb_db db;
    OK(tersedb_db_create(w, "t", &cfg, &db));
    OK(tersedb_put_many_u64(w, db, keys, N, vals, sizeof vals[0], TERSEDB_UPSERT, NULL));
    OK(tersedb_txn_commit(w));
    tersedb_txn r;
    OK(tersedb_txn_begin_read(env, &r));
    static double got[N];
    uint64_t found = 0;
    OK(tersedb_get_many_u64(r, db, keys, N, got, sizeof got[0], NULL, &found));
    CHECK(found == N);
    CHECK(memcmp(got, vals, sizeof vals) == 0);
    OK(tersedb_txn_abort(r));
    uint64_t faults = 99;
    OK(tersedb_env_check(env, &faults));
    CHECK(faults == 0);
    OK(tersedb_db_close(db));
    OK(tersedb_env_close(env));
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (f) {
      fseek(f, 0, SEEK_END);
      size[none] = ftell(f);
      fclose(f);
    }
  }
  if (!(size[0] > 0 && size[0] * 3 < size[1])) fprintf(stderr, "defaults: %ld bytes, none: %ld\n", size[0], size[1]);
  CHECK(size[0] > 0 && size[0] * 3 < size[1]);
  /* A bad record_compression is an error naming the field. */
  tersedb_env env;
  OK(tersedb_env_open_memory(0, &env));
  tersedb_txn w;
  OK(tersedb_txn_begin_write(env, 0, &w));
  tersedb_db_config bad = {TERSEDB_KEY_U32, TERSEDB_RECORD_U32, 0, 0, NULL, "zstd"};
  tersedb_db db;
  IS(TERSEDB_EINVAL, tersedb_db_create(w, "b", &bad, &db));
  CHECK(strstr(tersedb_last_error_message(), "record_compression") != NULL);
  OK(tersedb_txn_abort(w));
  OK(tersedb_env_close(env));
}

/* i32 and i16 records (TERSEDB_RECORD_I32, TERSEDB_RECORD_I16): 4- and 2-byte little-endian
 * records, compressed by default, negative values and the extremes read back by key and
 * summed past their type's range; a record of the wrong size is refused. */
#define SN 5000
static void test_small_signed_records(void) {
  tersedb_env env;
  OK(tersedb_env_open_memory(4096, &env));
  tersedb_txn w;
  OK(tersedb_txn_begin_write(env, 0, &w));
  tersedb_db_config c32 = {TERSEDB_KEY_U64, TERSEDB_RECORD_I32, 0, 0, NULL, NULL};
  tersedb_db_config c16 = {TERSEDB_KEY_U64, TERSEDB_RECORD_I16, 0, 0, NULL, NULL};
  tersedb_db_config sized = {TERSEDB_KEY_U64, TERSEDB_RECORD_I16, 2, 0, NULL, NULL};
  tersedb_db a, b, x;
  IS(TERSEDB_EINVAL, tersedb_db_create(w, "x", &sized, &x)); /* record_size is for FIXED */
  OK(tersedb_db_create(w, "a", &c32, &a));
  OK(tersedb_db_create(w, "b", &c16, &b));
  static uint64_t keys[SN];
  static int32_t v32[SN];
  static int16_t v16[SN];
  int64_t s32 = 0, s16 = 0;
  for (size_t i = 0; i < SN; i++) {
    keys[i] = 10 * (uint64_t)i;
    v32[i] = i % 97 == 0 ? INT32_MIN : i % 89 == 0 ? INT32_MAX : (int32_t)(i % 41) - 20;
    v16[i] = i % 97 == 0 ? INT16_MIN : i % 89 == 0 ? INT16_MAX : (int16_t)((int)(i % 41) - 20);
    s32 += v32[i];
    s16 += v16[i];
  }
  IS(TERSEDB_EINVALIDRECORD, tersedb_put_many_u64(w, a, keys, 2, v32, 8, TERSEDB_UPSERT, NULL));
  IS(TERSEDB_EINVALIDRECORD, tersedb_put_many_u64(w, b, keys, 2, v16, 4, TERSEDB_UPSERT, NULL));
  OK(tersedb_put_many_u64(w, a, keys, SN, v32, sizeof *v32, TERSEDB_APPEND, NULL));
  OK(tersedb_put_many_u64(w, b, keys, SN, v16, sizeof *v16, TERSEDB_APPEND, NULL));
  OK(tersedb_txn_commit(w));

  tersedb_txn r;
  OK(tersedb_txn_begin_read(env, &r));
  uint64_t k = 970; /* i = 97: the minimum */
  int32_t g32 = 0;
  int16_t g16 = 0;
  size_t len = 0;
  OK(tersedb_get(r, a, &k, sizeof k, &g32, sizeof g32, &len));
  CHECK(len == 4 && g32 == INT32_MIN);
  OK(tersedb_get(r, b, &k, sizeof k, &g16, sizeof g16, &len));
  CHECK(len == 2 && g16 == INT16_MIN);
  k = 30; /* i = 3: -17 */
  OK(tersedb_get(r, b, &k, sizeof k, &g16, sizeof g16, &len));
  CHECK(len == 2 && g16 == -17);
  const char *qs[2] = {"SELECT SUM(record), MIN(record), MAX(record) FROM a",
                       "SELECT SUM(record), MIN(record), MAX(record) FROM b"};
  int64_t want[2][3] = {{s32, INT32_MIN, INT32_MAX}, {s16, INT16_MIN, INT16_MAX}};
  /* The sums are far outside int32_t and int16_t: widened, not wrapped. */
  CHECK(s32 > INT32_MAX && s16 > INT16_MAX);
  for (int q = 0; q < 2; q++) {
    tersedb_result res;
    OK(tersedb_query(r, qs[q], &res));
    for (size_t col = 0; col < 3; col++) {
      int64_t got = 0;
      OK(tersedb_result_i64(res, 0, col, &got));
      CHECK(got == want[q][col]);
    }
    OK(tersedb_result_free(res));
  }
  OK(tersedb_txn_commit(r));
  OK(tersedb_db_close(a));
  OK(tersedb_db_close(b));
  OK(tersedb_env_close(env));
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DIR [N]\n", argv[0]);
    return 2;
  }
  if (argc > 2) n_keys = (size_t)strtoull(argv[2], NULL, 10);
  test_handles_and_pointers(argv[1]);
  test_u32_records(argv[1]);
  test_u64_and_bytes();
  test_query_rows();
  test_small_signed_records();
  test_write_cursors();
  test_cursor_del();
  test_not_a_tersedb_file(argv[1]);
  test_defaults(argv[1]);
  size_t live = 99;
  OK(tersedb_live_handles(&live));
  CHECK(live == 0); /* every handle was closed */
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
