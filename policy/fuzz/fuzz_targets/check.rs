//! Any bytes as a script: the engine must not panic, overflow the stack or
//! hang, and a script it allows must stay allowed when an allow-all rule set
//! is replaced by a deny-all one only if it has no candidates (never).
//!
//! Run: `cargo +nightly fuzz run check` from `policy/`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use runner_policy::PermissionSet;
use std::sync::OnceLock;

fn sets() -> &'static (PermissionSet, PermissionSet) {
    static SETS: OnceLock<(PermissionSet, PermissionSet)> = OnceLock::new();
    SETS.get_or_init(|| {
        let denylist = "permission:\n  '*': allow\n  'rm *': deny\n  '> /etc/*': deny\n";
        let deny_all = "permission:\n  '*': deny\n";
        (
            PermissionSet::from_yaml_str(denylist).expect("denylist loads"),
            PermissionSet::from_yaml_str(deny_all).expect("deny-all loads"),
        )
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(script) = std::str::from_utf8(data) else { return };
    let (denylist, deny_all) = sets();
    let _ = denylist.check(script);
    assert!(!deny_all.check(script).allowed, "deny-all allowed {script:?}");
});
