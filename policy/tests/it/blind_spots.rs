//! The permission file's blind-spot classes (issue 32): relative writes
//! after a change of directory, wrappers that start an interactive or
//! login shell, and constructs that run no command at all. Each class is
//! covered with several spellings, not one example.

use crate::support::{denylist, readonly, rules};
use rstest::rstest;

// ----- relative write targets after `cd` -----------------------------------

/// Each writes into /etc (where `cd` succeeds) although the target is
/// relative: `> /etc/*` must deny it.
#[rstest]
#[case("cd /etc && echo x > passwd")]
#[case("cd /etc; echo x > passwd")]
#[case("cd /etc\necho x > passwd")]
#[case("cd /etc && { echo x > passwd; }")]
#[case("cd / && cd etc && echo x >> shadow")]
#[case("cd /usr/../etc && echo x > passwd")]
#[case("cd -P /etc && echo x > passwd")]
#[case("cd -- /etc && echo x > passwd")]
#[case("builtin cd /etc && echo x > passwd")]
#[case("pushd /etc && echo x > passwd")]
#[case("cd /etc && echo x &> passwd")]
#[case("cd /etc && cat <> passwd")]
#[case("cd /etc && exec > passwd")]
#[case("cd /etc && echo x | cat > passwd")]
#[case("if true; then cd /etc; fi; echo x > passwd")]
#[case("true && cd /etc; echo x > passwd")]
#[case("eval 'cd /etc'; echo x > passwd")]
fn a_relative_write_after_a_literal_cd_is_resolved(#[case] command: &str) {
    let decision = denylist().check(command);
    assert!(!decision.allowed, "{command}: {}", decision.summary());
    assert!(
        decision
            .candidates
            .iter()
            .any(|c| c.text.starts_with("> /etc/") || c.text.starts_with("> $PWD/")),
        "{command}: {}",
        decision.summary()
    );
}

/// The directory is only known at run time, or the `cd` runs at a point
/// the checker cannot place: the write may land anywhere, so a deny rule
/// for writes denies it.
#[rstest]
#[case("cd \"$D\" && echo x > passwd")]
#[case("cd $(cat dir) && echo x > passwd")]
#[case("cd ~ && echo x > passwd")]
#[case("cd && echo x > passwd")]
#[case("cd - && echo x > passwd")]
#[case("popd; echo x > passwd")]
#[case("f() { cd /etc; }; f; echo x > passwd")]
#[case("echo x > passwd; f() { cd /etc; }")]
#[case("for d in a b; do echo x > passwd; cd /etc; done")]
#[case("while true; do echo x > passwd; cd /etc; done")]
#[case("trap 'echo x > passwd' EXIT; cd /etc")]
#[case("f() { echo x > passwd; }; cd /etc; f")]
#[case("f() { :; } > passwd; cd /etc; f")]
#[case("CDPATH=/; cd etc && echo x > passwd")]
#[case("export CDPATH=/; cd etc && echo x > passwd")]
fn a_relative_write_from_an_unknown_directory_fails_closed(#[case] command: &str) {
    let decision = denylist().check(command);
    assert!(!decision.allowed, "{command}: {}", decision.summary());
}

/// A failed `cd` leaves the shell where it was: both places are checked.
#[test]
fn a_cd_that_may_fail_checks_both_directories() {
    let set = rules(&[
        ("*", "deny"),
        ("echo *", "allow"),
        ("cd *", "allow"),
        ("> /tmp/*", "allow"),
    ]);
    for command in [
        "cd /tmp/missing; echo x > notes.txt",
        "cd /tmp || echo x > notes.txt",
        "cd /tmp/a; cd /tmp/b; echo x > notes.txt",
    ] {
        let decision = set.check(command);
        assert!(!decision.allowed, "{command}: {}", decision.summary());
    }
    for command in [
        "cd /tmp && echo x > notes.txt",
        "cd /tmp/a && cd ../b && echo x > notes.txt",
        "(cd /etc); cd /tmp && echo x > notes.txt",
        "echo x $(cd /etc) > /tmp/x",
    ] {
        let decision = set.check(command);
        assert!(decision.allowed, "{command}: {}", decision.summary());
    }
    // A compound command's redirect is opened before its body moves.
    for command in [
        "{ cd /tmp; echo x; } > notes.txt",
        "(cd /tmp; echo x) > notes.txt",
        "if cd /tmp; then echo x; fi > notes.txt",
    ] {
        let decision = set.check(command);
        assert!(!decision.allowed, "{command}: {}", decision.summary());
    }
    let decision = set.check("cd /tmp && { echo x; } > notes.txt");
    assert!(decision.allowed, "{}", decision.summary());
}

