//! `tersedb bench codecs`: the Upscaledb paper's Fig. 6 and Fig. 7 on this machine.
//!
//! Table 1 (fixed width): for each bit width b, 256 sets (64 with `--quick`) of 256 keys whose deltas have exactly b
//! bits, prefix-summed. Table 2 (ClusterData): 1M keys in [0, 2^26) and in [0, 2^30). Each set is
//! split into blocks of the codec's `MAX_KEYS`. Per codec: compressed bits per integer (payload plus
//! the 32-bit start value each block keeps in its descriptor), decode speed (billions of integers per
//! second, prefix sum included), and select, lower_bound, insert (random keys into half-full blocks)
//! and append speeds (millions of operations per second; insert and append on a sample of at
//! most 128 blocks). `memcpy` of the same keys and the
//! `bitpacking` crate's BitPacker4x `decompress_sorted` are measured in the same run as peers.
//! Every measurement first checks its answers against the generated keys. Decode speeds are timed
//! round-robin across the subjects of a table (each round runs each subject in turn), so the ratios
//! within a table compare like with like on a shared machine. Before the first timed width every
//! subject runs untimed (clock ramp-up, page faults, cold predictors); each data set's payloads
//! sit back to back in one buffer, as in a leaf page, and every timed decoder writes to a buffer
//! that starts on a page boundary (see `Arena` and `OutBuf` for why).

use super::timing::{median, ops_per_sec, ops_per_sec_with_setup, Budget};
use crate::datasets;
use std::io::IsTerminal;
use std::marker::PhantomData;
use std::time::Duration;
use tersedb_codecs::{AppendOutcome, BlockCodec, Descriptor, InsertOutcome, Isa};

/// Options of `tersedb bench codecs`.
#[derive(Clone, Debug)]
pub struct Options {
    pub quick: bool,
    pub json: bool,
    /// Codec names to run (peers included by name: `memcpy`, `bitpacking-4x`); empty = all.
    pub codecs: Vec<String>,
    /// Bit widths of table 1; empty = the default list.
    pub widths: Vec<u32>,
    pub seed: u64,
}

/// One line of output.
#[derive(Clone, Debug, Default)]
pub struct Row {
    pub codec: &'static str,
    pub dataset: String,
    pub bit_width: Option<u32>,
    pub bits_per_int: Option<f64>,
    pub decode_gis: f64,
    pub select_mops: Option<f64>,
    pub lower_bound_mops: Option<f64>,
    pub insert_mops: Option<f64>,
    pub append_mops: Option<f64>,
}

impl Row {
    fn json(&self) -> String {
        fn num(v: Option<f64>) -> String {
            match v {
                Some(x) if x.is_finite() => format!("{x:.4}"),
                _ => "null".into(),
            }
        }
        format!(
            "{{\"codec\":\"{}\",\"dataset\":\"{}\",\"isa\":\"{}\",\"bit_width\":{},\"bits_per_int\":{},\
             \"decode_gis\":{},\"select_mops\":{},\"lower_bound_mops\":{},\"insert_mops\":{},\
             \"append_mops\":{}}}",
            self.codec,
            self.dataset,
            Isa::detect(),
            self.bit_width.map_or("null".into(), |b| b.to_string()),
            num(self.bits_per_int),
            num(Some(self.decode_gis)),
            num(self.select_mops),
            num(self.lower_bound_mops),
            num(self.insert_mops),
            num(self.append_mops),
        )
    }

    fn text(&self) -> String {
        fn f(v: Option<f64>, w: usize, p: usize) -> String {
            match v {
                Some(x) => format!("{x:>w$.p$}"),
                None => format!("{:>w$}", "-"),
            }
        }
        format!(
            "{:<14} {:>5} {} {} {} {} {} {}",
            self.codec,
            self.bit_width.map_or("-".into(), |b| b.to_string()),
            f(self.bits_per_int, 8, 2),
            f(Some(self.decode_gis), 10, 3),
            f(self.select_mops, 10, 1),
            f(self.lower_bound_mops, 10, 1),
            f(self.insert_mops, 10, 2),
            f(self.append_mops, 10, 1),
        )
    }
}

const HEADER: &str =
    "codec              b  bits/int  decode G/s  select M/s  lbound M/s  insert M/s  append M/s";

/// Decodes every block of a data set once; returns a checksum.
type Decoder<'a> = Box<dyn FnMut() -> u64 + 'a>;

