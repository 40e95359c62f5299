//! `tersedb bench ...`: benchmark harnesses.

pub mod codecs;
pub mod store;
pub mod strings;
pub mod timing;