/// Writes that a `cd` cannot move stay as they were.
#[rstest]
#[case("(cd /etc); echo x > passwd")]
#[case("echo $(cd /etc) > passwd")]
#[case("cd /etc || echo x > passwd")]
#[case("cd /etc & echo x > passwd")]
#[case("cd /etc && echo x > /tmp/passwd")]
#[case("cd /tmp && echo x > passwd")]
fn writes_a_cd_does_not_move_are_unchanged(#[case] command: &str) {
    let decision = denylist().check(command);
    assert!(decision.allowed, "{command}: {}", decision.summary());
}

// ----- wrappers that start an interactive or login shell -------------------

/// A shell of its own, not "the wrapper plus an allowed command": denied
/// by a broad allow (here `*`), with or without a here-document.
#[rstest]
#[case("sudo -i")]
#[case("sudo -s")]
#[case("sudo --login")]
#[case("sudo -u root -i")]
#[case("sudo -i <<< 'ls'")]
#[case("echo ls | sudo -s")]
#[case("su")]
#[case("su -")]
#[case("su - root")]
#[case("su -l root")]
#[case("runuser -l root")]
#[case("doas -s")]
#[case("bash -i")]
#[case("bash -l")]
#[case("bash --login")]
#[case("sh -i")]
#[case("bash -il <<< 'ls'")]
#[case("/bin/bash -l")]
#[case("env bash -i")]
#[case("exec bash -l")]
#[case("nice bash -i")]
#[case("script")]
#[case("script -q /dev/null")]
#[case("chroot /")]
#[case("unshare -r")]
#[case("pkexec")]
#[case("sg wheel")]
#[case("newgrp wheel")]
#[case("login")]
#[case("env bash")]
#[case("xargs bash")]
#[case("xargs -o bash")]
#[case("xargs -I{} sh -c '{}'")]
#[case("find . -exec bash \\;")]
fn an_interactive_or_login_shell_is_denied(#[case] command: &str) {
    let decision = denylist().check(command);
    assert!(!decision.allowed, "{command}: {}", decision.summary());
}

/// A rule naming the exact form allows it; what the shell reads from a
/// here-document is still checked.
#[test]
fn a_rule_naming_the_form_allows_it() {
    let set = rules(&[
        ("*", "allow"),
        ("rm *", "deny"),
        ("sudo -i", "allow"),
        ("bash -l*", "allow"),
    ]);
    for command in ["sudo -i", "bash -l", "bash -l <<< 'ls'"] {
        let decision = set.check(command);
        assert!(decision.allowed, "{command}: {}", decision.summary());
    }
    for command in ["sudo -s", "bash -l <<< 'rm -rf /x'", "bash -i"] {
        let decision = set.check(command);
        assert!(!decision.allowed, "{command}: {}", decision.summary());
    }
    let denied = set.check("sudo -s");
    assert!(
        denied.summary().contains("interactive"),
        "{}",
        denied.summary()
    );
}

/// Running a command through the same wrappers is unchanged.
#[rstest]
#[case("sudo -u root ls")]
#[case("sudo -i ls")]
#[case("su -c ls")]
#[case("bash -c ls")]
#[case("bash -lc ls")]
#[case("bash ./build.sh")]
#[case("script -c ls /dev/null")]
#[case("chroot / ls")]
#[case("unshare -r ls")]
fn a_wrapper_running_a_command_is_unchanged(#[case] command: &str) {
    let decision = denylist().check(command);
    assert!(decision.allowed, "{command}: {}", decision.summary());
}

// ----- constructs that run no command ---------------------------------------

/// Judged by the commands they contain: here only `ls`, `echo` and `cat`,
/// which the read-only rules allow.
#[rstest]
#[case("ls; (( x = 1 ))")]
#[case("ls; (( 1 + 2 ))")]
#[case("for ((i = 0; i < 3; i++)); do ls \"$i\"; done")]
#[case("for ((i = 0, j = 10; i < j; i++, j--)); do echo $((i * j)); done")]
#[case("n=0; for f in a b; do ((n++)); done; echo \"$n\"")]
#[case("((i = 0)); while ((i < 3)); do ((i++)); done; ls")]
#[case("i=5; echo $(( i + 1 ))")]
#[case("i=5; echo $(( $i * 2 )) $(( ${i} - 1 ))")]
#[case("echo $(( $# + ${#x} ))")]
#[case("ls; x=1")]
#[case("ls; y=${x%.txt}")]
#[case("echo \"${x:-d}\" ${#x} ${x%.txt} ${x##*/} ${x^^} ${x,,} ${x/a/b} ${x:1:2} ${x@Q} ${!pre*} ${!arr[@]}")]
#[case("x=$(< notes.txt); echo \"$x\"")]
#[case("echo \"$(< notes.txt)\"")]
#[case("cat <<< \"$(< notes.txt)\" -")]
#[case("i=0; echo \"${arr[i]}\"")]
fn constructs_that_run_no_command_are_judged_by_what_they_contain(#[case] command: &str) {
    let decision = readonly().check(command);
    assert!(decision.allowed, "{command}: {}", decision.summary());
}

