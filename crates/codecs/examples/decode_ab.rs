//! Same-run A/B of the packed decoders on the `tersedb bench codecs` fixed-width workload: 256 sets
//! of 256 keys with deltas of exactly b bits, split into 129 + 127-key blocks. Subjects run
//! round-robin in short slices (many rounds, median), so they see the same machine state:
//! BP128 and SIMD FOR through `BlockCodec::decode` (detected level) and `decode_with(Avx2)`,
//! and `bitpacking`'s `BitPacker4x::decompress_sorted` on two 128-key frames per set.
//!
//! `cargo run --release -p tersedb-codecs --example decode_ab [-- 12 20 24]`
//!
//! Environment: `ARENA=1` stores each subject's payloads back to back in one buffer (as blocks sit
//! in a leaf page) instead of one allocation per block; `SWAP=1` allocates the two BP128 subjects
//! in the other order; `ONLY=i` runs subject `i` alone for 3 s (for a profiler). With one
//! allocation per block, whichever subject allocates first decodes ~20% slower on this machine;
//! `ARENA=1` removes that order effect.

use bitpacking::{BitPacker, BitPacker4x};
use std::hint::black_box;
use std::time::{Duration, Instant};
use tersedb_codecs::bp128::Bp128;
use tersedb_codecs::simd_for::SimdFor;
use tersedb_codecs::{BlockCodec, Descriptor, Isa};

fn sets(rng: &mut fastrand::Rng, b: u32) -> Vec<Vec<u32>> {
    (0..256)
        .map(|_| {
            let mut cur = rng.u32(..1000) as u64;
            let mut v = vec![cur as u32];
            for _ in 1..256 {
                let top = 1u64 << (b - 1);
                cur += top | rng.u64(..top);
                if cur > u32::MAX as u64 {
                    break;
                }
                v.push(cur as u32);
            }
            v
        })
        .collect()
}

type Run<'a> = Box<dyn FnMut() -> u64 + 'a>;

fn encoded<C: BlockCodec>(sets: &[Vec<u32>]) -> (Vec<Descriptor>, Vec<&'static [u8]>, u64) {
    let (mut ds, mut ps, mut n) = (Vec::new(), Vec::new(), 0u64);
    for s in sets {
        for c in s.chunks(C::MAX_KEYS) {
            let mut buf = vec![0u8; C::max_payload_len(C::MAX_KEYS)];
            ds.push(C::encode(c, &mut buf).unwrap());
            ps.push(buf);
            n += c.len() as u64;
        }
    }
    if std::env::var("ARENA").is_ok() {
        // One contiguous buffer (as blocks sit in a leaf page), each block's slice running on
        // into the next block's bytes as its slack.
        let cap = C::max_payload_len(C::MAX_KEYS);
        let mut arena = Vec::new();
        let mut offs = Vec::new();
        for (d, p) in ds.iter().zip(&ps) {
            offs.push(arena.len());
            arena.extend_from_slice(&p[..(d.size as usize).next_multiple_of(16)]);
        }
        arena.resize(arena.len() + cap, 0);
        let arena: &'static [u8] = Vec::leak(arena);
        return (ds, offs.iter().map(|&o| &arena[o..o + cap]).collect(), n);
    }
    (ds, ps.into_iter().map(|p| &*Vec::leak(p)).collect(), n)
}

fn codec<'a, C: BlockCodec>(sets: &[Vec<u32>]) -> (Run<'a>, u64) {
    let (ds, ps, n) = encoded::<C>(sets);
    let mut out = vec![0u32; C::MAX_KEYS];
    let f = Box::new(move || {
        let mut s = 0u64;
        for (d, p) in ds.iter().zip(&ps) {
            s = s.wrapping_add(C::decode(d, p, &mut out).unwrap_or(0) as u64);
            black_box(&mut out);
        }
        s
    });
    (f, n)
}

