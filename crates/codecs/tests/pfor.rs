//! PFOR (`tersedb_codecs::pfor::Pfor`): the shared model-based suite, plus
//! - the payload against an independent reader of the layout in docs/FORMAT.md (header, codes,
//!   linked exception list with compulsory exceptions, exception section),
//! - the seed 004 cost rule: the chosen b gives the smallest payload over every b,
//! - PFOR's advantage over FOR on data with outliers,
//! - every SIMD level's unpack / prefix sum / decode against the scalar twin.
//!
//! Random tests print their seed; re-run one with `SEED=<n>`.

mod common;
codec_suite!(pfor, tersedb_codecs::pfor::Pfor);

mod pfor_common;

use pfor_common::*;
use tersedb_codecs::for_::For;
use tersedb_codecs::pfor::Pfor;

#[test]
fn payload_matches_the_documented_layout() {
    check_layout::<Pfor>(false);
}

#[test]
fn chosen_width_minimises_the_payload() {
    check_cost_rule::<Pfor>(false);
}

#[test]
fn compulsory_exceptions_bridge_long_gaps() {
    check_compulsory::<Pfor>(false);
}

#[test]
fn simd_levels_match_scalar() {
    check_kernels();
    check_decode_levels::<Pfor>(false);
}

/// Offsets from the start: one far run at the end becomes exceptions instead of widening
/// every code, so PFOR is much smaller than FOR.
#[test]
fn beats_for_on_a_far_tail() {
    let mut keys: Vec<u32> = (0..125u32).map(|i| 1000 + 3 * i).collect();
    keys.extend([3_000_000_000, 3_000_000_007, 4_000_000_000, 4_000_000_001]);
    let (dp, _) = common::encode_vec::<Pfor>(&keys);
    let (df, _) = common::encode_vec::<For>(&keys);
    assert!(dp.size * 3 < df.size, "pfor {} for {}", dp.size, df.size);
    assert_eq!(dp.bits, 9, "offsets 3..372 need 9 bits");
}