/// Keeps a decoder's output alive (the optimiser must assume it is read) without reading it:
/// loading a key right after a wide SIMD store of it stalls on store forwarding, which would
/// charge every SIMD decoder a penalty the engine's callers (which read keys later) do not pay.
#[inline(always)]
fn keep_output(out: &mut [u32]) {
    std::hint::black_box(out);
}

/// The buffer a timed decoder writes into: `n` slots starting on a 4 KiB page boundary. A
/// 32-byte store that straddles two pages costs tens of cycles on Zen 4; a freshly allocated
/// 0.5-1 KiB buffer straddles one 13-25% of the time, and a decoder that drew such a buffer ran
/// up to 2x slower (SIMD FOR, b = 20: 6.1-6.6 against 11.1 billion/s at page offsets 3840 and
/// 4032 against 0 and 16, `examples/decode_ab.rs`). Every subject gets the same placement.
struct OutBuf {
    v: Vec<u32>,
    at: usize,
    n: usize,
}

impl OutBuf {
    fn new(n: usize) -> OutBuf {
        const PAGE: usize = 4096;
        let v = vec![0u32; n + PAGE / 4];
        let at = (PAGE - v.as_ptr() as usize % PAGE) % PAGE / 4;
        OutBuf { v, at, n }
    }

    #[inline(always)]
    fn get(&mut self) -> &mut [u32] {
        &mut self.v[self.at..self.at + self.n]
    }
}

/// Something the benchmark can measure on a list of key sets.
trait Subject {
    fn name(&self) -> &'static str;
    /// Verifies and measures every operation but decode; returns the row, a closure that decodes
    /// every block once (timed by the caller, interleaved with the other subjects so that noise
    /// hits them alike) and the number of keys it decodes.
    fn measure<'a>(
        &self,
        sets: &'a [Vec<u32>],
        budget: Budget,
        seed: u64,
    ) -> Result<(Row, Decoder<'a>, u64), String>;
}

/// A codec of tersedb-codecs.
struct Codec<C>(PhantomData<C>);

/// A data set's blocks, their payloads back to back in one buffer as in a leaf page: block `i`
/// is `arena[offs[i]..]`, its slice running `cap` bytes (`max_payload_len`) into the following
/// blocks' bytes, which serve as the slack a decoder may read past `size`; the arena ends with
/// `cap` zero bytes. (With one allocation per block, decode speed moved by ~20% with the order
/// in which subjects allocated: `tersedb-codecs`' `examples/decode_ab.rs`, `SWAP=1`.)
#[derive(Clone)]
struct Arena {
    bytes: Vec<u8>,
    offs: Vec<usize>,
    cap: usize,
}

impl Arena {
    fn new(payloads: &[(usize, Vec<u8>)], cap: usize) -> Arena {
        let mut bytes = Vec::with_capacity(payloads.iter().map(|p| p.0).sum::<usize>() + cap);
        let mut offs = Vec::with_capacity(payloads.len());
        for (len, p) in payloads {
            offs.push(bytes.len());
            bytes.extend_from_slice(&p[..*len]);
        }
        bytes.resize(bytes.len() + cap, 0);
        Arena { bytes, offs, cap }
    }

    #[inline(always)]
    fn get(&self, i: usize) -> &[u8] {
        &self.bytes[self.offs[i]..self.offs[i] + self.cap]
    }
}

struct Encoded {
    chunks: Vec<Vec<u32>>,
    descs: Vec<Descriptor>,
    payloads: Arena,
}

fn encode_all<C: BlockCodec>(sets: &[Vec<u32>]) -> Result<Encoded, String> {
    let chunks: Vec<Vec<u32>> = sets
        .iter()
        .flat_map(|s| s.chunks(C::MAX_KEYS).map(|c| c.to_vec()))
        .collect();
    let cap = C::max_payload_len(C::MAX_KEYS);
    let mut descs = Vec::with_capacity(chunks.len());
    let mut payloads = Vec::with_capacity(chunks.len());
    for c in &chunks {
        let mut buf = vec![0u8; cap];
        let d = C::encode(c, &mut buf).map_err(|e| format!("{}: encode: {e}", C::ID))?;
        descs.push(d);
        payloads.push((d.size as usize, buf));
    }
    Ok(Encoded {
        chunks,
        descs,
        payloads: Arena::new(&payloads, cap),
    })
}

