//! No panic, bounded time and bounded stack on hostile input.

use crate::support::{denylist, rules};
use proptest::prelude::*;
use std::time::{Duration, Instant};

fn timed(script: &str) -> runner_policy::Decision {
    let start = Instant::now();
    let decision = denylist().check(script);
    let elapsed = start.elapsed();
    assert!(
        elapsed < Duration::from_secs(5),
        "took {elapsed:?} on a {}-byte script",
        script.len()
    );
    decision
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_strings_never_panic(s in ".{0,200}") {
        timed(&s);
    }

    #[test]
    fn shell_soup_never_panics(s in prop::collection::vec(prop::sample::select(&[
        "$(", ")", "`", "'", "\"", "${", "}", "{", "((", "[[", "]]", "<<", "EOF", "\n", ";", "|", "&", ">", "<",
        "\\", "$'", "rm", "ls", " ", "=", "*", "?", "[", "a", "if", "then", "fi", "do", "done", "case", "in", "esac",
        "bash -c ", "sudo ", "xargs ", "find . -exec ", "#", "$((", "${x:-", "@P}", "!", "{a,b}", "{1..3}",
    ][..]), 0..40)) {
        timed(&s.concat());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(s) = std::str::from_utf8(&bytes) {
            timed(s);
        }
    }
}

#[test]
fn huge_input_is_denied_quickly() {
    let script = format!("ls {}", "a ".repeat(512 * 1024));
    let decision = timed(&script);
    assert!(!decision.allowed);
    let allow_all = rules(&[("*", "allow")]);
    assert!(!allow_all.check(&script).allowed);
}

#[test]
fn deep_nesting_is_denied_without_overflow() {
    let n = 10_000;
    for (open, close) in [
        ("$(", ")"),
        ("( ", " )"),
        ("{ ", "; }"),
        ("if true; then ", "; fi"),
        ("\"$(", ")\""),
        ("${x:-", "}"),
        ("$((", "))"),
        ("`", "`"),
        ("[[ ", " ]]"),
        ("sudo ", ""),
        ("bash -c '", "'"),
    ] {
        let script = format!("{}ls{}", open.repeat(n), close.repeat(n));
        let decision = timed(&script);
        assert!(!decision.allowed, "{open}...: {}", decision.summary());
    }
}

#[test]
fn moderate_nesting_runs_on_a_big_stack() {
    // Above the inline limit, below the refusal limit: parsed on a stack of
    // its own (this test thread's 2 MiB would overflow, an abort).
    for n in [45, 200, 1000] {
        let script = format!("{}rm x{}", "$(".repeat(n), ")".repeat(n));
        assert!(!denylist().check(&script).allowed);
        let script = format!("{}ls{}", "{ ".repeat(n), "; }".repeat(n));
        let _ = timed(&script);
    }
    // Many brackets, little depth (a long script): the same stack, and the
    // walk finishes there, so what is allowed stays allowed.
    for n in [41, 200] {
        let script = format!("echo{}", " $(ls -l)".repeat(n));
        let decision = timed(&script);
        assert!(
            decision.allowed,
            "{n} substitutions: {}",
            decision.summary()
        );
        let script = format!("echo{} $(rm -rf x)", " $(ls -l)".repeat(n));
        assert!(!timed(&script).allowed, "{n} substitutions and an rm");
    }
}

#[test]
fn brace_bombs_are_bounded() {
    let decision = timed(&format!("echo {}", "{a,b}".repeat(30)));
    assert!(!decision.allowed);
    let decision = timed("echo {1..99999999}");
    assert!(!decision.allowed);
}

#[test]
fn long_pipelines_and_padding() {
    let decision = timed(&format!("ls{} | rm x", " | ls".repeat(2000)));
    assert!(!decision.allowed);
    let decision = timed(&format!("ls{}; rm -rf /", " a".repeat(20_000)));
    assert!(!decision.allowed);
}
