//! Run-time instruction-set detection, done once.
//!
//! Kernels are chosen by [`Isa`]; [`Isa::detect`] caches the best level this CPU supports. The
//! environment variable `TERSEDB_ISA` (`scalar`, `sse4.1`, `avx2`, `avx512`) caps the level, so
//! benchmarks and tests can measure and check each path on one machine. Tests compare every
//! available level against [`Isa::Scalar`] through [`Isa::available`].

use std::sync::atomic::{AtomicU8, Ordering};

/// An instruction-set level. Ordered: a CPU that supports a level supports all lower ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// Portable Rust; the reference every SIMD kernel is tested against.
    Scalar = 0,
    /// x86-64 with SSE4.1 and SSSE3 (128-bit lanes).
    Sse41 = 1,
    /// x86-64 with AVX2 (256-bit lanes), plus BMI1/BMI2/POPCNT/LZCNT.
    Avx2 = 2,
    /// x86-64 with AVX-512 F, BW, VL, DQ, VBMI and VBMI2 (Ice Lake, Zen 4 and later).
    Avx512 = 3,
}

const UNKNOWN: u8 = u8::MAX;
static DETECTED: AtomicU8 = AtomicU8::new(UNKNOWN);

impl Isa {
    /// All levels, lowest first.
    pub const ALL: [Isa; 4] = [Isa::Scalar, Isa::Sse41, Isa::Avx2, Isa::Avx512];

    /// The best level this CPU supports, capped by `TERSEDB_ISA`; detected on first call.
    #[inline]
    pub fn detect() -> Isa {
        let v = DETECTED.load(Ordering::Relaxed);
        if v != UNKNOWN {
            return Isa::from_u8(v);
        }
        let isa = Self::probe().min(Self::env_cap());
        DETECTED.store(isa as u8, Ordering::Relaxed);
        isa
    }

    /// Every level this CPU supports (ignores `TERSEDB_ISA`), lowest first.
    pub fn available() -> Vec<Isa> {
        let best = Self::probe();
        Isa::ALL.into_iter().filter(|i| *i <= best).collect()
    }

    /// Whether this CPU can run kernels of `self`.
    pub fn is_supported(self) -> bool {
        self <= Self::probe()
    }

    /// Short lowercase name (`scalar`, `sse4.1`, `avx2`, `avx512`).
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Sse41 => "sse4.1",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    fn from_u8(v: u8) -> Isa {
        match v {
            1 => Isa::Sse41,
            2 => Isa::Avx2,
            3 => Isa::Avx512,
            _ => Isa::Scalar,
        }
    }

    fn env_cap() -> Isa {
        match std::env::var("TERSEDB_ISA").as_deref() {
            Ok("scalar") => Isa::Scalar,
            Ok("sse4.1") | Ok("sse41") => Isa::Sse41,
            Ok("avx2") => Isa::Avx2,
            _ => Isa::Avx512,
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn probe() -> Isa {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f")
            && has!("avx512bw")
            && has!("avx512vl")
            && has!("avx512dq")
            && has!("avx512vbmi")
            && has!("avx512vbmi2")
            && has!("avx2")
            && has!("bmi1")
            && has!("bmi2")
            && has!("popcnt")
            && has!("lzcnt")
        {
            // Every feature of the AVX2 level too: kernels gated on `>= Isa::Avx2` rely on it.
            Isa::Avx512
        } else if has!("avx2") && has!("bmi1") && has!("bmi2") && has!("popcnt") && has!("lzcnt") {
            Isa::Avx2
        } else if has!("sse4.1") && has!("ssse3") {
            Isa::Sse41
        } else {
            Isa::Scalar
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn probe() -> Isa {
        Isa::Scalar
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detect_is_stable_and_supported() {
        let a = Isa::detect();
        assert_eq!(a, Isa::detect());
        assert!(a.is_supported());
        assert!(Isa::available().contains(&Isa::Scalar));
        assert!(Isa::available().contains(&a));
    }
}