impl<C: BlockCodec> Subject for Codec<C> {
    fn name(&self) -> &'static str {
        C::ID.name()
    }

    fn measure<'a>(
        &self,
        sets: &'a [Vec<u32>],
        budget: Budget,
        seed: u64,
    ) -> Result<(Row, Decoder<'a>, u64), String> {
        let name = C::ID.name();
        let e = encode_all::<C>(sets)?;
        let total: usize = e.chunks.iter().map(|c| c.len()).sum();
        let bytes: usize = e.descs.iter().map(|d| d.size as usize + 4).sum();
        let mut out = vec![0u32; C::MAX_KEYS];

        // decode (verified first)
        for (i, (c, d)) in e.chunks.iter().zip(&e.descs).enumerate() {
            let n = C::decode(d, e.payloads.get(i), &mut out)
                .map_err(|x| format!("{name}: decode: {x}"))?;
            if out[..n] != c[..] {
                return Err(format!("{name}: decode returned wrong keys"));
            }
        }
        let (descs, payloads) = (e.descs.clone(), e.payloads.clone());
        let mut buf = OutBuf::new(C::MAX_KEYS);
        let decoder: Decoder<'a> = Box::new(move || {
            let buf = buf.get();
            let mut s = 0u64;
            for (i, d) in descs.iter().enumerate() {
                s = s.wrapping_add(C::decode(d, payloads.get(i), buf).unwrap_or(0) as u64);
                keep_output(buf);
            }
            s
        });

        let mut rng = fastrand::Rng::with_seed(seed);
        let queries: Vec<(usize, usize, u32)> = (0..4096)
            .map(|_| {
                let b = rng.usize(..e.chunks.len());
                let c = &e.chunks[b];
                let i = rng.usize(..c.len());
                let key = rng.u32(c[0]..=c[c.len() - 1]);
                (b, i, key)
            })
            .collect();
        for &(b, i, key) in &queries {
            let (d, p, c) = (&e.descs[b], e.payloads.get(b), &e.chunks[b]);
            if C::select(d, p, i) != Ok(c[i]) {
                return Err(format!("{name}: select returned a wrong key"));
            }
            let pos = c.partition_point(|&k| k < key);
            if C::lower_bound(d, p, key) != Ok((pos, c.get(pos).copied())) {
                return Err(format!("{name}: lower_bound returned a wrong answer"));
            }
        }
        // Many short rounds (same total time), so the median rides out the shared machine's
        // slow spells, as for decode.
        let budget = Budget {
            min_time: budget.min_time / 4,
            rounds: 4 * budget.rounds.max(1),
        };
        let select = ops_per_sec(budget, queries.len() as u64, || {
            queries.iter().fold(0u64, |s, &(b, i, _)| {
                s.wrapping_add(C::select(&e.descs[b], e.payloads.get(b), i).unwrap_or(0) as u64)
            })
        });
        let lower_bound = ops_per_sec(budget, queries.len() as u64, || {
            queries.iter().fold(0u64, |s, &(b, _, k)| {
                s.wrapping_add(
                    C::lower_bound(&e.descs[b], e.payloads.get(b), k).map_or(0, |r| r.0) as u64,
                )
            })
        });

        // insert: blocks hold the even-indexed keys; the odd-indexed ones go in, in random order.
        // Insert and append run on a sample of at most 128 blocks, so slow codecs stay quick.
        let sample = &e.chunks[..e.chunks.len().min(128)];
        let cap = C::max_payload_len(C::MAX_KEYS);
        let halves: Vec<(Vec<u32>, Vec<u32>)> = sample
            .iter()
            .map(|c| {
                let even: Vec<u32> = c.iter().step_by(2).copied().collect();
                let mut odd: Vec<u32> = c.iter().skip(1).step_by(2).copied().collect();
                rng.shuffle(&mut odd);
                (even, odd)
            })
            .collect();
        let setup_insert = || {
            halves
                .iter()
                .map(|(even, _)| {
                    let mut buf = vec![0u8; cap];
                    let d = C::encode(even, &mut buf).expect("encode half block");
                    (d, buf)
                })
                .collect::<Vec<_>>()
        };
        let run_insert = |mut blocks: Vec<(Descriptor, Vec<u8>)>| {
            let mut ops = 0u64;
            let mut s = 0u64;
            for ((d, buf), (_, odd)) in blocks.iter_mut().zip(&halves) {
                for &k in odd {
                    if let Ok(InsertOutcome::Inserted { slot }) = C::insert(d, buf, k) {
                        s = s.wrapping_add(slot as u64);
                    }
                    ops += 1;
                }
            }
            (ops, s)
        };
        {
            let mut blocks = setup_insert();
            for ((d, buf), ((_, odd), c)) in blocks.iter_mut().zip(halves.iter().zip(sample)) {
                for &k in odd {
                    match C::insert(d, buf, k) {
                        Ok(InsertOutcome::Inserted { .. }) => {}
                        other => return Err(format!("{name}: insert failed: {other:?}")),
                    }
                }
                let n = C::decode(d, buf, &mut out).map_err(|x| format!("{name}: {x}"))?;
                if out[..n] != c[..] {
                    return Err(format!("{name}: insert produced wrong keys"));
                }
            }
        }
        let insert = ops_per_sec_with_setup(budget, setup_insert, run_insert);

        // append: every key of every block, into empty blocks.
        let setup_append = || vec![(Descriptor::default(), vec![0u8; cap]); sample.len()];
        let run_append = |mut blocks: Vec<(Descriptor, Vec<u8>)>| {
            let mut ops = 0u64;
            for ((d, buf), c) in blocks.iter_mut().zip(sample) {
                for &k in c {
                    let _ = C::append(d, buf, k);
                }
                ops += c.len() as u64;
            }
            (ops, blocks.len() as u64)
        };
        {
            let mut blocks = setup_append();
            for ((d, buf), c) in blocks.iter_mut().zip(sample) {
                for &k in c {
                    if C::append(d, buf, k) != Ok(AppendOutcome::Appended) {
                        return Err(format!("{name}: append failed"));
                    }
                }
                let n = C::decode(d, buf, &mut out).map_err(|x| format!("{name}: {x}"))?;
                if out[..n] != c[..] {
                    return Err(format!("{name}: append produced wrong keys"));
                }
            }
        }
        let append = ops_per_sec_with_setup(budget, setup_append, run_append);

        let row = Row {
            codec: name,
            bits_per_int: Some(8.0 * bytes as f64 / total as f64),
            select_mops: Some(select / 1e6),
            lower_bound_mops: Some(lower_bound / 1e6),
            insert_mops: Some(insert / 1e6),
            append_mops: Some(append / 1e6),
            ..Row::default()
        };
        Ok((row, decoder, total as u64))
    }
}

