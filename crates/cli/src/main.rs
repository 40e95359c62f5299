//! The `tersedb` command.

#![forbid(unsafe_code)]

/// `println!` that ends the process quietly on a closed pipe (see [`out`]).
macro_rules! outln {
    () => {
        $crate::out("")
    };
    ($($t:tt)*) => {
        $crate::out(format_args!($($t)*))
    };
}

mod bench;
mod datasets;
mod lines;
mod names;
mod progress;
mod query;
mod sql;
mod store;
mod string_datasets;
mod timestamps;

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "tersedb",
    version,
    about = "A compressed embedded key-value store"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of the bench arguments costs nothing, boxing them would only
// complicate the matches below.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    /// Benchmarks; without a subcommand, the store benchmark on its default data set.
    Bench(BenchArgs),
    /// Loads keys (one per line) or key-value lines (`key<TAB>value`, `key,value` CSV or
    /// `key value`; files of more columns with --key-column and --value-column) into a
    /// database, creating the file and the database when needed.
    Import {
        /// The environment file.
        file: PathBuf,
        #[command(flatten)]
        load: LoadArgs,
        /// Key type of a new database (default u32; an existing database keeps its own).
        #[arg(long, value_parser = ["u32", "u64", "binary"])]
        key_type: Option<String>,
        /// Fixed record size in bytes for a new database (default: variable-size records when
        /// the first line has a value, none otherwise).
        #[arg(long, conflicts_with = "record_type")]
        record_size: Option<u32>,
        /// Numeric records for a new database: `key<TAB>value` lines with a decimal value,
        /// stored as 2 (i16), 4 (u32, i32) or 8 (u64, i64, f64) little-endian bytes; queries
        /// can aggregate and filter them. A value out of the type's range is refused.
        #[arg(long, value_parser = ["u32", "u64", "i16", "i32", "i64", "f64"])]
        record_type: Option<String>,
        /// Page size of a new file (a power of two, 512..=65536; compressed keys need 1024+;
        /// default 16384). Refused for an existing file with another page size.
        #[arg(long)]
        page_size: Option<usize>,
        /// Key codec of a new u32 or u64 database: auto (chosen per block; the default on pages
        /// of 1 KiB and more), none, vbyte, masked-vbyte, varintgb, streamvbyte, bp128, for,
        /// simd-for, pfor, pfor-delta, rice. For binary keys, the key compression scheme:
        /// none, head, tail, head-tail (the default), wiredtiger, myisam, pkb.
        #[arg(long)]
        compression: Option<String>,
        /// Most keys per compressed block, start key included (0 = the codec's maximum).
        #[arg(long)]
        block_size: Option<u16>,
        /// Record compression of a new database with fixed-size records (`--record-type` or
        /// `--record-size` up to 8): auto codes every chunk of up to 255 records with the smallest of
        /// frame of reference, a dictionary, a patched dictionary (the frequent values coded,
        /// the rare ones as exceptions) and (f64) decimal coding; none stores them raw.
        /// Default: auto (as `DbConfig::new`, Python's `create_db` and C's `tersedb_db_config`).
        #[arg(long, value_parser = ["none", "auto"])]
        record_compression: Option<String>,
        /// Commit durability.
        #[arg(long, value_enum, default_value_t = DurabilityArg::Immediate)]
        durability: DurabilityArg,
    },
    /// Removes the keys listed one per line; absent keys are counted, not errors.
    Erase {
        file: PathBuf,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Prints a database's keys (and values) in order, in the import format.
    Export {
        file: PathBuf,
        /// Database name (default: the file's only database).
        #[arg(long)]
        db: Option<String>,
        /// Binary keys and values as hex.
        #[arg(long)]
        hex: bool,
        /// First key exported.
        #[arg(long)]
        from: Option<String>,
        /// Last key exported (inclusive).
        #[arg(long)]
        to: Option<String>,
        /// Most keys exported.
        #[arg(long)]
        limit: Option<u64>,
        /// Integer keys written as ISO 8601 timestamps (UTC) in this unit since 1970; --from
        /// and --to may be timestamps too.
        #[arg(long, value_parser = ["s", "ms", "us", "ns"])]
        timestamps: Option<String>,
    },
    /// Prints the value of each KEY (`key<TAB>value`, as export writes it); fails when a key is
    /// absent, after printing the others.
    Get {
        file: PathBuf,
        /// Database name (default: the file's only database).
        #[arg(long)]
        db: Option<String>,
        /// The keys.
        #[arg(required = true)]
        keys: Vec<String>,
        /// Binary keys and values as hex.
        #[arg(long)]
        hex: bool,
        /// Keys given and written as ISO 8601 timestamps in this unit.
        #[arg(long, value_parser = ["s", "ms", "us", "ns"])]
        timestamps: Option<String>,
        /// One JSON array of {"key", "value", "found"}; errors as {"error": "..."}.
        #[arg(long)]
        json: bool,
    },
    /// Removes a database and all its entries.
    Drop {
        file: PathBuf,
        #[arg(long)]
        db: String,
    },
    /// Runs a query: `tersedb query FILE "SELECT AVG(key) FROM db WHERE key > 1000"`.
    /// Aggregates COUNT(*), COUNT(key), COUNT(DISTINCT key|record), SUM, AVG, MIN, MAX,
    /// TOP(k[, col]), BOTTOM(k[, col]); rows with SELECT key, record | *; groups with
    /// GROUP BY key / N or GROUP BY record; ORDER BY key [DESC], LIMIT, OFFSET, AS; conditions
    /// with = != < <= > >= BETWEEN IN LIKE AND OR NOT, arithmetic on constants and scalar
    /// subqueries (see docs/ARCHITECTURE.md).
    Query {
        file: PathBuf,
        /// The query text.
        query: String,
        /// One JSON object: {"columns": [...], "values": [...]} for aggregates,
        /// {"columns": [...], "rows": [[...], ...]} for rows and groups; errors as
        /// {"error": "..."}.
        #[arg(long, conflicts_with = "csv")]
        json: bool,
        /// CSV with a header line.
        #[arg(long)]
        csv: bool,
        /// Print the time and the blocks read to standard error.
        #[arg(long)]
        stats: bool,
    },
    /// Runs any SQL over the databases of a file, or of every file of a directory (one table
    /// per database, columns `key`, `record` and, for a directory, `file`), through DataFusion
    /// with key ranges and aggregates pushed into the tree:
    /// `tersedb sql FILE "SELECT key / 1000 AS k, COUNT(*) FROM db GROUP BY k ORDER BY k"`.
    /// Needs a build with `--features sql`.
    Sql {
        /// A tersedb file, or a directory of them.
        path: PathBuf,
        /// The SQL statement.
        query: String,
        /// A JSON array of one object per row.
        #[arg(long, conflicts_with = "csv")]
        json: bool,
        /// CSV with a header line.
        #[arg(long)]
        csv: bool,
        /// Rows per record batch a scan produces.
        #[arg(long, default_value_t = 8192, value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
        batch_size: u64,
    },
    /// Sizes (explained: key bytes, record bytes, overhead, free pages), tree shape and
    /// compression of every database.
    Info {
        file: PathBuf,
        /// One JSON object; errors as {"error": "..."}.
        #[arg(long)]
        json: bool,
    },
    /// Verifies every page and tree invariant; exits non-zero on any fault.
    Check {
        file: PathBuf,
        /// One JSON object with every fault; errors as {"error": "..."}.
        #[arg(long)]
        json: bool,
    },
    /// Rewrites a file into its smallest form (every leaf packed as by an ascending load, no
    /// free pages). Safe against crashes: the old file stays until the compact copy is complete
    /// and synced, then replaces it atomically. No other process may have the file open.
    Compact { file: PathBuf },
    /// Repairs damaged meta pages; when the newest commit cannot be told apart from damage,
    /// rolls back to the previous commit (the newest may be lost: only on request).
    Recover { file: PathBuf },
    /// Prints one page decoded, for debugging.
    Dump {
        file: PathBuf,
        #[arg(long)]
        page: u64,
    },
}

