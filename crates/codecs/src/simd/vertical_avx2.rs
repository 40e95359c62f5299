//! AVX2 builds of the 128-bit vertical-layout kernels of `vertical_sse41` (VEX encoding, three-
//! operand forms). The 4-lane layout keeps one frame row per 128-bit vector, so the bodies are
//! shared; see that module for the layout and the kernel contract.

use super::vertical_sse41::{pack, seek, sum, table33, unpack, PackFn, SeekFn, SumFn, UnpackFn};

#[target_feature(enable = "avx2")]
unsafe fn unpack_d1<const B: u32>(packed: *const u8, base: u32, out: *mut u32) {
    // SAFETY: same contract as this kernel's.
    unsafe { unpack::<B, true>(packed, base, out) }
}
#[target_feature(enable = "avx2")]
unsafe fn unpack_for<const B: u32>(packed: *const u8, base: u32, out: *mut u32) {
    // SAFETY: same contract as this kernel's.
    unsafe { unpack::<B, false>(packed, base, out) }
}
#[target_feature(enable = "avx2")]
unsafe fn pack_d1<const B: u32>(keys: *const u32, base: u32, packed: *mut u8) {
    // SAFETY: same contract as this kernel's.
    unsafe { pack::<B, true>(keys, base, packed) }
}
#[target_feature(enable = "avx2")]
unsafe fn pack_for<const B: u32>(keys: *const u32, base: u32, packed: *mut u8) {
    // SAFETY: same contract as this kernel's.
    unsafe { pack::<B, false>(keys, base, packed) }
}
#[target_feature(enable = "avx2")]
unsafe fn sum_n<const B: u32>(packed: *const u8, n: u32) -> u32 {
    // SAFETY: same contract as this kernel's.
    unsafe { sum::<B>(packed, n) }
}
#[target_feature(enable = "avx2")]
unsafe fn seek_d1<const B: u32>(packed: *const u8, base: u32, n: u32, key: u32) -> (u32, u32) {
    // SAFETY: same contract as this kernel's.
    unsafe { seek::<B>(packed, base, n, key) }
}

pub static UNPACK_D1: [UnpackFn; 33] = table33!(unpack_d1);
pub static UNPACK_FOR: [UnpackFn; 33] = table33!(unpack_for);
pub static PACK_D1: [PackFn; 33] = table33!(pack_d1);
pub static PACK_FOR: [PackFn; 33] = table33!(pack_for);
pub static SUM: [SumFn; 33] = table33!(sum_n);
pub static SEEK_D1: [SeekFn; 33] = table33!(seek_d1);