/// Peer: copying the uncompressed keys.
struct Memcpy;

impl Subject for Memcpy {
    fn name(&self) -> &'static str {
        "memcpy"
    }
    fn measure<'a>(
        &self,
        sets: &'a [Vec<u32>],
        _budget: Budget,
        _seed: u64,
    ) -> Result<(Row, Decoder<'a>, u64), String> {
        let total: usize = sets.iter().map(|s| s.len()).sum();
        let mut out = OutBuf::new(sets.iter().map(|s| s.len()).max().unwrap_or(0));
        let decoder: Decoder<'a> = Box::new(move || {
            let out = out.get();
            let mut s = 0u64;
            for set in sets {
                out[..set.len()].copy_from_slice(set);
                s = s.wrapping_add(set.len() as u64);
                keep_output(out);
            }
            s
        });
        let row = Row {
            codec: "memcpy",
            bits_per_int: Some(32.0),
            ..Row::default()
        };
        Ok((row, decoder, total as u64))
    }
}

/// Peer: the `bitpacking` crate's BitPacker4x, sorted (delta) mode, on 128-key blocks.
struct Bitpacking4x;

impl Subject for Bitpacking4x {
    fn name(&self) -> &'static str {
        "bitpacking-4x"
    }
    fn measure<'a>(
        &self,
        sets: &'a [Vec<u32>],
        _budget: Budget,
        _seed: u64,
    ) -> Result<(Row, Decoder<'a>, u64), String> {
        use bitpacking::{BitPacker, BitPacker4x};
        const N: usize = BitPacker4x::BLOCK_LEN;
        let bp = BitPacker4x::new();
        // (initial value, bit width, compressed bytes, original keys)
        let mut blocks: Vec<(u32, u8, Vec<u8>, &[u32])> = Vec::new();
        for set in sets {
            let mut prev = None;
            for c in set.chunks_exact(N) {
                let init = prev.unwrap_or(c[0].saturating_sub(1));
                let b = bp.num_bits_sorted(init, c);
                let mut buf = vec![0u8; 4 * N];
                let len = bp.compress_sorted(init, c, &mut buf, b);
                buf.truncate(len);
                blocks.push((init, b, buf, c));
                prev = Some(c[N - 1]);
            }
        }
        if blocks.is_empty() {
            return Err("bitpacking-4x: no full 128-key block".into());
        }
        let total = blocks.len() * N;
        let bytes: usize = blocks.iter().map(|b| b.2.len() + 4).sum();
        // Frames back to back in one buffer, as the codecs' payloads (see `Arena`).
        let mut arena = Vec::with_capacity(bytes);
        let frames: Vec<(u32, u8, std::ops::Range<usize>)> = blocks
            .iter()
            .map(|(init, b, buf, _)| {
                arena.extend_from_slice(buf);
                (*init, *b, arena.len() - buf.len()..arena.len())
            })
            .collect();
        let mut out = [0u32; N];
        for ((init, b, r), (.., keys)) in frames.iter().zip(&blocks) {
            bp.decompress_sorted(*init, &arena[r.clone()], &mut out, *b);
            if out[..] != keys[..] {
                return Err("bitpacking-4x: wrong keys".into());
            }
        }
        let mut buf = OutBuf::new(N);
        let decoder: Decoder<'a> = Box::new(move || {
            let out = buf.get();
            let mut s = 0u64;
            for (init, b, r) in &frames {
                s = s.wrapping_add(bp.decompress_sorted(*init, &arena[r.clone()], out, *b) as u64);
                keep_output(out);
            }
            s
        });
        let row = Row {
            codec: "bitpacking-4x",
            bits_per_int: Some(8.0 * bytes as f64 / total as f64),
            ..Row::default()
        };
        Ok((row, decoder, total as u64))
    }
}