#[derive(Args, Debug)]
struct LoadArgs {
    /// Database name (default: the file's only database).
    #[arg(long)]
    db: Option<String>,
    /// Input file; `-` or absent for standard input.
    #[arg(long)]
    input: Option<String>,
    /// Commit after every N lines (default: one transaction for the whole input). A bad line
    /// rolls back its batch; earlier batches stay. A command that fails before its first commit
    /// leaves the file as it was (a file it created is removed, a database it would create is
    /// not created).
    #[arg(long)]
    commit_every: Option<u64>,
    /// Binary keys and values are hex-encoded (an empty field is the empty string).
    #[arg(long)]
    hex: bool,
    /// What separates key and value: tab, space (any run of blanks), comma, or one character
    /// (CSV quoting applies). Default: detected from the first data line (TAB, else comma,
    /// else blanks for integer keys).
    #[arg(long)]
    delimiter: Option<String>,
    /// The first line (after --skip) is a header, not data.
    #[arg(long)]
    header: bool,
    /// Lines skipped at the start of the input.
    #[arg(long, default_value_t = 0)]
    skip: u64,
    /// Integer keys are ISO 8601 timestamps (`2024-03-01T12:30:00Z`, `2024-03-01 12:30:00`,
    /// `2024-03-01`; UTC unless an offset is given), stored in this unit since 1970.
    #[arg(long, value_parser = ["s", "ms", "us", "ns"])]
    timestamps: Option<String>,
    /// A line whose value is empty or NA (numeric records): skip it and count it (default),
    /// or fail naming the line.
    #[arg(long, value_parser = ["skip", "error"], default_value = "skip")]
    missing: String,
    /// The key's column in lines of more fields: its number (from 1) or, with --header, its
    /// name. Without --value-column the lines then give keys only.
    #[arg(long, alias = "key-col", value_name = "N|NAME")]
    key_column: Option<String>,
    /// The value's column (number from 1, or a header name); the key is column 1 unless
    /// --key-column says otherwise. Other columns are ignored.
    #[arg(long, alias = "value-col", value_name = "N|NAME")]
    value_column: Option<String>,
}

