//! Speed and size of PFOR and PFOR-DELTA on 256-key sets (two 128-value frames), as in the
//! Upscaledb paper's Fig. 6/7: for b = 1..24, 256 random deltas of b bits prefix-summed into
//! sorted keys. Prints bits per key, decode speed (billions of keys/s, prefix sum included) on
//! every instruction-set level, and select / lower_bound / insert / append in millions of
//! operations per second on the detected level. A second table uses deltas of b bits with a few
//! large outliers (where patching beats FOR), next to FOR, SIMD FOR and BP128.
//!
//! `cargo run --release -p tersedb-codecs --example pfor_speed [-- quick]`

use std::hint::black_box;
use std::time::Instant;
use tersedb_codecs::bp128::Bp128;
use tersedb_codecs::for_::For;
use tersedb_codecs::pfor::{Pfor, PforDelta};
use tersedb_codecs::simd_for::SimdFor;
use tersedb_codecs::{BlockCodec, Descriptor, Isa};

const N: usize = 256;

/// Units per second of `f` (doing `per_call` units), best of 5 batches of about `ms / 4` ms.
fn rate(ms: u64, per_call: usize, mut f: impl FnMut()) -> f64 {
    let mut iters = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        if t.elapsed().as_millis() as u64 >= ms / 4 {
            break;
        }
        iters *= 2;
    }
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    iters as f64 * per_call as f64 / best
}

/// 256 sorted keys with deltas of at most `b` bits; every `outlier_every`-th delta (if any) is
/// a random value of 20..24 bits instead.
fn keys_for(rng: &mut fastrand::Rng, b: u32, outlier_every: usize) -> Vec<u32> {
    let m = if b >= 32 { u32::MAX } else { (1 << b) - 1 };
    let mut cur = rng.u32(..1000);
    let mut v = vec![cur];
    while v.len() < N {
        let d = if outlier_every > 0 && v.len() % outlier_every == outlier_every / 2 {
            rng.u32(1 << 20..1 << 24)
        } else {
            (rng.u32(..) & m).max(1)
        };
        cur += d;
        v.push(cur);
    }
    v
}

struct Blocks {
    descs: Vec<Descriptor>,
    payloads: Vec<Vec<u8>>,
}

fn build<C: BlockCodec>(keys: &[u32]) -> Blocks {
    let mut descs = Vec::new();
    let mut payloads = Vec::new();
    for chunk in keys.chunks(C::MAX_KEYS) {
        let mut p = vec![0u8; C::max_payload_len(C::MAX_KEYS)];
        descs.push(C::encode(chunk, &mut p).unwrap());
        payloads.push(p);
    }
    Blocks { descs, payloads }
}

fn bits_per_key(bl: &Blocks) -> f64 {
    bl.descs.iter().map(|d| d.size as f64 * 8.0).sum::<f64>() / N as f64
}

fn exceptions(bl: &Blocks) -> usize {
    bl.descs
        .iter()
        .zip(&bl.payloads)
        .map(|(d, p)| if d.count > 1 { p[0] as usize } else { 0 })
        .sum()
}

fn decode_rate(
    ms: u64,
    bl: &Blocks,
    isa: Isa,
    f: impl Fn(Isa, &Descriptor, &[u8], &mut [u32]) -> tersedb_codecs::Result<usize>,
) -> f64 {
    let mut out = vec![0u32; 2 * 130 + 8];
    rate(ms, N, || {
        let mut at = 0;
        for (d, p) in bl.descs.iter().zip(&bl.payloads) {
            at += f(isa, black_box(d), p, &mut out[at..]).unwrap();
        }
        black_box(&out);
    }) / 1e9
}

fn static_decode<C: BlockCodec>(ms: u64, bl: &Blocks) -> f64 {
    decode_rate(ms, bl, Isa::detect(), |_, d, p, o| C::decode(d, p, o))
}

