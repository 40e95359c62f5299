//! A/B in one process: a codec's `lower_bound` against decoding the block (SIMD) and binary
//! searching it, on 512 dense 257-key blocks with random probes; median of 15 alternating rounds.
//! `cargo run --release -p tersedb-codecs --example lower_bound_ab`. The B+-tree leaf picks the
//! faster path per codec from this measurement.

use std::time::Instant;
use tersedb_codecs::{Codec, CodecId};
fn main() {
    for id in [
        CodecId::StreamVByte,
        CodecId::VarIntGb,
        CodecId::VByte,
        CodecId::MaskedVByte,
    ] {
        let c = Codec(id);
        let mut rng = fastrand::Rng::with_seed(1);
        let blocks: Vec<(tersedb_codecs::Descriptor, Vec<u8>, Vec<u32>)> = (0..512)
            .map(|i| {
                let mut k = i * 1000;
                let keys: Vec<u32> = (0..257)
                    .map(|_| {
                        k += rng.u32(1..3);
                        k
                    })
                    .collect();
                let mut buf = vec![0u8; 2048];
                let d = c.encode(&keys, &mut buf).unwrap();
                (d, buf, keys)
            })
            .collect();
        let probes: Vec<(usize, u32)> = (0..1 << 16)
            .map(|_| {
                let b = rng.usize(0..512);
                let k = blocks[b].2[rng.usize(0..257)];
                (b, k)
            })
            .collect();
        let (mut t1, mut t2) = (vec![], vec![]);
        for _ in 0..15 {
            let t = Instant::now();
            let mut s = 0usize;
            for &(b, k) in &probes {
                let (d, p, _) = &blocks[b];
                s += c.lower_bound(d, p, k).unwrap().0;
            }
            t1.push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let mut s2 = 0usize;
            let mut out = [0u32; 257];
            for &(b, k) in &probes {
                let (d, p, _) = &blocks[b];
                let n = c.decode(d, p, &mut out).unwrap();
                s2 += out[..n].partition_point(|&x| x < k);
            }
            t2.push(t.elapsed().as_secs_f64());
            assert_eq!(s, s2);
        }
        t1.sort_by(|a, b| a.total_cmp(b));
        t2.sort_by(|a, b| a.total_cmp(b));
        let n = probes.len() as f64;
        println!(
            "{:?}: lower_bound {:.1} ns, decode+search {:.1} ns",
            id,
            t1[7] / n * 1e9,
            t2[7] / n * 1e9
        );
    }
}
