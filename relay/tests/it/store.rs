//! The store's contract, against each real database: every method of
//! `Store`, on SQLite and on PostgreSQL, through the one implementation
//! both share. A query that one database reads differently from the other
//! fails here.

use runner_proto::api::{InvocationState, RunnerInfo, Tier};
use runner_proto::approvals::{ApprovalOutcome, ApprovalStatus, DeliveryState, Notification};
use runner_proto::audit::{AuditAction, AuditActor, AuditDecision};
use runner_proto::sandbox::{Network, SandboxState, SetupReport};
use runner_relay::approvals::{self, ApprovalRecord, Decision};
use runner_relay::audit::{chain, AuditQuery, AuditRecord, AuditView};
use runner_relay::environment::{default_policy, EnvironmentRecord, Scope};
use runner_relay::sandboxes::SandboxRecord;
use runner_relay::sessions::{Lock, MemberName, Requested, RequestedFrom, WorkSession};
use runner_relay::store::{
    self, DecidedApproval, DefaultFor, InvocationRecord, JournalWrite, LeaseRefresh, MemberKind,
    NewMember, SeenRecord, Store, StoreError, TokenRecord,
};
use runner_relay::templates::TemplateRecord;
use serde_json::json;
use time::OffsetDateTime;

/// A fixed time, `seconds` after a start: the store takes the times it is
/// given and keeps whole seconds.
fn at(seconds: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_700_000_000 + seconds).expect("a valid time")
}

fn runner(hostname: &str) -> RunnerInfo {
    RunnerInfo {
        version: "1.2.3".to_owned(),
        hostname: hostname.to_owned(),
        os: "linux".to_owned(),
        arch: "x86_64".to_owned(),
    }
}

fn environment(id: &str, name: &str, created: i64) -> EnvironmentRecord {
    EnvironmentRecord {
        id: id.to_owned(),
        name: name.to_owned(),
        description: format!("{id}'s description"),
        env_type: "kubernetes".to_owned(),
        tags: vec!["eu".to_owned(), "gpu".to_owned()],
        scope: Scope::Team("ops".to_owned()),
        tier: Tier::Production,
        install_browser_tools: true,
        policy: default_policy(Tier::Production),
        created_at: at(created),
        last_seen: None,
        runner: Some(runner("build-1")),
    }
}

fn token(id: &str, environment_id: &str, created: i64) -> TokenRecord {
    TokenRecord {
        id: id.to_owned(),
        environment_id: environment_id.to_owned(),
        token_hash: format!("hash-of-{id}"),
        hint: format!("rnrt_…{id}"),
        created_at: at(created),
        last_used_at: None,
        valid_until: None,
    }
}

async fn members_and_teams(store: &dyn Store) {
    store.ping().await.expect("ping");
    assert_eq!(store.count_members().await.expect("count"), 0);
    store.create_team("ops", at(0)).await.expect("a team");
    store
        .create_team("ops", at(1))
        .await
        .expect("the same team again: a no-op");
    store.create_team("web", at(0)).await.expect("another team");

    let ada = NewMember {
        name: "ada".to_owned(),
        is_admin: true,
        teams: vec!["web".to_owned(), "ops".to_owned(), "ops".to_owned()],
        kind: MemberKind::Person,
    };
    let created = store
        .create_member(&ada, "key-hash-ada", "rnr_…ada", at(0))
        .await
        .expect("a member");
    assert_eq!(created.teams, ["ops", "web"], "sorted, once each");
    assert!(created.is_admin);

    let stranger = NewMember {
        name: "bob".to_owned(),
        is_admin: false,
        teams: vec!["nope".to_owned()],
        kind: MemberKind::Person,
    };
    let unknown = store
        .create_member(&stranger, "key-hash-bob", "rnr_…bob", at(0))
        .await;
    assert!(
        matches!(&unknown, Err(StoreError::UnknownTeam(team)) if team == "nope"),
        "{unknown:?}"
    );
    assert_eq!(
        store.count_members().await.expect("count"),
        1,
        "a member with an unknown team is not created at all"
    );
    let found = store
        .member_by_key_hash("key-hash-bob")
        .await
        .expect("lookup");
    assert_eq!(found, None, "nor is its key");

    let (member, hash) = store
        .member_by_key_hash("key-hash-ada")
        .await
        .expect("lookup")
        .expect("ada's key");
    assert_eq!((member, hash.as_str()), (created.clone(), "key-hash-ada"));
    team_membership_and_defaults(store, &created.id).await;
}

