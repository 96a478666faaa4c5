//! Issue 35: shared mode (PostgreSQL + NATS) against one relay on SQLite,
//! with the floors beside it, in one run.
//!
//! Latency (`ping` p50 from one keep-alive client), methods interleaved in
//! batches so the machine's drift hits them alike:
//!
//! * one relay on SQLite, its runner connected to it (the floor);
//! * shared mode, two relays on one fresh database and one NATS, the
//!   runner on relay B: a call through B (same relay) and through A
//!   (A → NATS → B);
//! * a bare NATS request-reply between two connections of this process,
//!   and a bare PostgreSQL round trip (`SELECT 1`, statement prepared).
//!
//! Throughput (`ping` per second): 16 runners on relay B with every client
//! on B, against 16 runners spread 8/8 over A and B with clients spread
//! alike, so half the calls cross relays (what a load balancer in front of
//! both does). The whole machine's CPU use is sampled beside each cell:
//! two relays on the same cores cannot do more than the cores left over by
//! one.
//!
//! Targets (issue 35): same-relay p50 ≤ 1.5 × SQLite; cross-relay p50 ≤
//! same-relay + 3 × bare NATS; two relays ≥ 1.6 × one relay's throughput.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures_util::StreamExt;
use serde_json::{json, Value};
use sqlx::Connection;

use crate::procs::{self, Bins, Relay};
use crate::stats::Summary;
use crate::{note, round, throughput, RunArgs};

/// Calls per batch before moving to the next method.
const BATCH: usize = 50;
/// Unmeasured calls per method before measuring.
const WARMUP: usize = 50;
/// Runners in the throughput cells.
const THROUGHPUT_RUNNERS: usize = 16;
/// Client concurrencies of the throughput cells.
const THROUGHPUT_CONCURRENCIES: [usize; 2] = [16, 64];