fn codec<C: BlockCodec + 'static>() -> Box<dyn Subject> {
    Box::new(Codec::<C>(PhantomData))
}

/// Every subject, codecs first (in id order), then the peers.
fn subjects() -> Vec<Box<dyn Subject>> {
    use tersedb_codecs::*;
    vec![
        codec::<vbyte::VByte>(),
        codec::<masked_vbyte::MaskedVByte>(),
        codec::<varintgb::VarIntGb>(),
        codec::<streamvbyte::StreamVByte>(),
        codec::<bp128::Bp128>(),
        codec::<for_::For>(),
        codec::<simd_for::SimdFor>(),
        codec::<pfor::Pfor>(),
        codec::<pfor::PforDelta>(),
        codec::<rice::Rice>(),
        Box::new(Memcpy),
        Box::new(Bitpacking4x),
    ]
}

/// Times every subject's decoder round-robin: each round runs each decoder for the minimum time
/// in turn, so a noisy moment on the shared machine hits every subject of the round. Fills
/// `decode_gis` with the median rate over the rounds.
fn time_decoders(measured: Vec<(Row, Decoder<'_>, u64)>, budget: Budget) -> Vec<Row> {
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); measured.len()];
    let mut parts: Vec<(Row, Decoder<'_>, u64)> = measured;
    for (_, d, _) in parts.iter_mut() {
        std::hint::black_box(d()); // warm-up
    }
    // Many short rounds, interleaved: the median then rides out the shared machine's slow
    // spells, which last longer than a round.
    let one = Budget {
        rounds: 1,
        min_time: budget.min_time / 4,
    };
    for _ in 0..4 * budget.rounds.max(1) {
        for (i, (_, d, keys)) in parts.iter_mut().enumerate() {
            rates[i].push(ops_per_sec(one, *keys, &mut *d));
        }
    }
    parts
        .into_iter()
        .zip(rates)
        .map(|((mut row, _, _), mut r)| {
            row.decode_gis = median(&mut r) / 1e9;
            row
        })
        .collect()
}

/// Brings the machine to its steady state before the first timed round: every subject verifies and
/// exercises each operation on throw-away sets of width `b` (short budget, results dropped), then
/// all decoders run round-robin, untimed, for `WARM_UP`. Without it the first width measured ~30%
/// low (clock ramp-up, page faults of fresh allocations, cold predictors and caches). Nothing
/// measured later depends on it: the timed sets come from their own generator.
fn warm_up(chosen: &[&dyn Subject], b: u32, opts: &Options) -> Result<(), String> {
    const WARM_UP: Duration = Duration::from_millis(150);
    let mut rng = fastrand::Rng::with_seed(opts.seed ^ 0x5741_524d);
    let sets: Vec<Vec<u32>> = (0..if opts.quick { 64 } else { 256 })
        .map(|_| {
            let start = rng.u32(..1000);
            datasets::fixed_width_deltas(&mut rng, 256, b, start)
        })
        .filter(|s| s.len() >= 2)
        .collect();
    let short = Budget {
        min_time: Duration::from_millis(1),
        rounds: 1,
    };
    let mut decoders = Vec::with_capacity(chosen.len());
    for s in chosen {
        decoders.push(s.measure(&sets, short, opts.seed)?.1);
    }
    let t = std::time::Instant::now();
    while t.elapsed() < WARM_UP {
        for d in decoders.iter_mut() {
            std::hint::black_box(d());
        }
    }
    Ok(())
}

