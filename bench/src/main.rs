//! `runner-bench`: the benchmark harness of BENCHMARKS.md.
//!
//! It starts a real `runner-relay` (SQLite) and real `runner` processes on
//! this machine, simulates idle fleets with a load generator that speaks the
//! real runner protocol (`runner_proto::ws`), and measures the sections of
//! issue 7 side by side in one run. Every section is selectable
//! (`--sections`), every count and wait is bounded, and every process it
//! starts is killed when the harness ends (kill_on_drop).
//!
//! `runner-bench run … --out FILE` writes one JSON file per run with stable
//! keys; `runner-bench compare A.json B.json` prints every number of both
//! side by side with their ratio.
#![forbid(unsafe_code)]

mod compare;
mod console;
mod fleet;
mod footprint;
mod invoke;
mod machine;
mod mcp;
mod output;
mod oversight;
mod policy;
mod procs;
mod report;
mod sandbox;
mod shared;
mod simulated;
mod ssh;
mod stats;
mod throughput;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use serde_json::{json, Map, Value};

/// Version of the JSON layout; bump when a key changes meaning.
const RESULTS_SCHEMA: u32 = 1;

#[derive(Debug, Parser)]
#[command(
    name = "runner-bench",
    about = "Benchmark harness for runner and runner-relay"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the selected sections and write a JSON result file.
    Run(RunArgs),
    /// Print every number of two result files side by side, with B/A.
    Compare {
        /// The baseline result file.
        a: PathBuf,
        /// The result file to compare with it.
        b: PathBuf,
    },
    /// Print the figures of a result file as the Markdown tables of BENCHMARKS.md.
    Report {
        /// A result file of `runner-bench run` or `runner-bench ab`.
        file: PathBuf,
    },
    /// Measure two or more builds alternately in one run (API `ping`,
    /// `shell true`, `shell uname`, `runner invoke`): the before/after of a
    /// change on a noisy machine. The first build is the baseline.
    Ab(AbArgs),
}

#[derive(Debug, clap::Args)]
struct AbArgs {
    /// A directory holding a build's release `runner` and `runner-relay`
    /// (give it two or more times, baseline first).
    #[arg(long = "bin-dir", value_name = "DIR", required = true, num_args = 1)]
    bin_dirs: Vec<PathBuf>,
    /// Where to write the JSON results.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Calls per build and API method.
    #[arg(long, default_value_t = 1000)]
    calls: usize,
    /// Calls per build of `runner invoke` (a process each).
    #[arg(long, default_value_t = 200)]
    process_calls: usize,
    /// Pause after each call, in milliseconds: an agent's calls come
    /// between model turns, not back to back, and some costs (an RCU grace
    /// period in the kernel, cold caches) only show on an idle machine.
    #[arg(long, default_value_t = 0)]
    gap_ms: u64,
    /// Measure only these (comma-separated; default: all). A method alone
    /// shows its cost without the others' wake of work: `--methods ping`
    /// against the full mix told apart what the machine does after a
    /// spawn from what the relay path costs.
    #[arg(long, value_enum, value_delimiter = ',')]
    methods: Vec<invoke::AbMethod>,
}

