//! A cheap check that a downloaded executable is for this machine: the
//! machine field of its ELF or Mach-O header against
//! `std::env::consts::ARCH`.
//!
//! The signed `SHA256SUMS` already names the file per OS and architecture;
//! this catches a release built for the wrong target and published under the
//! right name, before it replaces a binary that works.

use std::env::consts::{ARCH, OS};

/// ELF `e_machine` values (from `<elf.h>`) for the architectures Rust names.
fn elf_machine(arch: &str) -> Option<u16> {
    Some(match arch {
        "x86" => 3,
        "x86_64" => 62,
        "arm" => 40,
        "aarch64" => 183,
        "riscv64" => 243,
        "powerpc64" => 21,
        "s390x" => 22,
        "loongarch64" => 258,
        _ => return None,
    })
}

fn elf_machine_name(machine: u16) -> &'static str {
    match machine {
        3 => "x86",
        62 => "x86_64",
        40 => "arm",
        183 => "aarch64",
        243 => "riscv64",
        21 => "powerpc64",
        22 => "s390x",
        258 => "loongarch64",
        _ => "unknown",
    }
}

/// Mach-O `cputype` values (from `<mach/machine.h>`).
fn macho_cpu(arch: &str) -> Option<u32> {
    Some(match arch {
        "x86_64" => 0x0100_0007,
        "aarch64" => 0x0100_000c,
        _ => return None,
    })
}

/// `Ok` when `header` (the file's first bytes; 64 are plenty) is an
/// executable for this OS and architecture, else why not. Architectures
/// without a known machine number pass on the file name check alone.
pub fn check_header(header: &[u8]) -> Result<(), String> {
    check_header_for(header, OS, ARCH)
}

fn check_header_for(header: &[u8], os: &str, arch: &str) -> Result<(), String> {
    match os {
        "macos" | "ios" => check_macho(header, arch),
        "windows" => Ok(()),
        _ => check_elf(header, arch),
    }
}

fn check_elf(header: &[u8], arch: &str) -> Result<(), String> {
    if header.len() < 20 || header[..4] != *b"\x7fELF" {
        return Err("it is not an ELF executable".into());
    }
    let Some(want) = elf_machine(arch) else {
        return Ok(());
    };
    // EI_DATA (byte 5): 1 little-endian, 2 big-endian; e_machine is at 18.
    let bytes = [header[18], header[19]];
    let machine = match header[5] {
        1 => u16::from_le_bytes(bytes),
        2 => u16::from_be_bytes(bytes),
        other => return Err(format!("its ELF header has an unknown byte order {other}")),
    };
    if machine != want {
        return Err(format!(
            "its ELF header says machine {machine} ({}), this machine needs {want} ({arch})",
            elf_machine_name(machine)
        ));
    }
    // EI_CLASS (byte 4): 1 for 32-bit, 2 for 64-bit.
    let want_class = if matches!(arch, "x86" | "arm") { 1 } else { 2 };
    if header[4] != want_class {
        return Err(format!(
            "its ELF class is {}-bit",
            if header[4] == 2 { 64 } else { 32 }
        ));
    }
    Ok(())
}

fn check_macho(header: &[u8], arch: &str) -> Result<(), String> {
    if header.len() < 8 {
        return Err("it is not a Mach-O executable".into());
    }
    let Some(want) = macho_cpu(arch) else {
        return Ok(());
    };
    let magic = [header[0], header[1], header[2], header[3]];
    match magic {
        // MH_MAGIC_64 as stored by a little-endian machine.
        [0xcf, 0xfa, 0xed, 0xfe] => {
            let cpu = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
            if cpu == want {
                Ok(())
            } else {
                Err(format!("its Mach-O header says CPU type {cpu:#x}, this machine needs {want:#x} ({arch})"))
            }
        }
        // FAT_MAGIC (big-endian): a universal binary; one slice must fit.
        [0xca, 0xfe, 0xba, 0xbe] => {
            let count = u32::from_be_bytes([header[4], header[5], header[6], header[7]]) as usize;
            let slices = header[8..].chunks_exact(20).take(count);
            if slices
                .clone()
                .any(|slice| u32::from_be_bytes([slice[0], slice[1], slice[2], slice[3]]) == want)
            {
                Ok(())
            } else if slices.len() < count {
                // Header sample too short to see every slice: do not guess.
                Ok(())
            } else {
                Err(format!("its universal binary has no slice for {arch}"))
            }
        }
        _ => Err("it is not a 64-bit Mach-O executable".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf(class: u8, data: u8, machine: u16) -> Vec<u8> {
        let mut header = vec![0u8; 64];
        header[..4].copy_from_slice(b"\x7fELF");
        header[4] = class;
        header[5] = data;
        let bytes = if data == 1 {
            machine.to_le_bytes()
        } else {
            machine.to_be_bytes()
        };
        header[18..20].copy_from_slice(&bytes);
        header
    }

    #[test]
    fn elf_headers_are_matched_against_the_architecture() {
        assert!(check_header_for(&elf(2, 1, 62), "linux", "x86_64").is_ok());
        assert!(check_header_for(&elf(2, 1, 183), "linux", "aarch64").is_ok());
        let error = check_header_for(&elf(2, 1, 183), "linux", "x86_64").expect_err("wrong arch");
        assert!(error.contains("183 (aarch64)"), "{error}");
        assert!(check_header_for(&elf(1, 1, 62), "linux", "x86_64").is_err());
        assert!(check_header_for(&elf(2, 2, 22), "linux", "s390x").is_ok());
        assert!(check_header_for(b"#!/bin/sh\necho hi\n", "linux", "x86_64").is_err());
        assert!(check_header_for(b"", "linux", "x86_64").is_err());
    }

    #[test]
    fn mach_o_headers_are_matched_against_the_architecture() {
        let mut thin = vec![0xcf, 0xfa, 0xed, 0xfe];
        thin.extend_from_slice(&0x0100_000cu32.to_le_bytes());
        assert!(check_header_for(&thin, "macos", "aarch64").is_ok());
        assert!(check_header_for(&thin, "macos", "x86_64").is_err());
        assert!(check_header_for(&elf(2, 1, 183), "macos", "aarch64").is_err());

        let mut fat = vec![0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2];
        for cpu in [0x0100_0007u32, 0x0100_000c] {
            let mut slice = [0u8; 20];
            slice[..4].copy_from_slice(&cpu.to_be_bytes());
            fat.extend_from_slice(&slice);
        }
        assert!(check_header_for(&fat, "macos", "aarch64").is_ok());
        assert!(check_header_for(&fat, "macos", "x86_64").is_ok());
    }

    #[test]
    fn this_test_binary_passes_its_own_check() {
        let exe = std::env::current_exe().expect("current exe");
        let bytes = std::fs::read(exe).expect("read self");
        check_header(&bytes[..bytes.len().min(64)]).expect("own header matches");
    }
}
