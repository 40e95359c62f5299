//! `tersedb bench ...`: benchmark harnesses.

pub mod block_size;
pub mod codecs;
pub mod direct_io;
pub mod peers;
pub mod pfor;
pub mod plot;
pub mod store;
pub mod strings;
pub mod strings_disk;
pub mod strings_sweep;
pub mod timeseries;
pub mod timing;