/// Sections of issue 7, in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Section {
    /// 1. Invoke round trip against local spawn and ssh.
    Invoke,
    /// 2. ping invokes per second at several concurrencies.
    Throughput,
    /// 3. Idle fleet of simulated runners; 4. reconnect storm on the same fleet.
    Fleet,
    /// 5. Large output through the relay against ssh.
    Output,
    /// 6. Policy check per command.
    Policy,
    /// 7. Runner binary size, idle RSS, start to online.
    Footprint,
    /// Issue 29: approve → execution start, and the relay CPU the audit
    /// log and metrics cost per `ping`.
    Oversight,
    /// Issue 30: `ping` through the relay's MCP server against the HTTP API.
    Mcp,
    /// Issue 31: the console's environments page with 1,000 environments.
    Console,
    /// Issue 28: a sandbox session's first `true` against a bare isolation
    /// start, and idle memory per sandbox (needs bubblewrap and root).
    Sandbox,
    /// Issue 35: shared mode (PostgreSQL + NATS) against one relay on
    /// SQLite, with bare NATS and PostgreSQL round trips beside it (needs
    /// both on 127.0.0.1).
    Shared,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Directory holding the release `runner` and `runner-relay` binaries.
    #[arg(long, value_name = "DIR")]
    bin_dir: PathBuf,
    /// Where to write the JSON results.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Sections to run (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    sections: Vec<Section>,
    /// Small counts everywhere, for a smoke run (minutes, not tens of minutes).
    #[arg(long)]
    quick: bool,
    /// Calls per method in the invoke section (persistent client, local spawn, ssh over a master).
    #[arg(long, default_value_t = 1000)]
    invoke_calls: usize,
    /// Calls per method that start a process each and are slow (cold ssh, `runner invoke`).
    #[arg(long, default_value_t = 200)]
    process_calls: usize,
    /// Seconds each throughput cell runs.
    #[arg(long, default_value_t = 5.0)]
    throughput_seconds: f64,
    /// Fleet sizes to hold, in order; the last one also takes the reconnect storm.
    /// `max` means as many as RLIMIT_NOFILE allows.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,max")]
    fleet: Vec<String>,
    /// Seconds to hold the largest fleet (heartbeats flow meanwhile).
    #[arg(long, default_value_t = 35)]
    fleet_hold_seconds: u64,
    /// Skip the reconnect storm after the fleet.
    #[arg(long)]
    no_storm: bool,
    /// Bytes of stdout in the large-output section.
    #[arg(long, default_value_t = 100_000_000)]
    output_bytes: u64,
    /// Repetitions of each large-output method.
    #[arg(long, default_value_t = 3)]
    output_repeats: usize,
    /// Approvals asked for and approved in the oversight section.
    #[arg(long, default_value_t = 200)]
    approval_calls: usize,
    /// Fresh sets of four relays the oversight section's CPU comparison
    /// runs on, one after another (`--invoke-calls` calls a relay in each);
    /// its figure is the median of the sets' medians. 6 or more give a
    /// 95 % interval.
    #[arg(long, default_value_t = 6)]
    oversight_sets: usize,
    /// Sandbox sessions (and bare isolation starts) in the sandbox section.
    #[arg(long, default_value_t = 100)]
    sandbox_sessions: usize,
}

impl RunArgs {
    fn apply_quick(&mut self) {
        if self.quick {
            self.invoke_calls = self.invoke_calls.min(200);
            self.process_calls = self.process_calls.min(30);
            self.throughput_seconds = self.throughput_seconds.min(1.5);
            self.fleet = vec!["1000".to_owned(), "5000".to_owned()];
            self.fleet_hold_seconds = self.fleet_hold_seconds.min(5);
            self.output_repeats = 1;
            self.approval_calls = self.approval_calls.min(30);
            self.oversight_sets = self.oversight_sets.min(1);
        }
    }

