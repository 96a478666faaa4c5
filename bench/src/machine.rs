//! Facts about the machine and its limits, recorded with every result.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};

/// The open-file limits after [`raise_nofile_limit`]: (soft, hard).
#[derive(Debug, Clone, Copy)]
pub struct NoFile {
    pub soft: u64,
    pub hard: u64,
}

/// Raises the soft RLIMIT_NOFILE to the hard limit (children inherit it:
/// the relay and the load generator each need one descriptor per socket).
/// Raising the hard limit needs CAP_SYS_RESOURCE; it is tried, not required.
pub fn raise_nofile_limit() -> NoFile {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap_or((1024, 1024));
    let wanted: u64 = 1_100_000;
    if hard < wanted && setrlimit(Resource::RLIMIT_NOFILE, wanted, wanted).is_ok() {
        return NoFile {
            soft: wanted,
            hard: wanted,
        };
    }
    if setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return NoFile { soft: hard, hard };
    }
    NoFile { soft, hard }
}

/// A run's machine facts, read at its end, with the loopback round trips
/// measured at its start (`at_start`, from [`loopback_round_trips`]):
/// the same figure minutes apart tells whether the host changed under the
/// run, as a shared one can within minutes.
pub fn facts(nofile: NoFile, at_start: Value) -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name"))
        .and_then(|rest| rest.split(':').nth(1))
        .map(|model| model.trim().to_owned())
        .unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_total_kib = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(0);
    json!({
        "nproc": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "cpu_model": cpu_model,
        "mem_total_mib": mem_total_kib / 1024,
        "kernel": read_trimmed("/proc/sys/kernel/osrelease"),
        "loadavg_at_end": read_trimmed("/proc/loadavg"),
        "nofile_soft": nofile.soft,
        "nofile_hard": nofile.hard,
        "ip_local_port_range": read_trimmed("/proc/sys/net/ipv4/ip_local_port_range"),
        "rustc": command_line("rustc", &["--version"]),
        // Decides the tail of every process-running call with per-call
        // cgroups (docs/tools.md): null where there is no cgroup2 mount.
        "cgroup2_favordynmods": std::fs::read_to_string("/proc/self/mountinfo")
            .ok()
            .and_then(|mountinfo| runner_cli::exec::cgroup::hierarchy(&mountinfo))
            .map(|(_, favors)| favors),
        // How an idle CPU sleeps. Every hop of a call wakes a thread, often
        // on the other CPU; on a VM whose guest halts an idle vCPU at once
        // (`haltpoll` polling 0 ns) each such wake-up crosses the
        // hypervisor, which can double a call's latency. Null where absent.
        "cpuidle_driver": Some(read_trimmed("/sys/devices/system/cpu/cpuidle/current_driver"))
            .filter(|driver| !driver.is_empty()),
        "guest_halt_poll_ns": read_trimmed("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
            .parse::<u64>()
            .ok(),
        // The loopback hop that bounds `ping` differs from machine to
        // machine: measured here, so a run's `ping` can be read against it.
        // A call's hops cross between processes that the scheduler puts on
        // either core: both cases, pinned.
        "loopback_tcp_round_trip_us": loopback_round_trips(),
        "loopback_tcp_round_trip_us_at_start": at_start,
        // What starting any process pays per page it touches: `runner
        // --version` and `bash -c true` run the same instructions, yet the
        // runner can take twice bash's CPU when it takes twice its page
        // faults.
        // Measured on 4 KiB pages; where transparent huge pages are
        // `always`, a fresh allocation may get 2 MiB ones, so the setting
        // is recorded beside.
        "page_fault_us": first_touch_per_page_p50_us(),
        "transparent_hugepage": read_trimmed("/sys/kernel/mm/transparent_hugepage/enabled"),
    })
}

