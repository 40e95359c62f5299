//! Speed of the packed codecs (BP128, FOR, SIMD FOR) on 256-key sets, as in the Upscaledb paper's
//! Fig. 6/7: for b = 1..24, 256 random deltas of b bits prefix-summed into sorted keys. Prints
//! decode speed (billions of keys/s, prefix sum included) per instruction-set level, next to
//! `memcpy` and the `bitpacking` crate's `BitPacker4x::decompress_sorted` (`bp-4x`, measured in
//! alternating batches with BP128's `BlockCodec::decode` on the detected path, column `bp128`),
//! and select / lower_bound / insert / append in millions of operations per second.
//!
//! `cargo run --release -p tersedb-codecs --example packed_speed [-- quick]`

use bitpacking::{BitPacker, BitPacker4x};
use std::hint::black_box;
use std::time::Instant;
use tersedb_codecs::bp128::Bp128;
use tersedb_codecs::for_::For;
use tersedb_codecs::simd_for::SimdFor;
use tersedb_codecs::{BlockCodec, Descriptor, Isa};

const N: usize = 256;

/// Runs `f` (which does `per_call` units of work) in batches of about `ms / 4` milliseconds and
/// returns units per second of the best of 5 batches (the machine is shared: best-of filters
/// out preemption).
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
    (iters as f64 * per_call as f64) / best
}

/// Like [`rate`] for two contenders, alternating their batches so both see the same machine
/// state; returns both rates.
fn rate_pair(ms: u64, per_call: usize, mut f: impl FnMut(), mut g: impl FnMut()) -> (f64, f64) {
    let mut iters = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        if t.elapsed().as_millis() as u64 >= ms / 8 {
            break;
        }
        iters *= 2;
    }
    let (mut bf, mut bg) = (f64::MAX, f64::MAX);
    for _ in 0..9 {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        bf = bf.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        for _ in 0..iters {
            g();
        }
        bg = bg.min(t.elapsed().as_secs_f64());
    }
    let units = iters as f64 * per_call as f64;
    (units / bf, units / bg)
}

fn keys_for(rng: &mut fastrand::Rng, b: u32) -> Vec<u32> {
    let m = if b >= 32 { u32::MAX } else { (1 << b) - 1 };
    let mut cur = rng.u32(..1000);
    let mut v = vec![cur];
    while v.len() < N {
        cur += (rng.u32(..) & m).max(1);
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
    })
}

fn ops<C: BlockCodec>(ms: u64, rng: &mut fastrand::Rng, keys: &[u32], bl: &Blocks) -> [f64; 4] {
    let probes: Vec<(usize, usize, u32)> = (0..1024)
        .map(|_| {
            let blk = rng.usize(..bl.descs.len());
            let i = rng.usize(..bl.descs[blk].count as usize);
            let d = &bl.descs[blk];
            (blk, i, rng.u32(d.start..=d.last))
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
    let short = &keys[..C::MAX_KEYS.min(N) - 1];
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
    let app_keys = &keys[..C::MAX_KEYS.min(N)];
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
    let widths: Vec<u32> = if quick {
        vec![1, 4, 8, 12, 16, 20, 24]
    } else {
        (1..=24).collect()
    };
    let isas = Isa::available();
    println!(
        "# decode in billions of keys/s (prefix sum included); ops in millions/s on the {} path",
        Isa::detect()
    );
    print!("{:>3} {:>7} {:>7} {:>7}", "b", "memcpy", "bp-4x", "bp128");
    for isa in &isas {
        print!(" {:>12}", format!("bp128/{isa}"));
    }
    for isa in &isas {
        print!(" {:>14}", format!("simdfor/{isa}"));
    }
    println!(" {:>6} | bits/key bp128 for simdfor | select / lower_bound / insert / append: bp128 | for | simd-for", "for");
    let mut rng = fastrand::Rng::with_seed(1);
    let bp = BitPacker4x::new();
    for &b in &widths {
        let keys = keys_for(&mut rng, b);
        let src = keys.clone();
        let mut dst = vec![0u32; N];
        let memcpy = rate(ms, N, || {
            dst.copy_from_slice(black_box(&src));
            black_box(&dst);
        });
        // bitpacking: two 128-value frames (keys 1..129 and 129..256 padded), as BP128 stores.
        let mut frames = Vec::new();
        for (start, chunk) in [(keys[0], &keys[1..129]), (keys[128], &keys[129..])] {
            let mut f = [*chunk.last().unwrap(); 128];
            f[..chunk.len()].copy_from_slice(chunk);
            let nb = bp.num_bits_sorted(start, &f);
            let mut c = vec![0u8; 512];
            let len = bp.compress_sorted(start, &f, &mut c, nb);
            c.truncate(len);
            frames.push((start, nb, c));
        }
        let bpb = build::<Bp128>(&keys);
        let mut out = vec![0u32; 2 * 128];
        let mut out2 = vec![0u32; 2 * 130 + 8];
        let (bp4x, bp128) = rate_pair(
            ms,
            N,
            || {
                for (k, (start, nb, c)) in frames.iter().enumerate() {
                    bp.decompress_sorted(*start, c, &mut out[128 * k..128 * k + 128], *nb);
                }
                black_box(&out);
            },
            || {
                let mut at = 0;
                for (d, p) in bpb.descs.iter().zip(&bpb.payloads) {
                    at += Bp128::decode(black_box(d), p, &mut out2[at..]).unwrap();
                }
                black_box(&out2);
            },
        );
        let forb = build::<For>(&keys);
        let sfb = build::<SimdFor>(&keys);
        print!(
            "{b:>3} {:>7.2} {:>7.2} {:>7.2}",
            memcpy / 1e9,
            bp4x / 1e9,
            bp128 / 1e9
        );
        for &isa in &isas {
            print!(
                " {:>12.2}",
                decode_rate(ms, &bpb, isa, Bp128::decode_with) / 1e9
            );
        }
        for &isa in &isas {
            print!(
                " {:>14.2}",
                decode_rate(ms, &sfb, isa, SimdFor::decode_with) / 1e9
            );
        }
        let for_dec = {
            let mut out = vec![0u32; 260];
            rate(ms, N, || {
                For::decode(&forb.descs[0], &forb.payloads[0], &mut out).unwrap();
                black_box(&out);
            })
        };
        print!(
            " {:>6.2} | {:>5.1} {:>5.1} {:>5.1} |",
            for_dec / 1e9,
            bits_per_key(&bpb),
            bits_per_key(&forb),
            bits_per_key(&sfb)
        );
        for o in [
            ops::<Bp128>(ms, &mut rng, &keys, &bpb),
            ops::<For>(ms, &mut rng, &keys, &forb),
            ops::<SimdFor>(ms, &mut rng, &keys, &sfb),
        ] {
            print!(" {:>4.0} {:>4.0} {:>4.0} {:>4.0} |", o[0], o[1], o[2], o[3]);
        }
        println!();
    }
}