    fn wants(&self, section: Section) -> bool {
        self.sections.is_empty() || self.sections.contains(&section)
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Run(args) => run(args).await,
        Command::Compare { a, b } => compare::run(&a, &b),
        Command::Report { file } => report::run(&file),
        Command::Ab(args) => ab(args).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn ab(args: AbArgs) -> anyhow::Result<()> {
    if args.bin_dirs.len() < 2 {
        anyhow::bail!("give --bin-dir at least twice: the baseline build, then the others");
    }
    let mut builds = Vec::with_capacity(args.bin_dirs.len());
    for dir in &args.bin_dirs {
        builds.push((dir.display().to_string(), procs::Bins::find(dir)?));
    }
    let started = std::time::SystemTime::now();
    let loopback_at_start = machine::loopback_round_trips();
    let value = invoke::alternate(
        &builds,
        &args.methods,
        args.calls,
        args.process_calls,
        Duration::from_millis(args.gap_ms),
    )
    .await?;
    let results = json!({
        "schema": RESULTS_SCHEMA,
        "kind": "ab",
        "started_unix_s": started.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        "git_commit": machine::git_commit(),
        "machine": machine::facts(machine::raise_nofile_limit(), loopback_at_start),
        "ab": value,
    });
    fs_err::write(&args.out, serde_json::to_string_pretty(&results)?)?;
    println!("{}", report::ab_table(&results["ab"]));
    note(&format!("results written to {}", args.out.display()));
    Ok(())
}

async fn run(mut args: RunArgs) -> anyhow::Result<()> {
    args.apply_quick();
    let nofile = machine::raise_nofile_limit();
    let bins = procs::Bins::find(&args.bin_dir)?;
    let started = std::time::SystemTime::now();
    let loopback_at_start = machine::loopback_round_trips();
    let mut sections = Map::new();
    let mut failures = Map::new();

    macro_rules! section {
        ($name:literal, $section:expr, $body:expr) => {
            if args.wants($section) {
                note(&format!("== section {}", $name));
                let clock = std::time::Instant::now();
                match $body.await {
                    Ok(mut value) => {
                        if let Value::Object(map) = &mut value {
                            map.insert(
                                "seconds".into(),
                                json!(round(clock.elapsed().as_secs_f64(), 1)),
                            );
                        }
                        note(&format!("{}: {}", $name, compact(&value)));
                        sections.insert($name.into(), value);
                    }
                    Err(error) => {
                        note(&format!("{} failed: {error:#}", $name));
                        failures.insert($name.into(), json!(format!("{error:#}")));
                    }
                }
                // Whatever a section left behind (TIME_WAIT sockets, page
                // cache) settles before the next one measures.
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        };
    }

    section!("policy", Section::Policy, policy::run(args.quick));
    section!("footprint", Section::Footprint, footprint::run(&bins));
    section!("invoke", Section::Invoke, invoke::run(&bins, &args));
    section!(
        "throughput",
        Section::Throughput,
        throughput::run(&bins, &args)
    );
    section!(
        "output",
        Section::Output,
        output::run(&bins, &args, output::Source::Text)
    );
    section!(
        "output_bulk",
        Section::Output,
        output::run(&bins, &args, output::Source::File)
    );
    section!("fleet", Section::Fleet, fleet::run(&bins, &args, nofile));
    section!(
        "oversight",
        Section::Oversight,
        oversight::run(&bins, &args)
    );
    section!("mcp", Section::Mcp, mcp::run(&bins, &args));
    section!("console", Section::Console, console::run(&bins, &args));
    section!("sandbox", Section::Sandbox, sandbox::run(&bins, &args));
    section!("shared", Section::Shared, shared::run(&bins, &args));

    let results = json!({
        "schema": RESULTS_SCHEMA,
        "started_unix_s": started.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        "git_commit": machine::git_commit(),
        "machine": machine::facts(nofile, loopback_at_start),
        "quick": args.quick,
        "sections": sections,
        "failures": failures,
    });
    if let Some(parent) = args.out.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs_err::create_dir_all(parent)?;
    }
    let text = serde_json::to_string_pretty(&results).context("encoding the results")?;
    fs_err::write(&args.out, text + "\n")?;
    note(&format!("results written to {}", args.out.display()));
    if !failures.is_empty() {
        note(&format!(
            "{} section(s) failed; see \"failures\" in the results",
            failures.len()
        ));
    }
    Ok(())
}

/// Progress on stderr (stdout stays free for data).
pub fn note(line: &str) {
    eprintln!("runner-bench: {line}");
}

fn compact(value: &Value) -> String {
    compact_str(&value.to_string())
}

/// At most 600 bytes of `text`, for progress lines and error messages.
pub fn compact_str(text: &str) -> String {
    if text.len() > 600 {
        let mut end = 600;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &text[..end])
    } else {
        text.to_owned()
    }
}

/// Rounds for the JSON (stable, readable figures).
pub fn round(value: f64, digits: i32) -> f64 {
    let factor = 10f64.powi(digits);
    (value * factor).round() / factor
}