/// Agents, team membership and default environments.
async fn team_membership_and_defaults(store: &dyn Store, ada: &str) {
    let bot = NewMember {
        name: "bot".to_owned(),
        is_admin: false,
        teams: vec![],
        kind: MemberKind::Agent,
    };
    let bot = store
        .create_member(&bot, "key-hash-bot", "rnr_…bot", at(1))
        .await
        .expect("an agent");
    assert_eq!(bot.kind, MemberKind::Agent);
    assert_eq!(
        store.member(&bot.id).await.expect("read"),
        Some(bot.clone())
    );
    assert_eq!(
        store.members_named("bot").await.expect("read"),
        vec![bot.clone()]
    );
    assert!(store.add_team_member("ops", &bot.id).await.expect("add"));
    assert!(
        !store.add_team_member("ops", &bot.id).await.expect("again"),
        "already in it"
    );
    assert!(matches!(
        store.add_team_member("nope", &bot.id).await,
        Err(StoreError::UnknownTeam(_))
    ));
    assert!(matches!(
        store.add_team_member("ops", "mem_nobody").await,
        Err(StoreError::NotFound)
    ));
    let ops = store.team("ops").await.expect("read").expect("ops");
    let names: Vec<&str> = ops.members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["ada", "bot"]);
    assert_eq!(store.list_teams().await.expect("list"), ["ops", "web"]);
    assert!(store
        .set_default_environment(DefaultFor::Member(&bot.id), Some("env_x"))
        .await
        .expect("set"));
    assert!(store
        .set_default_environment(DefaultFor::Team("ops"), Some("env_y"))
        .await
        .expect("set"));
    assert!(!store
        .set_default_environment(DefaultFor::Team("nope"), Some("env_y"))
        .await
        .expect("no such team"));
    let read = store.member(&bot.id).await.expect("read").expect("bot");
    assert_eq!(read.default_environment.as_deref(), Some("env_x"));
    assert_eq!(read.teams, ["ops"]);
    assert_eq!(
        store
            .team("ops")
            .await
            .expect("read")
            .expect("ops")
            .default_environment
            .as_deref(),
        Some("env_y")
    );
    assert!(store
        .set_default_environment(DefaultFor::Member(&bot.id), None)
        .await
        .expect("clear"));
    assert!(store
        .remove_team_member("ops", &bot.id)
        .await
        .expect("remove"));
    assert!(!store
        .remove_team_member("ops", &bot.id)
        .await
        .expect("again"));
    let read = store.member(&bot.id).await.expect("read").expect("bot");
    assert_eq!((read.default_environment, read.teams), (None, vec![]));
    assert!(store.member(ada).await.expect("read").is_some());
}

fn work_session(id: &str, created: i64) -> WorkSession {
    WorkSession {
        id: id.to_owned(),
        created_by: MemberName {
            id: "mem_ada".to_owned(),
            name: "ada".to_owned(),
        },
        agent: Some(MemberName {
            id: "mem_bot".to_owned(),
            name: "bot".to_owned(),
        }),
        requested: Requested::Auto,
        requested_from: RequestedFrom::Team,
        tags: vec!["gpu".to_owned()],
        lock: None,
        created_at: at(created),
        last_used_at: at(created),
        idle_timeout_s: 60,
        ended_at: None,
        template_id: Some("tpl_build".to_owned()),
    }
}

/// Work sessions: the first lock wins, uses only move forward, ends stick.
async fn work_sessions(store: &dyn Store) {
    let first = work_session("ses_1", 100);
    store.insert_work_session(&first).await.expect("insert");
    let mut other = work_session("ses_2", 101);
    other.created_by.id = "mem_carl".to_owned();
    other.agent = None;
    other.requested = Requested::Environment("env_b".to_owned());
    store.insert_work_session(&other).await.expect("insert");
    assert_eq!(
        store.work_session("ses_1").await.expect("read"),
        Some(first.clone())
    );
    assert_eq!(store.work_session("ses_none").await.expect("read"), None);

    let lock = |environment: &str, at_s: i64| Lock {
        environment_id: environment.to_owned(),
        environment_name: format!("{environment}-name"),
        reason: format!("chose {environment}"),
        at: at(at_s),
    };
    let locked = store
        .lock_work_session("ses_1", &lock("env_b", 110))
        .await
        .expect("lock")
        .expect("exists");
    assert_eq!(locked.lock, Some(lock("env_b", 110)));
    let again = store
        .lock_work_session("ses_1", &lock("env_c", 111))
        .await
        .expect("lock")
        .expect("exists");
    assert_eq!(again.lock, Some(lock("env_b", 110)), "the first lock stays");
    assert_eq!(
        store
            .lock_work_session("ses_none", &lock("env_b", 1))
            .await
            .expect("lock"),
        None
    );

    store
        .touch_work_sessions(&[("ses_1".to_owned(), at(150)), ("ses_2".to_owned(), at(90))])
        .await
        .expect("touch");
    let read = store
        .work_session("ses_1")
        .await
        .expect("read")
        .expect("ses_1");
    assert_eq!(read.last_used_at, at(150));
    let read = store
        .work_session("ses_2")
        .await
        .expect("read")
        .expect("ses_2");
    assert_eq!(read.last_used_at, at(101), "last use never moves back");

    let mine = store
        .list_work_sessions(Some("mem_bot"), 10)
        .await
        .expect("list");
    assert_eq!(
        mine.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        ["ses_1"]
    );
    let all = store.list_work_sessions(None, 10).await.expect("list");
    assert_eq!(
        all.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        ["ses_2", "ses_1"],
        "newest first"
    );
    assert_eq!(
        store.list_work_sessions(None, 1).await.expect("list").len(),
        1
    );

    assert!(store.end_work_session("ses_2", at(160)).await.expect("end"));
    assert!(!store
        .end_work_session("ses_2", at(170))
        .await
        .expect("again"));
    let read = store
        .work_session("ses_2")
        .await
        .expect("read")
        .expect("ses_2");
    assert_eq!(read.ended_at, Some(at(160)));

    // ses_2 ended at 160; ses_1 is idle past 150 + 60.
    assert_eq!(store.prune_work_sessions(at(160)).await.expect("prune"), 0);
    assert_eq!(store.prune_work_sessions(at(161)).await.expect("prune"), 1);
    assert_eq!(store.prune_work_sessions(at(210)).await.expect("prune"), 0);
    assert_eq!(store.prune_work_sessions(at(211)).await.expect("prune"), 1);
    assert_eq!(
        store.list_work_sessions(None, 10).await.expect("list"),
        vec![]
    );
}

