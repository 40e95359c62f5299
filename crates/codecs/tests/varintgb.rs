//! The shared model-based suite for VarIntGb, plus VarIntGB-specific format and kernel tests.

mod common;

codec_suite!(varintgb, tersedb_codecs::varintgb::VarIntGb);
