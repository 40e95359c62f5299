//! Per-ISA kernels. Every kernel is an `unsafe fn` with `#[target_feature]` in a per-ISA module,
//! and has a scalar twin that tests compare it against byte for byte. Callers reach kernels only
//! through safe dispatch functions in the codec modules, which check lengths first and pick the
//! kernel from [`crate::isa::Isa::detect`].

#[cfg(target_arch = "x86_64")]
pub mod masked_vbyte_sse41;
#[cfg(target_arch = "x86_64")]
pub mod pfor_avx2;
#[cfg(target_arch = "x86_64")]
pub mod pfor_avx512;
#[cfg(target_arch = "x86_64")]
pub mod streamvbyte_avx2;
#[cfg(target_arch = "x86_64")]
pub mod streamvbyte_avx512;
#[cfg(target_arch = "x86_64")]
pub mod streamvbyte_sse41;
#[cfg(target_arch = "x86_64")]
pub mod sum_avx2;
#[cfg(target_arch = "x86_64")]
pub mod varintgb_avx2;
#[cfg(target_arch = "x86_64")]
pub mod varintgb_avx512;
#[cfg(target_arch = "x86_64")]
pub mod varintgb_sse41;
#[cfg(target_arch = "x86_64")]
pub mod vertical_avx2;
#[cfg(target_arch = "x86_64")]
pub mod vertical_sse41;
