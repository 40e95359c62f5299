//! The shared model-based suite for MaskedVByte, plus MaskedVByte-specific format and kernel tests.

mod common;

codec_suite!(masked_vbyte, tersedb_codecs::masked_vbyte::MaskedVByte);
