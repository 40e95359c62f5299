//! `tersedb bench ...`: benchmark harnesses.

pub mod codecs;
pub mod timing;