/// Runs the benchmark and prints the tables (or JSON lines) to stdout; progress goes to stderr.
pub fn run(opts: &Options) -> Result<(), String> {
    let budget = if opts.quick {
        Budget {
            min_time: Duration::from_millis(4),
            rounds: 3,
        }
    } else {
        Budget {
            min_time: Duration::from_millis(25),
            rounds: 5,
        }
    };
    let widths: Vec<u32> = if !opts.widths.is_empty() {
        opts.widths.clone()
    } else if opts.quick {
        vec![1, 2, 4, 8, 12, 16, 20, 24]
    } else {
        (1..=24).collect()
    };
    if let Some(b) = widths.iter().find(|b| !(1..=32).contains(*b)) {
        return Err(format!("bit width {b} is outside 1..=32"));
    }
    let all = subjects();
    let known: Vec<&str> = all.iter().map(|s| s.name()).collect();
    for c in &opts.codecs {
        if !known.contains(&c.as_str()) {
            return Err(format!("unknown codec {c:?}; known: {}", known.join(", ")));
        }
    }
    let chosen: Vec<&dyn Subject> = all
        .iter()
        .map(|b| b.as_ref())
        .filter(|s| opts.codecs.is_empty() || opts.codecs.iter().any(|c| c == s.name()))
        .collect();

    let progress = |msg: &str| {
        if std::io::stderr().is_terminal() {
            eprint!("\r\x1b[K{msg}");
        }
    };
    let emit = |row: &Row| {
        progress("");
        if opts.json {
            outln!("{}", row.json());
        } else {
            outln!("{}", row.text());
        }
    };
    if !opts.json {
        outln!(
            "# tersedb bench codecs: ISA {}, {}",
            Isa::detect(),
            if opts.quick { "quick" } else { "full" }
        );
        outln!("\n## Fixed-width deltas: sets of 256 keys per bit width (paper Fig. 6/7)\n");
        outln!("{HEADER}");
    }
    progress("bench codecs: warming up");
    warm_up(&chosen, widths[0].min(16), opts)?;
    let mut rng = fastrand::Rng::with_seed(opts.seed);
    for &b in &widths {
        progress(&format!(
            "bench codecs: bit width {b}/{}",
            widths.last().unwrap_or(&0)
        ));
        let sets: Vec<Vec<u32>> = (0..if opts.quick { 64 } else { 256 })
            .map(|_| {
                let start = rng.u32(..1000);
                datasets::fixed_width_deltas(&mut rng, 256, b, start)
            })
            .filter(|s| s.len() >= 2)
            .collect();
        // At b >= 24, 255 deltas of b bits overflow u32: keep what fits (sets are shorter).
        let mut measured = Vec::with_capacity(chosen.len());
        for s in &chosen {
            measured.push(s.measure(&sets, budget, opts.seed ^ b as u64)?);
        }
        for mut row in time_decoders(measured, budget) {
            row.bit_width = Some(b);
            row.dataset = format!("fixed-{b}");
            emit(&row);
        }
    }
    let cluster_sizes: &[(u32, &str)] = &[(26, "cluster-2^26"), (30, "cluster-2^30")];
    let n = 1_000_000;
    for &(log, name) in cluster_sizes {
        if !opts.json {
            outln!("\n## ClusterData: {n} keys in [0, 2^{log})\n");
            outln!("{HEADER}");
        }
        progress(&format!("bench codecs: {name}"));
        let mut rng = fastrand::Rng::with_seed(opts.seed.wrapping_add(log as u64));
        let keys = datasets::to_u32(&datasets::clustered(&mut rng, n, 0, 1u64 << log));
        let sets = vec![keys];
        let mut measured = Vec::with_capacity(chosen.len());
        for s in &chosen {
            measured.push(s.measure(&sets, budget, opts.seed ^ log as u64)?);
        }
        for mut row in time_decoders(measured, budget) {
            row.dataset = name.to_string();
            emit(&row);
        }
    }
    progress("");
    Ok(())
}
