//! The shared model-based suite for StreamVByte, plus StreamVByte-specific format and kernel tests.

mod common;

codec_suite!(streamvbyte, tersedb_codecs::streamvbyte::StreamVByte);
