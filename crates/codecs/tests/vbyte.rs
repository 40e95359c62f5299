//! The shared model-based suite for VByte, plus VByte-specific format and kernel tests.

mod common;

codec_suite!(vbyte, tersedb_codecs::vbyte::VByte);
