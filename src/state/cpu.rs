//! The CPU features the codecs' speed depends on, detected at run time,
//! for `elicitkit state bench`: AES and carry-less multiply (AES-GCM,
//! AES-GCM-SIV), their vector forms, AVX2/AVX-512 (ChaCha20, BLAKE3,
//! base64url) and SHA extensions (HMAC-SHA256).
//!
//! Detected on x86_64 and aarch64; any other architecture reports none.

use serde::Serialize;

/// One CPU feature and whether this CPU has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CpuFlag {
    /// The name Rust's feature detection uses (`aes`, `avx512f`, ...).
    pub name: &'static str,
    /// What people call it (`AES-NI`, `AVX-512`, ...).
    pub label: &'static str,
    /// Whether it was detected.
    pub present: bool,
}

/// The architecture and its detected features.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpuFeatures {
    /// `std::env::consts::ARCH`.
    pub arch: &'static str,
    /// The features looked for, in display order.
    pub flags: Vec<CpuFlag>,
}

impl CpuFeatures {
    /// This machine's features.
    pub fn detect() -> Self {
        CpuFeatures {
            arch: std::env::consts::ARCH,
            flags: detect_flags(),
        }
    }

    /// Whether feature `name` was detected (false when not looked for).
    pub fn has(&self, name: &str) -> bool {
        self.flags.iter().any(|f| f.name == name && f.present)
    }

    /// True when AES runs in hardware with its GHASH/POLYVAL multiply:
    /// AES-NI and PCLMULQDQ on x86_64, the AES extension (which includes
    /// PMULL) on aarch64.
    pub fn aes_hardware(&self) -> bool {
        match self.arch {
            "x86_64" => self.has("aes") && self.has("pclmulqdq"),
            "aarch64" => self.has("aes"),
            _ => false,
        }
    }

    /// What [`CpuFeatures::aes_hardware`] looks for, named for people.
    pub fn aes_label(&self) -> &'static str {
        match self.arch {
            "x86_64" => "AES-NI with PCLMULQDQ",
            "aarch64" => "the AES extension",
            _ => "AES instructions",
        }
    }

    /// One line: `CPU (x86_64): AES-NI yes, VAES no, ...`.
    pub fn line(&self) -> String {
        if self.flags.is_empty() {
            return format!(
                "CPU ({}): no feature detection on this architecture",
                self.arch
            );
        }
        let flags: Vec<String> = self
            .flags
            .iter()
            .map(|f| format!("{} {}", f.label, if f.present { "yes" } else { "no" }))
            .collect();
        format!("CPU ({}): {}", self.arch, flags.join(", "))
    }
}

#[cfg(target_arch = "x86_64")]
fn detect_flags() -> Vec<CpuFlag> {
    macro_rules! flag {
        ($name:tt, $label:expr) => {
            CpuFlag {
                name: $name,
                label: $label,
                present: std::arch::is_x86_feature_detected!($name),
            }
        };
    }
    vec![
        flag!("aes", "AES-NI"),
        flag!("pclmulqdq", "PCLMULQDQ"),
        flag!("vaes", "VAES"),
        flag!("avx2", "AVX2"),
        flag!("avx512f", "AVX-512"),
        flag!("sha", "SHA-NI"),
    ]
}

#[cfg(target_arch = "aarch64")]
fn detect_flags() -> Vec<CpuFlag> {
    macro_rules! flag {
        ($name:tt, $label:expr) => {
            CpuFlag {
                name: $name,
                label: $label,
                present: std::arch::is_aarch64_feature_detected!($name),
            }
        };
    }
    vec![
        flag!("aes", "AES"),
        flag!("sha2", "SHA2"),
        flag!("sha3", "SHA3"),
    ]
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn detect_flags() -> Vec<CpuFlag> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x86(present: &[&'static str]) -> CpuFeatures {
        let flag = |name, label| CpuFlag {
            name,
            label,
            present: present.contains(&name),
        };
        CpuFeatures {
            arch: "x86_64",
            flags: vec![flag("aes", "AES-NI"), flag("pclmulqdq", "PCLMULQDQ")],
        }
    }

    #[test]
    fn aes_hardware_needs_aes_and_the_multiply() {
        assert!(x86(&["aes", "pclmulqdq"]).aes_hardware());
        assert!(!x86(&["aes"]).aes_hardware());
        assert!(!x86(&[]).aes_hardware());
        let other = CpuFeatures {
            arch: "riscv64",
            flags: Vec::new(),
        };
        assert!(!other.aes_hardware());
        assert!(
            other.line().contains("no feature detection"),
            "{}",
            other.line()
        );
    }

    #[test]
    fn line_names_every_flag() {
        assert_eq!(
            x86(&["aes"]).line(),
            "CPU (x86_64): AES-NI yes, PCLMULQDQ no"
        );
        let here = CpuFeatures::detect();
        assert_eq!(here.arch, std::env::consts::ARCH);
        #[cfg(target_arch = "x86_64")]
        assert!(here.line().contains("AES-NI") && here.line().contains("SHA-NI"));
    }
}
