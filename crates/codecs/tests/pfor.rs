//! The shared model-based suite for PFOR (`tersedb_codecs::pfor::Pfor`).
mod common;
codec_suite!(pfor, tersedb_codecs::pfor::Pfor);