impl LoadArgs {
    /// `--key-column` and `--value-column`; a name needs `--header`.
    fn columns(&self) -> Result<lines::ColumnSpec, String> {
        let spec = lines::ColumnSpec {
            key: self
                .key_column
                .as_deref()
                .map(|c| lines::Col::parse("--key-column", c))
                .transpose()?,
            value: self
                .value_column
                .as_deref()
                .map(|c| lines::Col::parse("--value-column", c))
                .transpose()?,
        };
        if spec.by_name() && !self.header {
            // The same message as a name without a header line at all.
            spec.resolve(None)?;
        }
        Ok(spec)
    }

    fn options(self) -> Result<store::LoadOptions, String> {
        let columns = self.columns()?;
        Ok(store::LoadOptions {
            db: self.db,
            input: self.input,
            commit_every: self.commit_every,
            hex: self.hex,
            delimiter: self
                .delimiter
                .as_deref()
                .map(lines::Delim::parse)
                .transpose()?,
            skip: self.skip + u64::from(self.header),
            header: self.header,
            columns,
            timestamps: self
                .timestamps
                .as_deref()
                .map(timestamps::Unit::parse)
                .transpose()?,
            missing_error: self.missing == "error",
        })
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum DurabilityArg {
    /// fsync on every commit.
    Immediate,
    /// No fsync: atomic, but the last commits may be lost on power loss.
    None,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
struct BenchArgs {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(Args, Debug)]
struct StoreArgs {
    /// Number of keys.
    #[arg(long, default_value_t = 2_000_000)]
    keys: usize,
    /// Key distribution.
    #[arg(long, default_value = "clustered", value_parser = ["clustered", "uniform", "ascending"])]
    dist: String,
    /// Insert order.
    #[arg(long, default_value = "ascending", value_parser = ["ascending", "random"])]
    order: String,
    /// Page size in bytes.
    #[arg(long, default_value_t = 16384)]
    page_size: usize,
    /// Fixed record size in bytes (0 = keys only).
    #[arg(long, default_value_t = 0)]
    record_size: u32,
    /// Runs; the median is reported.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// One JSON object per line.
    #[arg(long)]
    json: bool,
    /// Seed of the data generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Comma-separated key codecs (`none` = uncompressed); default: none and every leaf codec.
    #[arg(long, value_delimiter = ',')]
    codecs: Vec<String>,
    /// Most keys per compressed block, start key included (0 = the codec's maximum). Several,
    /// comma-separated (e.g. 128,256), run every codec at each size in one run and print the
    /// Upscaledb paper's Fig. 11 table.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    block_size: Vec<u16>,
    /// Also time SUM and COUNT queries over random key ranges covering 0.1%, 1%, 10% and 100%
    /// of the keys (query language executor), with the blocks each decodes.
    #[arg(long)]
    queries: bool,
    /// Keys from a file instead of the generator: one decimal key per line (u32 for the store
    /// benchmark, u32 or u64 for --peers), any order; duplicates are dropped.
    #[arg(long, conflicts_with_all = ["keys", "dist"])]
    input: Option<PathBuf>,
    /// Measure these stores beside tersedb on the same keys, each in a process of its own:
    /// lmdb, redb, sqlite, roaring, and with their features rocksdb (= rocksdb-lz4,
    /// rocksdb-zstd) and fjall (comma-separated). tersedb runs with --codecs (default none,
    /// bp128, pfor-delta, auto). Needs a build with `--features peers` (and `rocksdb`, `fjall`).
    #[arg(long, value_delimiter = ',')]
    peers: Vec<String>,
    /// Write SVG charts (bytes per key, speed ratios) into this directory.
    #[arg(long)]
    plot: Option<PathBuf>,
}

impl StoreArgs {
    fn options(self) -> bench::store::Options {
        bench::store::Options {
            keys: self.keys,
            dist: self.dist,
            order: self.order,
            page_size: self.page_size,
            record_size: self.record_size,
            repeat: self.repeat,
            json: self.json,
            seed: self.seed,
            codecs: self.codecs,
            block_size: self.block_size.first().copied().unwrap_or(0),
            queries: self.queries,
            input: self.input,
            plot: self.plot,
        }
    }

    /// `bench peers`: `bench --peers` with every peer of the build unless some are named.
    fn run_peers(mut self) -> Result<(), String> {
        if self.peers.is_empty() {
            self.peers = bench::peers::all_peers()?;
        }
        self.run()
    }

    fn run(self) -> Result<(), String> {
        if self.block_size.len() > 1 {
            if !self.peers.is_empty() || self.plot.is_some() || self.queries {
                return Err(
                    "several --block-size values compare the codecs at each size; --peers, --plot and --queries take one"
                        .into(),
                );
            }
            let sizes = self.block_size.clone();
            return bench::block_size::run(&self.options(), &sizes);
        }
        if self.peers.is_empty() {
            return bench::store::run(&self.options());
        }
        bench::peers::run(&bench::peers::Options {
            peers: self.peers,
            codecs: self.codecs,
            keys: self.keys,
            dist: self.dist,
            input: self.input,
            seed: self.seed,
            repeat: self.repeat,
            json: self.json,
            plot: self.plot,
        })
    }
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// The store benchmark (the default of `tersedb bench`).
    Store(StoreArgs),
    /// `bench --peers` against every peer of this build unless --peers names some (needs a build
    /// with `--features peers`).
    Peers(StoreArgs),
    /// Codec micro-benchmarks (Upscaledb paper Fig. 6 and 7, plus ClusterData).
    Codecs(CodecsArgs),
    /// The patched-FOR paper's experiments (Zukowski et al., "Super-Scalar RAM-CPU Cache
    /// Compression"): Fig. 4-7, Tables 2-4 with the production PFOR / PFOR-DELTA kernels.
    Pfor(PforArgs),
    /// Byte-string key compression schemes (Gao et al., SIGMOD 2024): insert, lookup and range
    /// throughput, bytes per key, compression ratio, tree height and fan-out per scheme.
    Strings(StringsArgs),
    /// Time series (issue 16): bytes per entry for every key codec with raw and compressed
    /// records against zstd -19, and the speed of loads, lookups, cursors, SUM(record) and
    /// GROUP BY with compressed records against raw ones, on three generated series.
    Timeseries(TimeseriesArgs),
    /// One store's run of `bench --peers`, started by it (not for users).
    #[command(hide = true)]
    PeerWorker {
        #[arg(long)]
        store: String,
        #[arg(long)]
        keys_file: PathBuf,
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        work: PathBuf,
    },
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("quick_mode").multiple(true).args(["disk", "sweep"])))]
struct StringsArgs {
    /// Number of keys of a generated data set (default 1,000,000: under a minute for all
    /// schemes on a 2-core machine, see docs/BENCHMARKS.md); for `words` and --input, a random
    /// sample of this many keys (default all).
    #[arg(long)]
    keys: Option<usize>,
    /// Data set: random10, random26, random36, random62 (32 random characters over that many
    /// symbols, see --key-len), clustered (normally distributed fixed-width numbers, see
    /// --scale), tpch (LINEITEM keys shipdate|orderkey|linenumber), lineitem (whole LINEITEM
    /// rows, 96-156 bytes; 4096-byte pages unless --page-size), words (/usr/share/dict/words).
    #[arg(long, default_value = "random10", conflicts_with = "input")]
    dataset: String,
    /// Characters per key of the random data sets (default 32, the study's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=65536))]
    key_len: Option<u32>,
    /// One of the study's parameter sweeps, one table: key-length (8..256 random characters,
    /// Fig. 13), page-size (512 B..16 KiB in memory, Fig. 14; 4..16 KiB with --disk, Fig. 15),
    /// pkb (PkB's partial key length 1..8, Fig. 10; with --disk as in the study). Default
    /// 200,000 keys in memory (about a minute each on a 2-core machine).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(bench::strings_sweep::Sweep::NAMES))]
    sweep: Option<String>,
    /// --sweep: the values to run instead of the sweep's default (comma-separated).
    #[arg(long, value_delimiter = ',', requires = "sweep")]
    sweep_values: Vec<usize>,
    /// Keys from a file instead, one per line (the import format; TAB-separated values are
    /// ignored). Duplicates are removed.
    #[arg(long)]
    input: Option<PathBuf>,
    /// The --input keys are hex-encoded (an empty line is the empty key).
    #[arg(long, requires = "input")]
    hex: bool,
    /// Standard deviation of the clustered data set's numbers: smaller = longer shared prefixes.
    #[arg(long, default_value_t = 1000.0)]
    scale: f64,
    /// Comma-separated schemes: none, head, tail, head-tail, db2, wiredtiger, myisam, pkb
    /// (default all; one the engine cannot create yet is skipped with a note).
    #[arg(long, value_delimiter = ',')]
    schemes: Vec<String>,
    /// Page size in bytes (a power of two, 512..=65536; default 512, the study's in-memory
    /// setting, and 4096 for --dataset lineitem; keys may have at most 50 bytes on 512-byte
    /// pages, 114 on 1024). With --disk: only this size (4096 or more) instead of the sweep
    /// 4096, 8192, 16384 (a --disk --sweep runs 4096). --sweep key-length defaults to the
    /// smallest page that holds its longest key.
    #[arg(long)]
    page_size: Option<usize>,
    /// The study's disk setting (§3.3): a file read and written with O_DIRECT, no page cache,
    /// branch pages in RAM; Kop/s and device reads per operation at 4, 8 and 16 KiB pages
    /// (default 150,000 keys, about a minute; see docs/BENCHMARKS.md).
    #[arg(long)]
    disk: bool,
    /// --disk: directory of the benchmark's files, on a file system that takes O_DIRECT (not
    /// tmpfs); default the system's temporary directory. Each file is removed after its run.
    #[arg(long, requires = "disk")]
    dir: Option<PathBuf>,
    /// --disk: 20,000 keys and fewer operations (a few seconds); --sweep in memory: 5,000
    /// keys.
    #[arg(long, requires = "quick_mode")]
    quick: bool,
    /// Seed of the data generators and of the insert, lookup and range orders.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Runs per scheme, round-robin; the median is reported.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// One JSON object per scheme and line.
    #[arg(long)]
    json: bool,
    /// WiredTiger's roll-forward distance (default: the engine's, 10).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..))]
    wt_distance: Option<u8>,
    /// PkB's partial key length in bytes (default: the engine's, 2; with --disk 5, the study's).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=16))]
    pkb_len: Option<u8>,
    /// Tail schemes' split range in percent of a node around its middle (default: the
    /// engine's, 17 = the study's 1/6).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=25))]
    split_range: Option<u8>,
}

#[derive(Args, Debug)]
struct TimeseriesArgs {
    /// Fewer entries and one run (a few seconds; default about a minute).
    #[arg(long)]
    quick: bool,
    /// One JSON object per row (`"table"` names the table).
    #[arg(long)]
    json: bool,
    /// Entries per series (default 1,000,000; --quick 50,000).
    #[arg(long)]
    entries: Option<usize>,
    /// Runs of the speed part, raw and compressed records interleaved; medians are reported
    /// (default 3; --quick 1).
    #[arg(long)]
    repeat: Option<usize>,
    /// Comma-separated series: a (u64 ms timestamps, i64 random walk), b (1 s u64
    /// timestamps, f64 temperatures with two decimals), c (u32 seconds, u32 status codes);
    /// default all.
    #[arg(long, value_delimiter = ',')]
    series: Vec<String>,
    /// Seed of the generators and of the lookup, range and insert orders.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args, Debug)]
struct PforArgs {
    /// Smaller data and shorter measurements (a few seconds; default about a minute).
    #[arg(long)]
    quick: bool,
    /// One JSON object per row (`"table"` names the figure or table).
    #[arg(long)]
    json: bool,
    /// Comma-separated parts: fig4, fig5, fig6, fig7, table4, table2 (default all).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Seed of the data generators.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Writes SVG line charts of Figs. 4, 5 and 6 (those that run) into DIR.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct CodecsArgs {
    /// Fewer bit widths and shorter measurements (under 20 s).
    #[arg(long)]
    quick: bool,
    /// One JSON object per line instead of tables.
    #[arg(long)]
    json: bool,
    /// Comma-separated codec names (and peers `memcpy`, `bitpacking-4x`); default all.
    #[arg(long, value_delimiter = ',')]
    codecs: Vec<String>,
    /// Comma-separated bit widths for the fixed-width table; default 1..=24 (quick: a subset).
    #[arg(long, value_delimiter = ',')]
    widths: Vec<u32>,
    /// Seed of the data generators.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Prints a line to stdout; a closed pipe (e.g. `| head`) ends the process quietly instead of
/// panicking like `println!`.
pub fn out(line: impl std::fmt::Display) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = writeln!(o, "{line}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("tersedb: writing output: {e}");
        std::process::exit(1);
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Commands asked for JSON report their errors as JSON too (on standard output).
    let json_errors = matches!(
        cli.command,
        Command::Query { json: true, .. }
            | Command::Info { json: true, .. }
            | Command::Check { json: true, .. }
            | Command::Get { json: true, .. }
    );
    let result: Result<(), String> = match cli.command {
        Command::Bench(BenchArgs {
            command: None,
            store,
        }) => store.run(),
        Command::Bench(BenchArgs {
            command: Some(BenchCommand::Store(a)),
            ..
        }) => a.run(),
        Command::Bench(BenchArgs {
            command: Some(BenchCommand::Peers(a)),
            ..
        }) => a.run_peers(),
        Command::Bench(BenchArgs {
            command:
                Some(BenchCommand::PeerWorker {
                    store,
                    keys_file,
                    seed,
                    work,
                }),
            ..
        }) => bench::peers::worker(&store, &keys_file, seed, &work),
        Command::Bench(BenchArgs {
            command: Some(BenchCommand::Codecs(a)),
            ..
        }) => bench::codecs::run(&bench::codecs::Options {
            quick: a.quick,
            json: a.json,
            codecs: a.codecs,
            widths: a.widths,
            seed: a.seed,
        }),
        Command::Bench(BenchArgs {
            command: Some(BenchCommand::Pfor(a)),
            ..
        }) => bench::pfor::run(&bench::pfor::Options {
            quick: a.quick,
            json: a.json,
            seed: a.seed,
            only: a.only,
            plot: a.plot,
        }),
        Command::Bench(BenchArgs {
            command: Some(BenchCommand::Timeseries(a)),
            ..
        }) => bench::timeseries::run(&bench::timeseries::Options {
            quick: a.quick,
            json: a.json,
            entries: a.entries,
            repeat: a.repeat,
            series: a.series,
            seed: a.seed,
        }),
        Command::Bench(BenchArgs {
            command: Some(BenchCommand::Strings(a)),
            ..
        }) => {
            // Whole LINEITEM rows are the study's 4 KiB-page data set (§5.1).
            let lineitem_page = (a.dataset == "lineitem" && a.input.is_none()).then_some(4096);
            let page = a.page_size.or(lineitem_page);
            bench::strings::run(&bench::strings::Options {
                keys: a.keys,
                dataset: a.dataset,
                input: a.input,
                hex: a.hex,
                scale: a.scale,
                schemes: a.schemes,
                page_size: page.unwrap_or(512),
                seed: a.seed,
                repeat: a.repeat,
                json: a.json,
                disk: a.disk.then(|| bench::strings_disk::DiskOptions {
                    dir: a.dir.unwrap_or_else(std::env::temp_dir),
                    page_sizes: page.into_iter().collect(),
                    quick: a.quick,
                }),
                key_len: a.key_len.unwrap_or(0) as usize,
                sweep: a
                    .sweep
                    .as_deref()
                    .and_then(bench::strings_sweep::Sweep::from_name)
                    .map(|sweep| bench::strings_sweep::SweepOptions {
                        sweep,
                        values: a.sweep_values,
                        page_size: page,
                        quick: a.quick,
                    }),
                wt_distance: a.wt_distance.unwrap_or(0),
                pkb_len: a.pkb_len.unwrap_or(0),
                split_range: a.split_range.unwrap_or(0),
            })
        }
        Command::Import {
            file,
            load,
            key_type,
            record_size,
            record_type,
            page_size,
            compression,
            block_size,
            record_compression,
            durability,
        } => {
            let d = match durability {
                DurabilityArg::Immediate => tersedb::Durability::Immediate,
                DurabilityArg::None => tersedb::Durability::None,
            };
            let new_db = store::NewDb {
                key_type,
                record_size,
                record_type,
                page_size,
                compression,
                block_size,
                record_compression: record_compression.map(|c| c == "auto"),
            };
            load.options()
                .and_then(|o| store::import(&file, &o, &new_db, d))
        }
        Command::Erase { file, load } => {
            if load.value_column.is_some() {
                Err(
                    "--value-column: erase reads keys only (--key-column picks their column)"
                        .into(),
                )
            } else {
                load.options().and_then(|o| store::erase(&file, &o))
            }
        }
        Command::Export {
            file,
            db,
            hex,
            from,
            to,
            limit,
            timestamps,
        } => timestamps
            .as_deref()
            .map(timestamps::Unit::parse)
            .transpose()
            .and_then(|timestamps| {
                store::export(
                    &file,
                    &store::ExportOptions {
                        db,
                        hex,
                        from,
                        to,
                        limit,
                        timestamps,
                    },
                )
            }),
        Command::Get {
            file,
            db,
            keys,
            hex,
            timestamps,
            json,
        } => timestamps
            .as_deref()
            .map(timestamps::Unit::parse)
            .transpose()
            .and_then(|ts| store::get(&file, db.as_deref(), &keys, hex, ts, json)),
        Command::Drop { file, db } => store::drop_db(&file, &db),
        Command::Info { file, json } => store::info(&file, json),
        Command::Query {
            file,
            query,
            json,
            csv,
            stats,
        } => {
            let f = if json {
                query::Format::Json
            } else if csv {
                query::Format::Csv
            } else {
                query::Format::Table
            };
            query::run(&file, &query, f, stats)
        }
        Command::Sql {
            path,
            query,
            json,
            csv,
            batch_size,
        } => {
            let format = match (json, csv) {
                (true, _) => sql::Format::Json,
                (_, true) => sql::Format::Csv,
                _ => sql::Format::Table,
            };
            sql::run(&path, &query, format, batch_size as usize)
        }
        Command::Check { file, json } => store::check(&file, json),
        Command::Compact { file } => store::compact(&file),
        Command::Recover { file } => store::recover(&file),
        Command::Dump { file, page } => store::dump(&file, page),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if json_errors => {
            outln!("{{\"error\":{}}}", store::json_str(&e));
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("tersedb: {e}");
            ExitCode::FAILURE
        }
    }
}
