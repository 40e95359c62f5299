//! PFOR-DELTA (`tersedb_codecs::pfor::PforDelta`): the shared model-based suite, plus the same
//! layout, cost-rule, compulsory-exception and SIMD-level checks as `tests/pfor.rs` on deltas,
//! and its advantage over FOR on keys with a few huge gaps.
//!
//! Random tests print their seed; re-run one with `SEED=<n>`.

mod common;
codec_suite!(pfor_delta, tersedb_codecs::pfor::PforDelta);

mod pfor_common;

use pfor_common::*;
use tersedb_codecs::for_::For;
use tersedb_codecs::pfor::PforDelta;

#[test]
fn payload_matches_the_documented_layout() {
    check_layout::<PforDelta>(true);
}

#[test]
fn chosen_width_minimises_the_payload() {
    check_cost_rule::<PforDelta>(true);
}

#[test]
fn compulsory_exceptions_bridge_long_gaps() {
    check_compulsory::<PforDelta>(true);
}

#[test]
fn simd_levels_match_scalar() {
    check_kernels();
    check_decode_levels::<PforDelta>(true);
}

/// Deltas of at most 4 bits with three outliers of 2^28: PFOR-DELTA keeps b small and stores the
/// outliers as exceptions; FOR needs 30-bit offsets.
#[test]
fn beats_for_with_a_few_outliers() {
    let mut rng = fastrand::Rng::with_seed(5);
    let mut keys = vec![10u32];
    for i in 1..129 {
        let d = if i % 40 == 20 {
            1 << 28
        } else {
            rng.u32(1..16)
        };
        keys.push(keys[i - 1] + d);
    }
    let (dp, p) = common::encode_vec::<PforDelta>(&keys);
    let (df, _) = common::encode_vec::<For>(&keys);
    // b = 4 (window [1, 16)) with the three outliers plus two compulsory exceptions in each
    // 40-position gap, or b = 5 with only the three: whichever is smaller.
    assert!(
        matches!((dp.bits, p[0]), (4, 7) | (5, 3)),
        "{dp:?} x={}",
        p[0]
    );
    assert!(
        dp.size * 4 < df.size,
        "pfor-delta {} for {}",
        dp.size,
        df.size
    );
}

/// The worked example of docs/FORMAT.md, byte for byte.
#[test]
fn format_example_bytes() {
    use tersedb_codecs::BlockCodec;
    let keys = [10u32, 11, 13, 913, 914, 916]; // deltas 1, 2, 900, 1, 2
    let mut buf = [0u8; 64];
    let d = PforDelta::encode(&keys, &mut buf).unwrap();
    assert_eq!((d.bits, d.size), (1, 8));
    assert_eq!(
        &buf[..8],
        &[0x01, 0x02, 0x01, 0b10010, 0x84, 0x03, 0x00, 0x00]
    );
}
