//! The `tersedb` command.

#![forbid(unsafe_code)]

mod bench;
mod datasets;

use clap::{Args, Parser, Subcommand};
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

#[derive(Subcommand, Debug)]
enum Command {
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Codec micro-benchmarks (Upscaledb paper Fig. 6 and 7, plus ClusterData).
    Codecs(CodecsArgs),
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: Result<(), String> = match cli.command {
        Command::Bench(BenchCommand::Codecs(a)) => bench::codecs::run(&bench::codecs::Options {
            quick: a.quick,
            json: a.json,
            codecs: a.codecs,
            widths: a.widths,
            seed: a.seed,
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tersedb: {e}");
            ExitCode::FAILURE
        }
    }
}
