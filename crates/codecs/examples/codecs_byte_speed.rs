//! Quick speed check of the byte-oriented codecs on blocks of 257 keys (a start key and 256
//! deltas of exactly b bits; the Upscaledb paper's Fig. 6/7 setup), per ISA level:
//! `cargo run --release -p tersedb-codecs --example codecs_byte_speed [b ...]`.
//! Decode speed is in billions of keys per second (prefix sum included); the other operations in
//! millions per second.

use std::hint::black_box;
use std::time::Instant;
use tersedb_codecs::{
    masked_vbyte, streamvbyte, varintgb, vbyte, BlockCodec, Descriptor, InsertOutcome, Isa,
};

/// Keys per block: the start key and 256 deltas.
const N: usize = 257;
const BLOCKS: usize = 64;

type DecodeFn = fn(Isa, &Descriptor, &[u8], &mut [u32]) -> tersedb_codecs::Result<usize>;
type SelectFn = fn(Isa, &Descriptor, &[u8], usize) -> tersedb_codecs::Result<u32>;
type LbFn = fn(Isa, &Descriptor, &[u8], u32) -> tersedb_codecs::Result<(usize, Option<u32>)>;

/// A block of keys whose deltas have exactly `b` bits (top bit set), as `tersedb bench codecs`.
fn keys(rng: &mut fastrand::Rng, b: u32) -> Vec<u32> {
    let top = 1u32 << (b - 1);
    let mut k = vec![rng.u32(..1000)];
    while k.len() < N {
        let d = top | (rng.u32(..) & (top - 1));
        k.push(k.last().unwrap() + d);
    }
    k
}

fn time<F: FnMut() -> usize>(mut f: F) -> f64 {
    // Operations per second: the best of 7 runs of ~10 ms after a warm-up (the machine is
    // shared, so the best run is the least disturbed one).
    f();
    let mut best = 0f64;
    for _ in 0..7 {
        let mut ops = 0usize;
        let t = Instant::now();
        while t.elapsed().as_millis() < 10 {
            for _ in 0..8 {
                ops += f();
            }
        }
        best = best.max(ops as f64 / t.elapsed().as_secs_f64());
    }
    best
}

fn bench<C: BlockCodec>(name: &str, b: u32, isas: &[Isa], dec: DecodeFn, sel: SelectFn, lb: LbFn) {
    let mut rng = fastrand::Rng::with_seed(b as u64);
    let sets: Vec<Vec<u32>> = (0..BLOCKS).map(|_| keys(&mut rng, b)).collect();
    let blocks: Vec<(Descriptor, Vec<u8>)> = sets
        .iter()
        .map(|k| {
            let mut p = vec![0u8; C::max_payload_len(N)];
            (C::encode(k, &mut p).unwrap(), p)
        })
        .collect();
    let bits = blocks.iter().map(|(d, _)| d.size as f64 * 8.0).sum::<f64>() / (BLOCKS * N) as f64;
    let mut out = vec![0u32; N];
    for &isa in isas {
        let dg = time(|| {
            for (d, p) in &blocks {
                dec(isa, d, p, &mut out).unwrap();
                black_box(&out);
            }
            BLOCKS * N
        }) / 1e9;
        let mut i = 0usize;
        let sm = time(|| {
            for (d, p) in &blocks {
                i = (i * 7 + 13) % N;
                black_box(sel(isa, d, p, i).unwrap());
            }
            BLOCKS
        }) / 1e6;
        let lm = time(|| {
            for (j, (d, p)) in blocks.iter().enumerate() {
                i = (i * 7 + 13) % N;
                black_box(lb(isa, d, p, sets[j][i]).unwrap());
            }
            BLOCKS
        }) / 1e6;
        println!(
            "{name:<13} b={b:>2} {:<7} bits/int {bits:5.2}  decode {dg:5.2} G/s  select {sm:6.1} M/s  lower_bound {lm:6.1} M/s",
            isa.name()
        );
    }
    // insert (random key into a 255-key block) and append, detected ISA
    let base: Vec<(Descriptor, Vec<u8>)> = sets
        .iter()
        .map(|k| {
            let mut p = vec![0u8; C::max_payload_len(N) + 8];
            (C::encode(&k[..N - 1], &mut p).unwrap(), p)
        })
        .collect();
    let mut work = base.clone();
    let im = time(|| {
        for (j, (d, p)) in work.iter_mut().enumerate() {
            let (d0, p0) = &base[j];
            *d = *d0;
            p.copy_from_slice(p0);
            let key = rng.u32(d.start..d.last);
            black_box(matches!(
                C::insert(d, p, key).unwrap(),
                InsertOutcome::Inserted { .. }
            ));
        }
        BLOCKS
    }) / 1e6;
    let am = time(|| {
        for (j, (d, p)) in work.iter_mut().enumerate() {
            let (d0, p0) = &base[j];
            *d = *d0;
            p.copy_from_slice(p0);
            let key = d.last + 1;
            black_box(C::append(d, p, key).unwrap());
        }
        BLOCKS
    }) / 1e6;
    println!("{name:<13} b={b:>2} insert {im:6.1} M/s  append {am:6.1} M/s  (incl. block reset)");
}

fn main() {
    let widths: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("bit width"))
        .collect();
    let widths = if widths.is_empty() {
        vec![1, 4, 8, 12, 16, 20, 24]
    } else {
        widths
    };
    let isas = Isa::available();
    println!("ISA levels: {:?}, detected {}", isas, Isa::detect());
    for &b in &widths {
        bench::<vbyte::VByte>(
            "vbyte",
            b,
            &[Isa::Scalar],
            masked_vbyte::decode_with,
            masked_vbyte::select_with,
            masked_vbyte::lower_bound_with,
        );
        bench::<masked_vbyte::MaskedVByte>(
            "masked-vbyte",
            b,
            &isas[1..],
            masked_vbyte::decode_with,
            masked_vbyte::select_with,
            masked_vbyte::lower_bound_with,
        );
        bench::<varintgb::VarIntGb>(
            "varintgb",
            b,
            &isas,
            varintgb::decode_with,
            varintgb::select_with,
            varintgb::lower_bound_with,
        );
        bench::<streamvbyte::StreamVByte>(
            "streamvbyte",
            b,
            &isas,
            streamvbyte::decode_with,
            streamvbyte::select_with,
            streamvbyte::lower_bound_with,
        );
    }
}
