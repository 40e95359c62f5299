//! Quick speed check of select, lower_bound and insert through the `BlockCodec` API on the data
//! of `tersedb bench codecs` (blocks of keys whose deltas have exactly b bits, random slots and
//! random keys between a block's first and last key; insert: half-full blocks get the other
//! half in random order). The ISA is the detected one (cap it with `TERSEDB_ISA=avx2`).
//! `cargo run --release -p tersedb-codecs --example search_speed [codec ...] [-- b ...]`.
//! Millions of operations per second (per second on a CPU: time slices lost to other processes
//! do not count), median of 7 rounds of `ROUND_MS` (30). `SETS=n` (default 64)
//! changes the number of 256-key sets.

use std::hint::black_box;
use std::time::Instant;
use tersedb_codecs::{with_codec, BlockCodec, CodecId, Descriptor, InsertOutcome, Isa};

fn keys(rng: &mut fastrand::Rng, b: u32) -> Vec<u32> {
    let mut out = vec![rng.u32(..1000)];
    let mut cur = out[0] as u64;
    while out.len() < 256 {
        let top = 1u64 << (b - 1);
        cur += top | rng.u64(..top);
        if cur > u32::MAX as u64 {
            break;
        }
        out.push(cur as u32);
    }
    out
}

/// Nanoseconds this thread has been on a CPU (Linux schedstat), so that time slices lost to
/// other processes on the shared machine do not count; wall time elsewhere.
fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Seconds since `t0` (wall, or on-CPU when available).
struct Clock(Instant, Option<u64>);

impl Clock {
    fn start() -> Clock {
        Clock(Instant::now(), cpu_ns())
    }
    fn secs(&self) -> f64 {
        match (self.1, cpu_ns()) {
            (Some(a), Some(b)) => (b - a) as f64 / 1e9,
            _ => self.0.elapsed().as_secs_f64(),
        }
    }
}

/// Length of a round: `ROUND_MS` (default 30; the on-CPU clock ticks coarsely on some kernels).
fn round_secs() -> f64 {
    std::env::var("ROUND_MS").map_or(30.0, |s| s.parse().expect("ROUND_MS")) / 1e3
}

fn median_rate(mut round: impl FnMut() -> u64) -> f64 {
    round();
    let mut rates = Vec::new();
    for _ in 0..7 {
        let mut ops = 0u64;
        let t = Clock::start();
        while t.0.elapsed().as_secs_f64() < round_secs() {
            ops += round();
        }
        rates.push(ops as f64 / t.secs());
    }
    rates.sort_by(|a, b| a.total_cmp(b));
    rates[3] / 1e6
}