/// Where PostgreSQL and NATS are (loopback only; overridable for another
/// port).
fn admin_url() -> String {
    std::env::var("BENCH_POSTGRES_ADMIN_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

fn nats_url() -> String {
    std::env::var("BENCH_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    SqlitePing,
    SharedSameRelay,
    SharedCrossRelay,
    BareNats,
    BarePostgres,
}

impl Method {
    const ALL: [Method; 5] = [
        Method::SqlitePing,
        Method::SharedSameRelay,
        Method::SharedCrossRelay,
        Method::BareNats,
        Method::BarePostgres,
    ];

    fn key(self) -> &'static str {
        match self {
            Method::SqlitePing => "sqlite_relay_ping",
            Method::SharedSameRelay => "shared_same_relay_ping",
            Method::SharedCrossRelay => "shared_cross_relay_ping",
            Method::BareNats => "bare_nats_request_reply",
            Method::BarePostgres => "bare_postgres_select_1",
        }
    }
}

/// A database made for this run, dropped at its end.
struct Database {
    name: String,
}

impl Database {
    async fn create() -> anyhow::Result<Database> {
        let name = format!(
            "runner_bench_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let mut admin = sqlx::PgConnection::connect(&admin_url())
            .await
            .context("connecting to PostgreSQL (BENCH_POSTGRES_ADMIN_URL)")?;
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await
            .context("creating the benchmark database")?;
        Ok(Database { name })
    }

    fn url(&self) -> String {
        let admin = admin_url();
        let base = admin
            .rsplit_once('/')
            .map_or(admin.as_str(), |(base, _)| base);
        format!("{base}/{}", self.name)
    }

    async fn drop_now(self) {
        let dropped = async {
            let mut admin = sqlx::PgConnection::connect(&admin_url()).await?;
            sqlx::query(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .execute(&mut admin)
            .await?;
            anyhow::Ok(())
        };
        if let Err(error) = dropped.await {
            note(&format!("could not drop database {}: {error:#}", self.name));
        }
    }
}

pub async fn run(bins: &Bins, args: &RunArgs) -> anyhow::Result<Value> {
    let database = Database::create().await?;
    let outcome = measure(bins, args, &database).await;
    database.drop_now().await;
    outcome
}

async fn measure(bins: &Bins, args: &RunArgs, database: &Database) -> anyhow::Result<Value> {
    let data = tempfile::Builder::new()
        .prefix("runner-bench-shared-")
        .tempdir()?;
    let prefix = format!("bench{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let database_url = database.url();
    let nats = nats_url();
    let shared_flags = |instance: &'static str| {
        vec![
            "--database-url".to_owned(),
            database_url.clone(),
            "--nats-url".to_owned(),
            nats.clone(),
            "--nats-subject-prefix".to_owned(),
            prefix.clone(),
            "--instance-id".to_owned(),
            instance.to_owned(),
        ]
    };
    let sqlite = Relay::spawn(bins, &data.path().join("sqlite"), "127.0.0.1:0", None).await?;
    let flags_a = shared_flags("bench-a");
    let flags_a: Vec<&str> = flags_a.iter().map(String::as_str).collect();
    let relay_a = Relay::spawn_with(bins, &data.path().join("a"), "127.0.0.1:0", None, &flags_a)
        .await
        .context("starting shared relay A")?;
    let flags_b = shared_flags("bench-b");
    let flags_b: Vec<&str> = flags_b.iter().map(String::as_str).collect();
    let relay_b = Relay::spawn_with(
        bins,
        &data.path().join("b"),
        "127.0.0.1:0",
        Some(&relay_a.admin_key),
        &flags_b,
    )
    .await
    .context("starting shared relay B")?;

    let (sqlite_envs, _sqlite_runner) = procs::online_runners(bins, &sqlite, 1).await?;
    let (envs_b, _runners_b) = procs::online_runners(bins, &relay_b, THROUGHPUT_RUNNERS).await?;
    for env in &envs_b {
        relay_a.wait_online(env).await?;
    }
    let floors = Floors::connect(database, &prefix).await?;

    let calls = args.invoke_calls.max(BATCH);
    note(&format!(
        "shared: {calls} calls per method, interleaved in batches of {BATCH}"
    ));
    let http = procs::http_client(4)?;
    let targets = Targets {
        sqlite: (&sqlite, sqlite_envs[0].as_str()),
        same: (&relay_b, envs_b[0].as_str()),
        cross: (&relay_a, envs_b[0].as_str()),
    };
    for method in Method::ALL {
        for n in 0..WARMUP {
            one(method, &http, &targets, &floors, n).await?;
        }
    }
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(calls); Method::ALL.len()];
    let mut n = 0;
    while samples.iter().any(|s| s.len() < calls) {
        for (index, method) in Method::ALL.into_iter().enumerate() {
            for _ in 0..BATCH.min(calls - samples[index].len()) {
                n += 1;
                let start = Instant::now();
                one(method, &http, &targets, &floors, n).await?;
                samples[index].push(start.elapsed());
            }
        }
    }
    let summaries: Vec<Summary> = samples.iter().map(|s| Summary::of(s)).collect();
    let p50 = |method: Method| {
        let index = Method::ALL.iter().position(|m| *m == method).unwrap_or(0);
        summaries[index].p50_us
    };
    let mut latency = serde_json::Map::new();
    for (method, summary) in Method::ALL.into_iter().zip(&summaries) {
        latency.insert(method.key().to_owned(), summary.to_json());
    }
    let same_over_sqlite = p50(Method::SharedSameRelay) / p50(Method::SqlitePing).max(1.0);
    let cross_budget = p50(Method::SharedSameRelay) + 3.0 * p50(Method::BareNats);
    let latency_targets = json!({
        "same_relay_over_sqlite_p50": round(same_over_sqlite, 2),
        "same_relay_over_sqlite_target": 1.5,
        "same_relay_met": same_over_sqlite <= 1.5,
        "cross_relay_p50_us": round(p50(Method::SharedCrossRelay), 1),
        "cross_relay_budget_us": round(cross_budget, 1),
        "cross_relay_met": p50(Method::SharedCrossRelay) <= cross_budget,
        "cross_over_same_p50": round(p50(Method::SharedCrossRelay) / p50(Method::SharedSameRelay).max(1.0), 2),
    });
    note(&format!("shared latency: {latency_targets}"));
    floors.close().await;

    let (envs_a, _runners_a) =
        procs::online_runners(bins, &relay_a, THROUGHPUT_RUNNERS / 2).await?;
    let seconds = Duration::from_secs_f64(args.throughput_seconds.max(0.5));
    let one_relay = Arc::new(envs_b.clone());
    let spread: Vec<String> = envs_a
        .iter()
        .chain(envs_b.iter().take(THROUGHPUT_RUNNERS / 2))
        .cloned()
        .collect();
    let spread = Arc::new(spread);
    let http = procs::http_client(256)?;
    let mut cells = serde_json::Map::new();
    let mut best = (0.0f64, 0.0f64);
    for concurrency in THROUGHPUT_CONCURRENCIES {
        for (name, relays, envs) in [
            ("one_relay", vec![&relay_b], &one_relay),
            ("two_relays", vec![&relay_a, &relay_b], &spread),
        ] {
            let busy = MachineCpu::now();
            let mut value =
                throughput::cell(&http, &relays, Arc::clone(envs), concurrency, seconds).await?;
            value["machine_cpu_busy_percent"] = json!(round(busy.busy_percent_since(), 0));
            let rate = value["invokes_per_s"].as_f64().unwrap_or(0.0);
            if name == "one_relay" {
                best.0 = best.0.max(rate);
            } else {
                best.1 = best.1.max(rate);
            }
            cells.insert(format!("{name}_concurrency_{concurrency}"), value);
        }
    }
    let scale = best.1 / best.0.max(1.0);
    note(&format!(
        "shared throughput: one relay {:.0}/s, two relays {:.0}/s ({scale:.2}×)",
        best.0, best.1
    ));
    Ok(json!({
        "calls_per_method": calls,
        "latency": latency,
        "latency_targets": latency_targets,
        "throughput": {
            "runners": THROUGHPUT_RUNNERS,
            "seconds_per_cell": seconds.as_secs_f64(),
            "cells": cells,
            "best_one_relay_per_s": round(best.0, 0),
            "best_two_relays_per_s": round(best.1, 0),
            "two_over_one": round(scale, 2),
            "target": 1.6,
            "met": scale >= 1.6,
        },
        "cores": std::thread::available_parallelism().map(usize::from).unwrap_or(1),
    }))
}

/// The relay and environment each `ping` method goes through.
struct Targets<'a> {
    sqlite: (&'a Relay, &'a str),
    same: (&'a Relay, &'a str),
    cross: (&'a Relay, &'a str),
}

/// One call of `method`, checked.
async fn one(
    method: Method,
    http: &reqwest::Client,
    targets: &Targets<'_>,
    floors: &Floors,
    n: usize,
) -> anyhow::Result<()> {
    match method {
        Method::SqlitePing => procs::ping(http, targets.sqlite.0, targets.sqlite.1, n).await,
        Method::SharedSameRelay => procs::ping(http, targets.same.0, targets.same.1, n).await,
        Method::SharedCrossRelay => procs::ping(http, targets.cross.0, targets.cross.1, n).await,
        Method::BareNats => floors.nats_round_trip(n).await,
        Method::BarePostgres => floors.postgres_round_trip().await,
    }
}

/// The bare round trips a call's parts cannot beat.
struct Floors {
    requester: async_nats::Client,
    responder: async_nats::Client,
    subject: String,
    echo: tokio::task::JoinHandle<()>,
    postgres: tokio::sync::Mutex<sqlx::PgConnection>,
}

impl Floors {
    async fn connect(database: &Database, prefix: &str) -> anyhow::Result<Floors> {
        let requester = async_nats::connect(nats_url())
            .await
            .context("connecting to NATS (BENCH_NATS_URL)")?;
        let responder = async_nats::connect(nats_url()).await?;
        let subject = format!("{prefix}.bench.echo");
        let mut subscriber = responder.subscribe(subject.clone()).await?;
        responder.flush().await?;
        let echo_client = responder.clone();
        let echo = tokio::spawn(async move {
            while let Some(message) = subscriber.next().await {
                if let Some(reply) = message.reply {
                    let _ = echo_client.publish(reply, message.payload).await;
                }
            }
        });
        let postgres = sqlx::PgConnection::connect(&database.url()).await?;
        Ok(Floors {
            requester,
            responder,
            subject,
            echo,
            postgres: tokio::sync::Mutex::new(postgres),
        })
    }

    async fn nats_round_trip(&self, n: usize) -> anyhow::Result<()> {
        let payload = format!("{{\"n\":{n}}}");
        let answer = self
            .requester
            .request(self.subject.clone(), payload.clone().into())
            .await
            .context("bare NATS request")?;
        anyhow::ensure!(answer.payload == payload.as_bytes(), "NATS echo differs");
        Ok(())
    }

    async fn postgres_round_trip(&self) -> anyhow::Result<()> {
        let mut connection = self.postgres.lock().await;
        let one: i32 = sqlx::query_scalar("SELECT 1")
            .fetch_one(&mut *connection)
            .await
            .context("bare PostgreSQL round trip")?;
        anyhow::ensure!(one == 1, "SELECT 1 gave {one}");
        Ok(())
    }

    async fn close(self) {
        self.echo.abort();
        let _ = self.responder.flush().await;
        drop(self.requester);
        let _ = self.postgres.into_inner().close().await;
    }
}

/// The whole machine's CPU time from /proc/stat, to tell how much of the
/// cores a cell left idle.
struct MachineCpu {
    busy: u64,
    total: u64,
}

impl MachineCpu {
    fn now() -> MachineCpu {
        let (busy, total) = machine_cpu_ticks().unwrap_or((0, 0));
        MachineCpu { busy, total }
    }

    /// Busy share of all cores since `self`, in percent of the machine.
    fn busy_percent_since(&self) -> f64 {
        let Some((busy, total)) = machine_cpu_ticks() else {
            return 0.0;
        };
        let total = total.saturating_sub(self.total);
        if total == 0 {
            return 0.0;
        }
        100.0 * busy.saturating_sub(self.busy) as f64 / total as f64
    }
}

/// (busy, total) ticks of the `cpu` line of /proc/stat.
fn machine_cpu_ticks() -> Option<(u64, u64)> {
    let stat = fs_err::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|line| line.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|field| field.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal …
    let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
    let total: u64 = fields.iter().take(8).sum();
    Some((total.saturating_sub(idle), total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_cpu_counts_time_that_passes() {
        let before = machine_cpu_ticks().expect("/proc/stat has a cpu line");
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_millis(50) {
            std::hint::black_box(spin.elapsed());
        }
        let after = machine_cpu_ticks().expect("/proc/stat has a cpu line");
        assert!(after.1 > before.1, "total ticks advance");
        assert!(after.0 >= before.0, "busy ticks never go back");
    }
}