/// Sandboxes: records read back as written, a session's newest first, the
/// live ones only when asked.
async fn sandboxes(store: &dyn Store) {
    let record = |id: &str, session: &str, created: i64| SandboxRecord {
        id: id.to_owned(),
        session_id: session.to_owned(),
        deployment_of: None,
        host_environment_id: "env_host".to_owned(),
        host_name: "host-1".to_owned(),
        template_id: None,
        state: SandboxState::Provisioning,
        reason: None,
        setup: None,
        created_by: "mem_ada".to_owned(),
        created_at: at(created),
        ready_at: None,
        ended_at: None,
    };
    let mut first = record("sbx_1", "ses_s", 100);
    let second = record("sbx_2", "ses_s", 101);
    let mut other = record("sbx_3", "", 102);
    other.deployment_of = Some("env_a".to_owned());
    for sandbox in [&first, &second, &other] {
        store.insert_sandbox(sandbox).await.expect("insert");
    }
    first.state = SandboxState::Failed;
    first.reason = Some("setup failed".to_owned());
    first.setup = Some(SetupReport {
        exit_code: Some(2),
        duration_ms: 30,
        log_tail: "no\n".to_owned(),
    });
    first.template_id = None;
    first.ended_at = Some(at(105));
    store.update_sandbox(&first).await.expect("update");
    assert_eq!(
        store.sandbox("sbx_1").await.expect("read"),
        Some(first.clone())
    );
    assert_eq!(store.sandbox("sbx_none").await.expect("read"), None);
    let ids = |records: Vec<SandboxRecord>| -> Vec<String> {
        records.into_iter().map(|record| record.id).collect()
    };
    assert_eq!(
        ids(store.session_sandboxes("ses_s").await.expect("list")),
        ["sbx_2", "sbx_1"]
    );
    assert_eq!(
        ids(store.deployments("env_a").await.expect("deployments")),
        ["sbx_3"]
    );
    assert_eq!(
        store.deployments("env_a").await.expect("deployments")[0],
        other
    );
    assert_eq!(
        ids(store.list_sandboxes(true, 10).await.expect("live")),
        ["sbx_3", "sbx_2"]
    );
    assert_eq!(
        ids(store.list_sandboxes(false, 2).await.expect("all")),
        ["sbx_3", "sbx_2"]
    );
}

async fn environments(store: &dyn Store) {
    let alpha = environment("env_a", "alpha", 10);
    store.insert_environment(&alpha).await.expect("alpha");
    let mut blank = environment("env_b", "", 5);
    blank.scope = Scope::Shared;
    blank.tier = Tier::Development;
    blank.runner = None;
    blank.install_browser_tools = false;
    store
        .insert_environment(&blank)
        .await
        .expect("a blank name");
    let other_blank = environment("env_c", "", 20);
    store
        .insert_environment(&other_blank)
        .await
        .expect("blank names may repeat");
    let clash = store
        .insert_environment(&environment("env_d", "alpha", 30))
        .await;
    assert!(
        matches!(&clash, Err(StoreError::NameTaken(name)) if name == "alpha"),
        "{clash:?}"
    );

    assert_eq!(
        store.environment("env_a").await.expect("read"),
        Some(alpha.clone())
    );
    assert_eq!(
        store.environment("env_b").await.expect("read"),
        Some(blank.clone())
    );
    assert_eq!(store.environment("env_x").await.expect("read"), None);
    assert_eq!(
        store.environment_by_name("alpha").await.expect("read"),
        Some(alpha.clone())
    );
    assert_eq!(store.environment_by_name("").await.expect("read"), None);
    let ids: Vec<String> = store
        .list_environments()
        .await
        .expect("list")
        .into_iter()
        .map(|environment| environment.id)
        .collect();
    assert_eq!(ids, ["env_b", "env_a", "env_c"], "oldest first");

    let mut edited = alpha.clone();
    edited.description = "edited".to_owned();
    edited.tags = vec!["us".to_owned()];
    edited.tier = Tier::Development;
    edited.install_browser_tools = false;
    edited.policy = default_policy(Tier::Development);
    edited.scope = Scope::Shared;
    store.update_environment(&edited).await.expect("update");
    let read = store
        .environment("env_a")
        .await
        .expect("read")
        .expect("alpha");
    assert_eq!(read.scope, alpha.scope, "the scope is not user-editable");
    edited.scope = alpha.scope.clone();
    assert_eq!(read, edited);

    let mut renamed = blank.clone();
    renamed.name = "alpha".to_owned();
    let clash = store.update_environment(&renamed).await;
    assert!(matches!(clash, Err(StoreError::NameTaken(_))), "{clash:?}");
    let missing = store
        .update_environment(&environment("env_x", "x", 0))
        .await;
    assert!(matches!(missing, Err(StoreError::NotFound)), "{missing:?}");

    let filled = store
        .fill_blank_name("env_b", "alpha", "env_b-host")
        .await
        .expect("fill");
    assert_eq!(filled, "env_b-host", "the fallback, as alpha is taken");
    let kept = store
        .fill_blank_name("env_a", "other", "other-2")
        .await
        .expect("fill");
    assert_eq!(kept, "alpha", "a name that is not blank stays");
    let missing = store.fill_blank_name("env_x", "x", "y").await;
    assert!(matches!(missing, Err(StoreError::NotFound)), "{missing:?}");

    store
        .record_seen("env_b", at(100), &runner("host-b"))
        .await
        .expect("seen");
    store.record_seen_batch(&[]).await.expect("an empty batch");
    store
        .record_seen_batch(&[
            SeenRecord {
                environment_id: "env_a".to_owned(),
                at: at(200),
                runner: runner("host-a"),
            },
            SeenRecord {
                environment_id: "env_c".to_owned(),
                at: at(201),
                runner: runner("host-c"),
            },
        ])
        .await
        .expect("a batch");
    for (id, seen, host) in [
        ("env_a", 200, "host-a"),
        ("env_b", 100, "host-b"),
        ("env_c", 201, "host-c"),
    ] {
        let read = store.environment(id).await.expect("read").expect(id);
        assert_eq!(read.last_seen, Some(at(seen)), "{id}");
        assert_eq!(read.runner, Some(runner(host)), "{id}");
    }

    assert!(store.delete_environment("env_c").await.expect("delete"));
    assert!(!store.delete_environment("env_c").await.expect("again"));
}