fn run<C: BlockCodec>(b: u32, ops: &str) -> String {
    let mut rng = fastrand::Rng::with_seed(b as u64 * 7 + 1);
    let nsets: usize = std::env::var("SETS").map_or(64, |s| s.parse().expect("SETS"));
    let sets: Vec<Vec<u32>> = (0..nsets).map(|_| keys(&mut rng, b)).collect();
    let chunks: Vec<Vec<u32>> = sets
        .iter()
        .flat_map(|s| s.chunks(C::MAX_KEYS).map(|c| c.to_vec()))
        .collect();
    let cap = C::max_payload_len(C::MAX_KEYS);
    let blocks: Vec<(Descriptor, Vec<u8>)> = chunks
        .iter()
        .map(|c| {
            let mut p = vec![0u8; cap];
            (C::encode(c, &mut p).unwrap(), p)
        })
        .collect();
    let queries: Vec<(usize, usize, u32)> = (0..4096)
        .map(|_| {
            let bi = rng.usize(..chunks.len());
            let c = &chunks[bi];
            (bi, rng.usize(..c.len()), rng.u32(c[0]..=c[c.len() - 1]))
        })
        .collect();
    for &(bi, i, k) in &queries {
        let (d, p) = &blocks[bi];
        let c = &chunks[bi];
        assert_eq!(C::select(d, p, i), Ok(c[i]));
        let pos = c.partition_point(|&x| x < k);
        assert_eq!(C::lower_bound(d, p, k), Ok((pos, c.get(pos).copied())));
    }
    let mut s = String::new();
    if ops.contains('s') {
        let r = median_rate(|| {
            let mut acc = 0u64;
            for &(bi, i, _) in &queries {
                let (d, p) = &blocks[bi];
                acc = acc.wrapping_add(C::select(d, p, i).unwrap_or(0) as u64);
            }
            black_box(acc);
            queries.len() as u64
        });
        s += &format!(" select {r:6.1}");
    }
    if ops.contains('l') {
        let r = median_rate(|| {
            let mut acc = 0u64;
            for &(bi, _, k) in &queries {
                let (d, p) = &blocks[bi];
                acc = acc.wrapping_add(C::lower_bound(d, p, k).map_or(0, |r| r.0) as u64);
            }
            black_box(acc);
            queries.len() as u64
        });
        s += &format!(" lower_bound {r:6.1}");
    }
    if ops.contains('i') {
        let halves: Vec<(Vec<u32>, Vec<u32>)> = chunks
            .iter()
            .take(128)
            .map(|c| {
                let even: Vec<u32> = c.iter().step_by(2).copied().collect();
                let mut odd: Vec<u32> = c.iter().skip(1).step_by(2).copied().collect();
                rng.shuffle(&mut odd);
                (even, odd)
            })
            .collect();
        let base: Vec<(Descriptor, Vec<u8>)> = halves
            .iter()
            .map(|(e, _)| {
                let mut p = vec![0u8; cap];
                (C::encode(e, &mut p).unwrap(), p)
            })
            .collect();
        let mut work = base.clone();
        for ((d, p), (c, (_, odd))) in work.iter_mut().zip(chunks.iter().zip(&halves)) {
            for &k in odd {
                assert!(matches!(
                    C::insert(d, p, k),
                    Ok(InsertOutcome::Inserted { .. })
                ));
            }
            let mut out = vec![0u32; C::MAX_KEYS];
            let n = C::decode(d, p, &mut out).unwrap();
            assert_eq!(&out[..n], &c[..]);
        }
        // Timed: the inserts only (the block reset is a copy outside the timer).
        let mut rates = Vec::new();
        for _ in 0..7 {
            let (mut ops, mut spent) = (0u64, 0f64);
            while spent < round_secs() {
                for (w, b0) in work.iter_mut().zip(&base) {
                    w.0 = b0.0;
                    w.1.copy_from_slice(&b0.1);
                }
                let t = Clock::start();
                for ((d, p), (_, odd)) in work.iter_mut().zip(&halves) {
                    for &k in odd {
                        black_box(C::insert(d, p, k).is_ok());
                        ops += 1;
                    }
                }
                spent += t.secs();
            }
            rates.push(ops as f64 / spent / 1e6);
        }
        rates.sort_by(|a, b| a.total_cmp(b));
        s += &format!(" insert {:6.2}", rates[3]);
    }
    s
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let mut names: Vec<&str> = args[..split].iter().map(|s| s.as_str()).collect();
    let widths: Vec<u32> = args
        .get(split + 1..)
        .unwrap_or(&[])
        .iter()
        .map(|a| a.parse().expect("bit width"))
        .collect();
    let widths = if widths.is_empty() {
        vec![1, 8, 16, 24]
    } else {
        widths
    };
    let ops = std::env::var("OPS").unwrap_or_else(|_| "sli".into());
    if names.is_empty() {
        names = CodecId::ALL.iter().map(|c| c.name()).collect();
    }
    println!("ISA {}", Isa::detect());
    for name in names {
        let id = CodecId::from_name(name).expect("codec name");
        for &b in &widths {
            let line = with_codec!(id, C => run::<C>(b, &ops));
            println!("{name:<13} b={b:>2}{line}");
        }
    }
}