/// `decode_with` on an explicit level (same blocks as [`codec`]).
fn codec_on<'a>(sets: &[Vec<u32>], delta: bool, isa: Isa) -> (Run<'a>, u64) {
    let (ds, ps, n) = if delta {
        encoded::<Bp128>(sets)
    } else {
        encoded::<SimdFor>(sets)
    };
    let mut out = vec![0u32; 129];
    let f = Box::new(move || {
        let mut s = 0u64;
        for (d, p) in ds.iter().zip(&ps) {
            let r = if delta {
                Bp128::decode_with(isa, d, p, &mut out)
            } else {
                SimdFor::decode_with(isa, d, p, &mut out)
            };
            s = s.wrapping_add(r.unwrap_or(0) as u64);
            black_box(&mut out);
        }
        s
    });
    (f, n)
}

fn bitpacking<'a>(sets: &[Vec<u32>]) -> (Run<'a>, u64) {
    let bp = BitPacker4x::new();
    let mut blocks = Vec::new();
    for set in sets {
        let mut prev = None;
        for c in set.chunks_exact(128) {
            let init = prev.unwrap_or(c[0].saturating_sub(1));
            let b = bp.num_bits_sorted(init, c);
            let mut buf = vec![0u8; 512];
            let len = bp.compress_sorted(init, c, &mut buf, b);
            buf.truncate(len);
            blocks.push((init, b, buf));
            prev = Some(c[127]);
        }
    }
    let n = 128 * blocks.len() as u64;
    let mut out = [0u32; 128];
    let f = Box::new(move || {
        let mut s = 0u64;
        for (init, b, buf) in &blocks {
            s = s.wrapping_add(bp.decompress_sorted(*init, buf, &mut out, *b) as u64);
            black_box(&mut out);
        }
        s
    });
    (f, n)
}

fn main() {
    let mut widths: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    if widths.is_empty() {
        widths = vec![1, 4, 8, 12, 16, 20, 24];
    }
    let mut rng = fastrand::Rng::with_seed(7);
    println!("b   bp128  bp128/avx2  bp-4x  ratio | simd-for  simd-for/avx2   (G keys/s, median)");
    for b in widths {
        let s = sets(&mut rng, b);
        let swap = std::env::var("SWAP").is_ok();
        let (x, y) = if swap {
            let y = codec_on(&s, true, Isa::Avx2);
            (codec::<Bp128>(&s), y)
        } else {
            let x = codec::<Bp128>(&s);
            (x, codec_on(&s, true, Isa::Avx2))
        };
        let mut subj = [
            x,
            y,
            bitpacking(&s),
            codec::<SimdFor>(&s),
            codec_on(&s, false, Isa::Avx2),
        ];
        if let Ok(i) = std::env::var("ONLY") {
            // For a profiler: subject `i` alone for 3 s.
            let f = &mut subj[i.parse::<usize>().expect("ONLY=index")].0;
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(3) {
                black_box(f());
            }
            continue;
        }
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(200) {
            for (f, _) in subj.iter_mut() {
                black_box(f());
            }
        }
        let mut rates = vec![Vec::new(); subj.len()];
        for _ in 0..40 {
            for (i, (f, n)) in subj.iter_mut().enumerate() {
                let t = Instant::now();
                let mut done = 0;
                while t.elapsed() < Duration::from_millis(3) {
                    black_box(f());
                    done += *n;
                }
                rates[i].push(done as f64 / t.elapsed().as_secs_f64() / 1e9);
            }
        }
        let med: Vec<f64> = rates
            .iter_mut()
            .map(|r| {
                r.sort_by(|a, b| a.total_cmp(b));
                r[r.len() / 2]
            })
            .collect();
        println!(
            "{b:<3} {:6.2} {:9.2} {:7.2} {:6.3} | {:7.2} {:9.2}",
            med[0],
            med[1],
            med[2],
            med[0] / med[2],
            med[3],
            med[4],
        );
    }
}
