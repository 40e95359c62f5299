//! The shared model-based suite for VarIntGB, plus its SIMD kernels against the scalar twin.

mod common;

use common::byte_parity::{
    every_slot_and_key_on_every_isa, kernels_match_scalar, uniform_width_runs_match_scalar, Kernels,
};
use tersedb_codecs::varintgb::{self, VarIntGb};

codec_suite!(model, tersedb_codecs::varintgb::VarIntGb);

const KERNELS: Kernels = (
    varintgb::decode_with,
    varintgb::select_with,
    varintgb::lower_bound_with,
);

#[test]
fn kernels_match_scalar_on_every_isa() {
    kernels_match_scalar::<VarIntGb>(KERNELS);
}

#[test]
fn uniform_width_runs_match_scalar_on_every_isa() {
    uniform_width_runs_match_scalar::<VarIntGb>(KERNELS);
}

#[test]
fn every_slot_and_key_on_every_isa_match_the_model() {
    every_slot_and_key_on_every_isa::<VarIntGb>(KERNELS);
}
