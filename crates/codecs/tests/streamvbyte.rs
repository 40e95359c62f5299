//! The shared model-based suite for StreamVByte, plus its SIMD kernels against the scalar twin.

mod common;

use common::byte_parity::{
    every_slot_and_key_on_every_isa, kernels_match_scalar, uniform_width_runs_match_scalar, Kernels,
};
use tersedb_codecs::streamvbyte::{self, StreamVByte};

codec_suite!(model, tersedb_codecs::streamvbyte::StreamVByte);

const KERNELS: Kernels = (
    streamvbyte::decode_with,
    streamvbyte::select_with,
    streamvbyte::lower_bound_with,
);

#[test]
fn kernels_match_scalar_on_every_isa() {
    kernels_match_scalar::<StreamVByte>(KERNELS);
}

#[test]
fn uniform_width_runs_match_scalar_on_every_isa() {
    uniform_width_runs_match_scalar::<StreamVByte>(KERNELS);
}

#[test]
fn every_slot_and_key_on_every_isa_match_the_model() {
    every_slot_and_key_on_every_isa::<StreamVByte>(KERNELS);
}