/// Still denied: arithmetic that reads a value the script did not set to a
/// number evaluates it as code, and expansions that run stored code.
#[rstest]
#[case("x='a[$(rm -rf /)]'; (( x ))")]
#[case("(( x ))")]
#[case("echo $(( x + 1 ))")]
#[case("x=1; x='a[$(rm x)]'; echo $(( x ))")]
#[case("((x = 1)); read x; echo $(( x ))")]
#[case("((x = 1)); printf -v x '%s' 'a[$(rm x)]'; echo $(( x ))")]
#[case("((x = 1)); printf -vx '%s' 'a[$(rm x)]'; echo $(( x ))")]
#[case("((x = 1)); : ${x:='a[$(rm x)]'}; echo $(( x ))")]
#[case("((x = 1)); declare -n r=x; r='a[$(rm x)]'; echo $(( x ))")]
#[case("((x = 1)); for x in 'a[$(rm x)]'; do echo $(( x )); done")]
#[case("f() { echo $(( x )); }; x=1; f")]
#[case("true && x=1; echo $(( x ))")]
#[case("if true; then x=1; fi; echo $(( x ))")]
#[case("echo $(( x = 1 ? y : 2 ))")]
#[case("((REPLY = 1)); read; echo $(( REPLY ))")]
#[case("((a[0] = 1)); echo $(( a[0] ))")]
#[case("echo $(( $1 ))")]
#[case("echo $(( \"$x\" ))")]
#[case("((x = 1)); bash -c 'echo $(( x ))'")]
#[case("x='$(rm -rf /)'; echo ${x@P}")]
#[case("echo ${!x}")]
#[case("((reboot = 1)); ( (reboot) )")]
#[case("((reboot = 1)); ((reboot) )")]
#[case("((x = 1)); command read x; echo $(( x ))")]
#[case("((x = 1)); trap 'x=$y' DEBUG; echo $(( x ))")]
#[case("PATH=/tmp/evil")]
fn arithmetic_on_values_the_script_did_not_set_stays_denied(#[case] command: &str) {
    let decision = denylist().check(command);
    let readonly_decision = readonly().check(command);
    assert!(
        !decision.allowed || !readonly_decision.allowed,
        "{command}: {}",
        decision.summary()
    );
    assert!(
        !readonly_decision.allowed,
        "{command}: {}",
        readonly_decision.summary()
    );
}

/// An assignment alone runs nothing, so the catch-all does not deny it,
/// but a rule written for it does, and a variable that decides what code
/// runs needs a rule allowing it.
#[test]
fn an_assignment_alone_is_denied_only_by_a_rule_about_it() {
    let set = rules(&[
        ("*", "deny"),
        ("ls", "allow"),
        ("AWS_*", "deny"),
        ("LANG=*", "allow"),
    ]);
    for command in ["ls; x=1", "ls; y=${x%.txt}", "ls; LANG=C", "ls; z=$(< f)"] {
        let decision = set.check(command);
        assert!(decision.allowed, "{command}: {}", decision.summary());
    }
    for command in [
        "ls; AWS_PROFILE=prod",
        "ls; AWS_PROFILE=$p",
        "ls; PATH=/tmp",
        "ls; IFS=/",
        "ls; BASH_ENV=/tmp/x",
    ] {
        let decision = set.check(command);
        assert!(!decision.allowed, "{command}: {}", decision.summary());
    }
}

/// A script of assignments or arithmetic alone still runs nothing at all,
/// which is refused as before unless a rule allows the assignment.
#[test]
fn a_script_that_runs_nothing_is_still_refused() {
    for command in ["(( x = 1 ))", "x=1", "y=${x%.txt}"] {
        let decision = readonly().check(command);
        assert!(!decision.allowed, "{command}: {}", decision.summary());
    }
}

// ----- nesting ----------------------------------------------------------------

/// `echo "$(echo "$(... echo x)")"`, `depth` substitutions deep.
fn nested(depth: usize) -> String {
    format!("{}echo x{}", "echo \"$(".repeat(depth), ")\"".repeat(depth))
}

/// Allowed substitutions nested up to the limit are allowed; one more
/// level is denied with a message that says so.
#[test]
fn nesting_is_allowed_up_to_the_limit_and_denied_beyond_it() {
    let limit = runner_policy::MAX_SUBSTITUTION_NESTING;
    let set = readonly();
    let at_limit = set.check(&nested(limit));
    assert!(at_limit.allowed, "{}", at_limit.summary());
    let beyond = set.check(&nested(limit + 1));
    assert!(!beyond.allowed);
    let message = beyond.error.unwrap_or_default();
    assert!(
        message.contains("nested") && message.contains(&limit.to_string()),
        "{message}"
    );
    for depth in [2, 5, limit / 2] {
        let decision = set.check(&nested(depth).replace("echo x", "rm x"));
        assert!(!decision.allowed, "depth {depth}: {}", decision.summary());
    }
}