async fn tokens(store: &dyn Store) {
    assert_eq!(store.current_token("env_a").await.expect("read"), None);
    let first = token("tok_1", "env_a", 50);
    let replaced = store.rotate_token(&first, at(60)).await.expect("first");
    assert!(!replaced, "no older token");
    // The same second: the newer token is the one inserted last.
    let second = token("tok_0", "env_a", 50);
    let replaced = store.rotate_token(&second, at(60)).await.expect("second");
    assert!(replaced);
    assert_eq!(
        store.current_token("env_a").await.expect("read"),
        Some(second.clone())
    );
    let old = store
        .token_by_hash("hash-of-tok_1")
        .await
        .expect("read")
        .expect("the first token");
    assert_eq!(old.valid_until, Some(at(60)), "stops when told");
    assert_eq!(store.token_by_hash("hash-of-x").await.expect("read"), None);

    // A single-use token is claimed once, by whoever comes first.
    let single = token("tok_s", "env_b", 50);
    store.rotate_token(&single, at(60)).await.expect("single");
    assert!(store.claim_token("tok_s", at(65)).await.expect("claim"));
    assert!(!store.claim_token("tok_s", at(66)).await.expect("again"));
    assert_eq!(
        store
            .token_by_hash("hash-of-tok_s")
            .await
            .expect("read")
            .expect("token")
            .last_used_at,
        Some(at(65))
    );
    store.revoke_tokens("env_b").await.expect("revoke");

    store.touch_token("tok_0", at(70)).await.expect("touch");
    let used = store
        .token_by_hash("hash-of-tok_0")
        .await
        .expect("read")
        .expect("the second token");
    assert_eq!(used.last_used_at, Some(at(70)));

    assert_eq!(store.revoke_tokens("env_a").await.expect("revoke"), 2);
    assert_eq!(store.current_token("env_a").await.expect("read"), None);
    assert_eq!(store.revoke_tokens("env_a").await.expect("again"), 0);
}

fn lease(epoch: u64, heartbeat: &str, presence: Option<&str>) -> LeaseRefresh {
    LeaseRefresh {
        environment_id: "env_a".to_owned(),
        epoch,
        heartbeat: heartbeat.to_owned(),
        presence: presence.map(str::to_owned),
        seen: None,
    }
}

