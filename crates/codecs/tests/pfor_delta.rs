//! The shared model-based suite for PFOR-DELTA (`tersedb_codecs::pfor::PforDelta`).
mod common;
codec_suite!(pfor_delta, tersedb_codecs::pfor::PforDelta);