fn ops<C: BlockCodec>(ms: u64, rng: &mut fastrand::Rng, keys: &[u32], bl: &Blocks) -> [f64; 4] {
    let probes: Vec<(usize, usize, u32)> = (0..1024)
        .map(|_| {
            let blk = rng.usize(..bl.descs.len());
            let d = &bl.descs[blk];
            (
                blk,
                rng.usize(..d.count as usize),
                rng.u32(d.start..=d.last),
            )
        })
        .collect();
    let sel = rate(ms, probes.len(), || {
        let mut s = 0u32;
        for &(blk, i, _) in &probes {
            s = s.wrapping_add(C::select(&bl.descs[blk], &bl.payloads[blk], i).unwrap());
        }
        black_box(s);
    });
    let lb = rate(ms, probes.len(), || {
        let mut s = 0usize;
        for &(blk, _, k) in &probes {
            s += C::lower_bound(&bl.descs[blk], &bl.payloads[blk], k)
                .unwrap()
                .0;
        }
        black_box(s);
    });
    // insert: a random key into a copy of a block one key short of full.
    let short = &keys[..C::MAX_KEYS - 1];
    let mut tp = vec![0u8; C::max_payload_len(C::MAX_KEYS)];
    let td = C::encode(short, &mut tp).unwrap();
    let ins_keys: Vec<u32> = (0..256)
        .map(|_| rng.u32(short[0]..=short[short.len() - 1]))
        .collect();
    let mut p = tp.clone();
    let ins = rate(ms, ins_keys.len(), || {
        for &k in &ins_keys {
            let mut d = td;
            p.copy_from_slice(&tp);
            black_box(C::insert(&mut d, &mut p, k).unwrap());
        }
    });
    // append: fill a block from empty with the key set's own keys.
    let app_keys = &keys[..C::MAX_KEYS];
    let mut p = vec![0u8; C::max_payload_len(C::MAX_KEYS)];
    let app = rate(ms, app_keys.len(), || {
        let mut d = Descriptor::default();
        for &k in app_keys {
            C::append(&mut d, &mut p, k).unwrap();
        }
        black_box(d);
    });
    [sel / 1e6, lb / 1e6, ins / 1e6, app / 1e6]
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let ms = if quick { 20 } else { 100 };
    let isas = Isa::available();
    let mut rng = fastrand::Rng::with_seed(2024);
    println!(
        "detected: {}; decode in billions of keys/s, ops in millions/s",
        Isa::detect()
    );
    print!("{:>3} | {:>9} {:>9} |", "b", "pfor bpk", "pfd bpk");
    for isa in &isas {
        print!(
            " {:>6} {:>6}",
            format!("p/{}", &isa.name()[..3]),
            format!("d/{}", &isa.name()[..3])
        );
    }
    println!(" | pfor sel   lb  ins  app | pfd sel   lb  ins  app");
    for b in 1..=24 {
        let keys = keys_for(&mut rng, b, 0);
        let pb = build::<Pfor>(&keys);
        let db = build::<PforDelta>(&keys);
        print!(
            "{b:>3} | {:>9.2} {:>9.2} |",
            bits_per_key(&pb),
            bits_per_key(&db)
        );
        for &isa in &isas {
            let p = decode_rate(ms, &pb, isa, Pfor::decode_with);
            let d = decode_rate(ms, &db, isa, PforDelta::decode_with);
            print!(" {p:>6.2} {d:>6.2}");
        }
        let po = ops::<Pfor>(ms, &mut rng, &keys, &pb);
        let dop = ops::<PforDelta>(ms, &mut rng, &keys, &db);
        println!(
            " | {:>8.0} {:>4.0} {:>4.1} {:>4.0} | {:>7.0} {:>4.0} {:>4.1} {:>4.0}",
            po[0], po[1], po[2], po[3], dop[0], dop[1], dop[2], dop[3]
        );
    }
    println!();
    println!("outliers: every 64th delta is 20..24 bits; bits per key (exceptions) and decode (detected level)");
    println!(
        "{:>3} | {:>12} {:>12} {:>6} {:>8} {:>6} | {:>6} {:>6} {:>6} {:>6} {:>6}",
        "b",
        "pfor",
        "pfor-delta",
        "for",
        "simd-for",
        "bp128",
        "pfor",
        "pfd",
        "for",
        "sfor",
        "bp128"
    );
    for b in [1u32, 2, 4, 6, 8, 10, 12, 16] {
        let keys = keys_for(&mut rng, b, 64);
        let pb = build::<Pfor>(&keys);
        let db = build::<PforDelta>(&keys);
        let fb = build::<For>(&keys);
        let sb = build::<SimdFor>(&keys);
        let bb = build::<Bp128>(&keys);
        println!(
            "{b:>3} | {:>7.2} ({:>2}) {:>7.2} ({:>2}) {:>6.2} {:>8.2} {:>6.2} | {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>6.2}",
            bits_per_key(&pb),
            exceptions(&pb),
            bits_per_key(&db),
            exceptions(&db),
            bits_per_key(&fb),
            bits_per_key(&sb),
            bits_per_key(&bb),
            static_decode::<Pfor>(ms, &pb),
            static_decode::<PforDelta>(ms, &db),
            static_decode::<For>(ms, &fb),
            static_decode::<SimdFor>(ms, &sb),
            static_decode::<Bp128>(ms, &bb),
        );
    }
}