async fn sessions(store: &dyn Store) {
    assert_eq!(store.session("env_a").await.expect("read"), None);
    let first = store
        .claim_session("env_a", "relay-1", "s1", r#"{"tools":[]}"#, at(300))
        .await
        .expect("claim");
    assert_eq!(first, 1);
    let second = store
        .claim_session("env_a", "relay-2", "s2", r#"{"tools":["git"]}"#, at(301))
        .await
        .expect("claim again");
    assert_eq!(second, 2, "the epoch only grows");
    let session = store
        .session("env_a")
        .await
        .expect("read")
        .expect("a session");
    assert_eq!(
        (
            session.epoch,
            session.holder.as_deref(),
            session.session_id.as_str()
        ),
        (2, Some("relay-2"), "s2")
    );
    assert_eq!(session.heartbeat, "{}");
    assert_eq!(session.refreshed_at, at(301));

    assert!(store
        .refresh_sessions("relay-2", &[], at(302))
        .await
        .expect("nothing to refresh")
        .is_empty());
    let lost = store
        .refresh_sessions("relay-1", &[lease(1, "{}", None)], at(302))
        .await
        .expect("refresh of a lost lease");
    assert_eq!(lost, ["env_a"], "a newer epoch took it over");

    let mut refresh = lease(2, r#"{"load":1}"#, Some(r#"{"tools":["helm"]}"#));
    refresh.seen = Some((at(303), runner("host-2")));
    let lost = store
        .refresh_sessions("relay-2", &[refresh], at(304))
        .await
        .expect("refresh");
    assert!(lost.is_empty(), "{lost:?}");
    let lost = store
        .refresh_sessions("relay-2", &[lease(2, r#"{"load":2}"#, None)], at(305))
        .await
        .expect("refresh without a new presence");
    assert!(lost.is_empty(), "{lost:?}");
    let session = store
        .session("env_a")
        .await
        .expect("read")
        .expect("a session");
    assert_eq!(session.heartbeat, r#"{"load":2}"#);
    assert_eq!(session.presence, r#"{"tools":["helm"]}"#, "kept");
    assert_eq!(session.refreshed_at, at(305));
    let environment = store
        .environment("env_a")
        .await
        .expect("read")
        .expect("alpha");
    assert_eq!(environment.last_seen, Some(at(303)));
    assert_eq!(environment.runner, Some(runner("host-2")));

    store
        .release_session("env_a", 1)
        .await
        .expect("an old epoch");
    let session = store
        .session("env_a")
        .await
        .expect("read")
        .expect("session");
    assert_eq!(session.holder.as_deref(), Some("relay-2"), "not released");
    store.release_session("env_a", 2).await.expect("release");
    let session = store
        .session("env_a")
        .await
        .expect("read")
        .expect("session");
    assert_eq!(session.holder, None);
    let lost = store
        .refresh_sessions("relay-2", &[lease(2, "{}", None)], at(306))
        .await
        .expect("refresh after release");
    assert_eq!(lost, ["env_a"]);
}

async fn invocations(store: &dyn Store) {
    let begun = store
        .begin_invocation("call-1", "env_a", "shell", at(400))
        .await
        .expect("begin");
    assert_eq!(begun, None, "a new entry");
    let again = store
        .begin_invocation("call-1", "env_a", "git", at(401))
        .await
        .expect("begin again")
        .expect("the existing entry");
    assert_eq!(
        (again.state, again.tool_name.as_str(), again.created_at),
        (InvocationState::Pending, "shell", at(400))
    );
    assert_eq!(again.settled(), store::Settled::Running);

    store
        .forget_pending_invocation("call-1")
        .await
        .expect("forget");
    assert_eq!(store.invocation("call-1").await.expect("read"), None);
    let begun = store
        .begin_invocation("call-1", "env_a", "shell", at(402))
        .await
        .expect("begin after forgetting");
    assert_eq!(begun, None);
    store
        .begin_invocation("call-2", "env_a", "shell", at(402))
        .await
        .expect("another");

    let done = InvocationRecord {
        call_id: "call-1".to_owned(),
        environment_id: "env_a".to_owned(),
        tool_name: String::new(),
        state: InvocationState::Done,
        epoch: Some(2),
        created_at: at(402),
        finished_at: Some(at(410)),
        result: json!({"stdout": "hi"}),
        exit_code: Some(3),
        error: Some("exit 3".to_owned()),
        error_code: Some("some_kind".to_owned()),
    };
    store
        .write_journal(&[JournalWrite {
            entry: done.clone(),
            create: false,
        }])
        .await
        .expect("done");
    let read = store
        .invocation("call-1")
        .await
        .expect("read")
        .expect("call-1");
    let mut expected = done;
    expected.tool_name = "shell".to_owned();
    assert_eq!(read, expected);
    match read.settled() {
        store::Settled::Answered(result) => {
            assert_eq!(result.result, json!({"stdout": "hi"}));
            assert_eq!(result.error_code.as_deref(), Some("some_kind"));
        }
        other => panic!("a done entry is answered: {other:?}"),
    }
    store
        .forget_pending_invocation("call-1")
        .await
        .expect("forget a done call");
    assert!(
        store.invocation("call-1").await.expect("read").is_some(),
        "only a pending entry is forgotten"
    );

    // One batch of both kinds (on PostgreSQL, two statements in one
    // transaction): a new entry, a step back and a step naming another
    // environment, which both leave their entry as it was.
    let step = |call_id: &str, environment_id: &str, create: bool| JournalWrite {
        entry: InvocationRecord {
            call_id: call_id.to_owned(),
            environment_id: environment_id.to_owned(),
            tool_name: "git".to_owned(),
            state: InvocationState::Dispatched,
            epoch: Some(3),
            created_at: at(420),
            finished_at: None,
            result: serde_json::Value::Null,
            exit_code: None,
            error: None,
            error_code: None,
        },
        create,
    };
    store
        .write_journal(&[
            step("call-3", "env_a", true),
            step("call-1", "env_a", false),
            step("call-2", "env_b", false),
        ])
        .await
        .expect("a mixed batch");
    let created = store
        .invocation("call-3")
        .await
        .expect("read")
        .expect("call-3");
    assert_eq!(
        (created.state, created.tool_name.as_str(), created.epoch),
        (InvocationState::Dispatched, "git", Some(3))
    );
    let kept = store.invocation("call-1").await.expect("read");
    assert_eq!(
        kept.map(|entry| entry.state),
        Some(InvocationState::Done),
        "never back"
    );
    let other = store
        .invocation("call-2")
        .await
        .expect("read")
        .expect("call-2");
    assert_eq!(
        (other.state, other.environment_id.as_str(), other.epoch),
        (InvocationState::Pending, "env_a", None),
        "another environment's step is not applied"
    );

    // The journal's size counts results; the oldest finished go first.
    let (before, finished) = store.journal_size().await.expect("size");
    assert!(finished >= 1, "{finished}");
    assert!(before >= r#"{"stdout":"hi"}"#.len() as u64, "{before}");
    let mut later = expected.clone();
    later.call_id = "call-9".to_owned();
    later.finished_at = Some(at(430));
    later.result = json!({ "stdout": "x".repeat(1000) });
    store
        .write_journal(&[JournalWrite {
            entry: later,
            create: true,
        }])
        .await
        .expect("a later call");
    assert!(store.journal_size().await.expect("size").0 >= before + 1000);
    assert_eq!(store.prune_oldest_invocations(1).await.expect("oldest"), 1);
    assert_eq!(
        store.invocation("call-1").await.expect("read"),
        None,
        "the first to finish went first"
    );
    assert!(store.invocation("call-9").await.expect("read").is_some());
    assert!(
        store.invocation("call-2").await.expect("read").is_some(),
        "an unfinished call is never pruned for size"
    );
    assert_eq!(
        store.prune_oldest_invocations(10).await.expect("the rest"),
        1
    );
    assert_eq!(store.prune_oldest_invocations(10).await.expect("none"), 0);
    store
        .write_journal(&[JournalWrite {
            entry: expected.clone(),
            create: true,
        }])
        .await
        .expect("call-1 again");

    assert_eq!(store.prune_invocations(at(410)).await.expect("prune"), 0);
    assert_eq!(store.prune_invocations(at(411)).await.expect("prune"), 1);
    assert_eq!(store.invocation("call-1").await.expect("read"), None);
    assert!(
        store.invocation("call-2").await.expect("read").is_some(),
        "an entry not done stays"
    );
}

/// Deleting an environment takes its tokens and session with it.
async fn deletion_cascades(store: &dyn Store) {
    store
        .rotate_token(&token("tok_9", "env_a", 500), at(500))
        .await
        .expect("a token");
    assert!(store.delete_environment("env_a").await.expect("delete"));
    assert_eq!(store.session("env_a").await.expect("read"), None);
    assert_eq!(
        store.token_by_hash("hash-of-tok_9").await.expect("read"),
        None
    );
}

fn approval(id: &str, call_id: &str, requested: i64) -> ApprovalRecord {
    let args = json!({"command": "deploy", "env": {"TOKEN": "secret"}});
    ApprovalRecord {
        id: id.to_owned(),
        call_id: call_id.to_owned(),
        stored_status: ApprovalStatus::Pending,
        environment_id: "env_a".to_owned(),
        environment_name: "box".to_owned(),
        session_id: Some("ses_1".to_owned()),
        tool: "shell".to_owned(),
        call_sha256: approvals::call_hash("env_a", "shell", &args, 60, call_id),
        args,
        timeout_s: 60,
        rule: "approval for shell".to_owned(),
        requested_by: MemberName {
            id: "mem_ci".to_owned(),
            name: "ci".to_owned(),
        },
        requested_at: at(requested),
        expires_at: at(requested + 600),
        decided_by: None,
        decided_at: None,
        comment: None,
        outcome: None,
        notification: Some(Notification {
            state: DeliveryState::Pending,
            attempts: 0,
            last_error: None,
        }),
    }
}

async fn approvals(store: &dyn Store) {
    let first = approval("apr_1", "call-1", 10);
    assert_eq!(store.insert_approval(&first).await.expect("insert"), first);
    // The same call id again finds the first approval.
    let again = approval("apr_other", "call-1", 11);
    assert_eq!(store.insert_approval(&again).await.expect("insert"), first);
    assert_eq!(store.approval("apr_other").await.expect("read"), None);
    let second = approval("apr_2", "call-2", 20);
    store.insert_approval(&second).await.expect("insert");
    assert_eq!(
        store.approval("apr_1").await.expect("read"),
        Some(first.clone())
    );
    assert!(first.hash_matches());

    let ids = |list: Vec<ApprovalRecord>| list.into_iter().map(|a| a.id).collect::<Vec<_>>();
    let list = |status, now| store.list_approvals(status, at(now), 10);
    assert_eq!(ids(list(None, 30).await.expect("list")), ["apr_2", "apr_1"]);
    assert_eq!(
        ids(list(Some(ApprovalStatus::Pending), 615)
            .await
            .expect("list")),
        ["apr_2"],
        "apr_1 expired at 610"
    );
    assert_eq!(
        ids(list(Some(ApprovalStatus::Expired), 615)
            .await
            .expect("list")),
        ["apr_1"]
    );

    let by = MemberName {
        id: "mem_ops".to_owned(),
        name: "ops".to_owned(),
    };
    let masked = json!({"command": "deploy", "env": {"TOKEN": "***"}});
    let decide = |id: &'static str, decision, at_s| DecidedApproval {
        id,
        decision,
        by: &by,
        at: at(at_s),
        comment: Some("ok"),
        args: &masked,
    };
    // Expired: nobody decides it.
    assert!(!store
        .decide_approval(&decide("apr_1", Decision::Approve, 611))
        .await
        .expect("decide"));
    // Exactly one decision wins.
    assert!(store
        .decide_approval(&decide("apr_2", Decision::Approve, 30))
        .await
        .expect("decide"));
    assert!(!store
        .decide_approval(&decide("apr_2", Decision::Approve, 31))
        .await
        .expect("decide"));
    assert!(!store
        .decide_approval(&decide("apr_2", Decision::Deny, 31))
        .await
        .expect("decide"));
    let decided = store.approval("apr_2").await.expect("read").expect("kept");
    assert_eq!(decided.stored_status, ApprovalStatus::Approved);
    assert_eq!(decided.decided_by, Some(by.clone()));
    assert_eq!(decided.decided_at, Some(at(30)));
    assert_eq!(decided.comment.as_deref(), Some("ok"));
    assert_eq!(decided.args, masked);

    let outcome = ApprovalOutcome {
        result: json!({"stdout": "done"}),
        exit_code: Some(0),
        error: None,
        error_code: None,
        finished_at: "2026-01-01T00:00:00Z".to_owned(),
    };
    store
        .finish_approval("apr_2", &outcome)
        .await
        .expect("finish");
    // The first end recorded stays.
    let later = ApprovalOutcome {
        exit_code: Some(9),
        ..outcome.clone()
    };
    store
        .finish_approval("apr_2", &later)
        .await
        .expect("finish");
    let delivered = Notification {
        state: DeliveryState::Failed,
        attempts: 6,
        last_error: Some("the receiver answered 500".to_owned()),
    };
    store
        .set_approval_notification("apr_2", &delivered)
        .await
        .expect("notification");
    let finished = store.approval("apr_2").await.expect("read").expect("kept");
    assert_eq!(finished.outcome, Some(outcome));
    assert_eq!(finished.notification, Some(delivered));

    assert_eq!(store.prune_approvals(at(15)).await.expect("prune"), 1);
    assert_eq!(store.approval("apr_1").await.expect("read"), None);
    assert!(store.approval("apr_2").await.expect("read").is_some());
}

/// What the store appends: the records' borrowed views.
fn views(records: &[AuditRecord]) -> Vec<AuditView<'_>> {
    records.iter().map(AuditRecord::view).collect()
}

/// The audit log: appends chain in order (across calls), filters and
/// cursors in both orders, the head follows, pruning removes a prefix.
async fn audit_log(store: &dyn Store) {
    let head = store.audit_head().await.expect("head");
    assert_eq!((head.seq, head.pruned_through), (0, 0));
    assert_eq!(head.hash, chain::GENESIS);
    let record = |seconds: i64, action: AuditAction, environment: Option<&str>| {
        let mut record = AuditRecord::new(
            at(seconds),
            AuditActor {
                member_id: Some("mem_ada".to_owned()),
                name: Some("ada".to_owned()),
                kind: Some("person".to_owned()),
                key_id: Some("0123456789ab".to_owned()),
                client: Some("test/1".to_owned()),
                source: Some("127.0.0.1".to_owned()),
            },
            action,
        );
        record.environment_id = environment.map(str::to_owned);
        record.tool = Some("shell".to_owned());
        record.exit_code = Some(-1);
        record.duration_ms = Some(12);
        record.bytes_out = Some(3_000_000_000);
        record.args = Some(r#"{"a":1}"#.to_owned());
        record
    };
    let first = vec![
        record(0, AuditAction::EnvironmentCreate, Some("env_a")),
        record(1, AuditAction::ToolInvoke, Some("env_a")),
    ];
    store.append_audit(&views(&first)).await.expect("append");
    let mut denied = record(2, AuditAction::ToolInvoke, Some("env_b"));
    denied.decision = AuditDecision::Denied;
    denied.code = Some("tool_not_allowed".to_owned());
    store
        .append_audit(&views(&[
            denied.clone(),
            record(3, AuditAction::AuthFailed, None),
        ]))
        .await
        .expect("append");

    let all = store
        .audit_entries(&AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .expect("read");
    assert_eq!(all.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(all[0].record, first[0], "a row reads back as written");
    assert_eq!(all[2].record, denied);
    assert_eq!(all[0].prev_hash, chain::GENESIS);
    let mut verifier = chain::Verifier::default();
    for entry in &all {
        verifier.check(entry).expect("the chain links");
    }
    let head = store.audit_head().await.expect("head");
    assert_eq!((head.seq, head.hash.as_str()), (4, all[3].hash.as_str()));
    verifier
        .finish(head.seq, &head.hash)
        .expect("head is the last row");

    let query = |query: AuditQuery| async move {
        store
            .audit_entries(&AuditQuery { limit: 10, ..query })
            .await
            .expect("read")
            .iter()
            .map(|e| e.seq)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        query(AuditQuery {
            environment_id: Some("env_a".to_owned()),
            ..AuditQuery::default()
        })
        .await,
        [1, 2]
    );
    assert_eq!(
        query(AuditQuery {
            action: Some(AuditAction::ToolInvoke),
            actor_id: Some("mem_ada".to_owned()),
            tool: Some("shell".to_owned()),
            ..AuditQuery::default()
        })
        .await,
        [2, 3]
    );
    assert_eq!(
        query(AuditQuery {
            since_ms: Some(at(1).unix_timestamp() * 1000),
            until_ms: Some(at(3).unix_timestamp() * 1000),
            ..AuditQuery::default()
        })
        .await,
        [2, 3]
    );
    assert_eq!(
        query(AuditQuery {
            cursor: Some(2),
            ..AuditQuery::default()
        })
        .await,
        [3, 4]
    );
    assert_eq!(
        query(AuditQuery {
            cursor: Some(3),
            descending: true,
            ..AuditQuery::default()
        })
        .await,
        [2, 1]
    );
    assert!(query(AuditQuery {
        session_id: Some("ses_none".to_owned()),
        ..AuditQuery::default()
    })
    .await
    .is_empty());

    // Entries before second 2 go, as a prefix; the rest still verifies.
    assert_eq!(store.prune_audit(at(2)).await.expect("prune"), 2);
    assert_eq!(store.prune_audit(at(2)).await.expect("prune"), 0);
    let head = store.audit_head().await.expect("head");
    assert_eq!((head.seq, head.pruned_through), (4, 2));
    let rest = store
        .audit_entries(&AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .expect("read");
    let mut verifier = chain::Verifier::after_pruning(head.pruned_through);
    for entry in &rest {
        verifier.check(entry).expect("the rest links");
    }
    verifier.finish(head.seq, &head.hash).expect("intact");
    // Appends go on after pruning.
    store
        .append_audit(&[record(5, AuditAction::SessionEnd, None).view()])
        .await
        .expect("append");
    assert_eq!(store.audit_head().await.expect("head").seq, 5);
}

async fn templates(store: &dyn Store) {
    let mut python = TemplateRecord {
        id: "tpl_1".into(),
        name: "python".into(),
        description: "with pip".into(),
        scope: Scope::Team("ops".into()),
        network: Network::Allowlist,
        allowed_domains: vec!["pypi.org".into()],
        env_text: "A=1\nB=\"two\nlines\"\n".into(),
        entries: Vec::new(),
        setup_script: "pip install x\n".into(),
        idle_timeout_s: 900,
        max_lifetime_s: 28_800,
        created_by: MemberName {
            id: "mem_1".into(),
            name: "ada".into(),
        },
        created_at: at(10),
        updated_at: at(10),
    };
    python.check().expect("valid");
    store.insert_template(&python).await.expect("insert");
    let read = store.template("tpl_1").await.expect("read").expect("there");
    assert_eq!(read, python);
    assert_eq!(read.env()[1].value, "two\nlines");
    assert_eq!(
        store.template_by_name("python").await.expect("read"),
        Some(python.clone())
    );
    assert_eq!(store.template("python").await.expect("read"), None);
    let mut clash = python.clone();
    clash.id = "tpl_2".into();
    assert!(matches!(
        store.insert_template(&clash).await,
        Err(StoreError::TemplateNameTaken(name)) if name == "python"
    ));
    clash.name = "base".into();
    clash.scope = Scope::Shared;
    store.insert_template(&clash).await.expect("another");
    let names: Vec<String> = store
        .list_templates()
        .await
        .expect("list")
        .into_iter()
        .map(|template| template.name)
        .collect();
    assert_eq!(names, ["base", "python"]);
    python.name = "base".into();
    assert!(matches!(
        store.update_template(&python).await,
        Err(StoreError::TemplateNameTaken(_))
    ));
    python.name = "py".into();
    python.network = Network::None;
    python.allowed_domains.clear();
    python.updated_at = at(20);
    store.update_template(&python).await.expect("update");
    assert_eq!(
        store.template("tpl_1").await.expect("read"),
        Some(python.clone())
    );
    assert!(store.delete_template("tpl_1").await.expect("delete"));
    assert!(!store.delete_template("tpl_1").await.expect("again"));
    assert!(matches!(
        store.update_template(&python).await,
        Err(StoreError::NotFound)
    ));
    assert!(store.delete_template("tpl_2").await.expect("delete"));
}

async fn the_store_keeps_its_contract(store: &dyn Store) {
    members_and_teams(store).await;
    templates(store).await;
    environments(store).await;
    tokens(store).await;
    sessions(store).await;
    invocations(store).await;
    work_sessions(store).await;
    sandboxes(store).await;
    approvals(store).await;
    deletion_cascades(store).await;
    audit_log(store).await;
}

#[tokio::test]
async fn the_sqlite_store_keeps_the_contract() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("relay.db").display());
    let store = store::open(&url).await.expect("open SQLite");
    assert!(!store.shared());
    the_store_keeps_its_contract(store.as_ref()).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL (run by .ci/run with --include-ignored)"]
async fn the_postgres_store_keeps_the_contract() {
    let database = crate::cluster::Database::create().await;
    let store = store::open(&database.url()).await.expect("open PostgreSQL");
    assert!(store.shared());
    the_store_keeps_its_contract(store.as_ref()).await;
}

/// Several relays on one PostgreSQL database append at the same time: the
/// head row's lock keeps one chain, without gaps or forks.
#[tokio::test]
#[ignore = "needs PostgreSQL (run by .ci/run with --include-ignored)"]
async fn relays_sharing_postgres_keep_one_audit_chain() {
    let database = crate::cluster::Database::create().await;
    let mut writers = Vec::new();
    for relay in 0..3 {
        let store = store::open(&database.url()).await.expect("open PostgreSQL");
        writers.push(tokio::spawn(async move {
            for batch in 0..10 {
                let records: Vec<AuditRecord> = (0..5)
                    .map(|i| {
                        let mut record = AuditRecord::new(
                            at(batch),
                            AuditActor::default(),
                            AuditAction::ToolInvoke,
                        );
                        record.target = Some(format!("relay{relay}-{batch}-{i}"));
                        record
                    })
                    .collect();
                store.append_audit(&views(&records)).await.expect("append");
            }
        }));
    }
    for writer in writers {
        writer.await.expect("joined");
    }
    let store = store::open(&database.url()).await.expect("open PostgreSQL");
    let all = store
        .audit_entries(&AuditQuery {
            limit: 1000,
            ..AuditQuery::default()
        })
        .await
        .expect("read");
    assert_eq!(all.len(), 150);
    let mut verifier = chain::Verifier::default();
    for entry in &all {
        verifier.check(entry).expect("one chain");
    }
    let head = store.audit_head().await.expect("head");
    verifier
        .finish(head.seq, &head.hash)
        .expect("head is the last row");
    // A batch stays together: the lock is held for its whole append.
    for batch in all.chunks(5) {
        let prefix = |e: &runner_relay::audit::StoredAudit| {
            e.record
                .target
                .as_deref()
                .unwrap_or("")
                .rsplit_once('-')
                .map(|(p, _)| p.to_owned())
        };
        assert!(
            batch.iter().all(|e| prefix(e) == prefix(&batch[0])),
            "{batch:?}"
        );
    }
}
