//! `tersedb bench ...`: benchmark harnesses.

pub mod codecs;
pub mod store;
pub mod timing;
