//! Sets `cfg(fast_spawn)` where the runner starts a call's process inside
//! its cgroup with `clone3` (`src/exec/spawn/clone3.rs`): the `clone3`
//! feature (on by default) on x86_64 Linux, the one architecture its
//! trampoline is written for. Elsewhere, or built with
//! `--no-default-features`, only the plain `Command` path is compiled.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(fast_spawn)");
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    let feature = std::env::var_os("CARGO_FEATURE_CLONE3").is_some();
    if feature
        && target("CARGO_CFG_TARGET_OS") == "linux"
        && target("CARGO_CFG_TARGET_ARCH") == "x86_64"
    {
        println!("cargo::rustc-cfg=fast_spawn");
    }
}