/// Median over 7 rounds of the time to write the first byte of each of
/// the first 4,096 pages (4 KiB) of a fresh 64 MiB allocation. Above
/// glibc's largest mmap threshold (32 MiB), so every round's allocation
/// is a new mapping from the kernel, untouched and zeroed, and each first
/// write faults; a smaller one would be recycled from the heap after the
/// first round, already touched.
fn first_touch_per_page_p50_us() -> f64 {
    const PAGE: usize = 4096;
    const PAGES: usize = 4096;
    const BYTES: usize = 64 * 1024 * 1024;
    let mut per_page: Vec<f64> = (0..7)
        .map(|_| {
            let mut pages = vec![0u8; BYTES];
            let started = Instant::now();
            for offset in (0..PAGES * PAGE).step_by(PAGE) {
                pages[offset] = 1;
            }
            let elapsed = started.elapsed();
            std::hint::black_box(&pages);
            elapsed.as_secs_f64() * 1e6 / PAGES as f64
        })
        .collect();
    per_page.sort_by(f64::total_cmp);
    (per_page[per_page.len() / 2] * 100.0).round() / 100.0
}

/// The loopback round trip on one CPU and across two, as the machine
/// facts record it (null where it could not be measured).
pub fn loopback_round_trips() -> Value {
    json!({
        "same_cpu": loopback_round_trip_p50_us(0, 0).ok(),
        "across_cpus": loopback_round_trip_p50_us(0, 1).ok(),
    })
}

/// Median of 2,000 one-byte round trips between two threads over TCP on
/// 127.0.0.1 (`TCP_NODELAY`, after 200 unmeasured), the caller pinned to
/// CPU `caller_cpu` and the echo to `echo_cpu`: what one hop of a call
/// costs at least on this machine, wake-ups included. Fails where a CPU
/// does not exist.
fn loopback_round_trip_p50_us(caller_cpu: usize, echo_cpu: usize) -> anyhow::Result<f64> {
    const WARMUP: usize = 200;
    const SAMPLES: usize = 2_000;
    let pin = |cpu: usize| -> anyhow::Result<()> {
        let mut set = nix::sched::CpuSet::new();
        set.set(cpu)?;
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)?;
        Ok(())
    };
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?;
    let echo = std::thread::spawn(move || -> anyhow::Result<()> {
        pin(echo_cpu)?;
        let (mut socket, _) = listener.accept()?;
        socket.set_nodelay(true)?;
        let mut byte = [0u8; 1];
        for _ in 0..WARMUP + SAMPLES {
            socket.read_exact(&mut byte)?;
            socket.write_all(&byte)?;
        }
        Ok(())
    });
    // On its own thread too, so that the harness's threads keep their
    // affinity.
    let caller = std::thread::spawn(move || -> anyhow::Result<Vec<f64>> {
        pin(caller_cpu)?;
        let mut socket = TcpStream::connect(address)?;
        socket.set_nodelay(true)?;
        let mut times = Vec::with_capacity(SAMPLES);
        let mut byte = [7u8; 1];
        for sample in 0..WARMUP + SAMPLES {
            let started = Instant::now();
            socket.write_all(&byte)?;
            socket.read_exact(&mut byte)?;
            if sample >= WARMUP {
                times.push(started.elapsed().as_secs_f64() * 1e6);
            }
        }
        Ok(times)
    });
    let times = caller
        .join()
        .map_err(|_| anyhow::anyhow!("the caller thread panicked"))?;
    let echoed = echo
        .join()
        .map_err(|_| anyhow::anyhow!("the echo thread panicked"))?;
    // The caller's error first: a failed echo shows there as a reset.
    let mut times = times?;
    echoed?;
    times.sort_by(f64::total_cmp);
    Ok((times[SAMPLES / 2] * 10.0).round() / 10.0)
}

pub fn git_commit() -> String {
    let commit = command_line("git", &["rev-parse", "--short=12", "HEAD"]);
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .map(|out| !out.stdout.is_empty())
        .unwrap_or(false);
    if dirty {
        format!("{commit}+dirty")
    } else {
        commit
    }
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|text| text.trim().to_owned())
        .unwrap_or_default()
}

fn command_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_touch_takes_time_that_is_measured() {
        // Zeroing a page alone takes 0.1 µs or more. Pages recycled from
        // the heap (a 16 MiB allocation here: 0.01–0.05 µs) or writes the
        // compiler dropped would give less.
        let us = first_touch_per_page_p50_us();
        eprintln!("first touch: {us} µs per page");
        assert!((0.1..1_000.0).contains(&us), "{us} µs per page");
    }
}
