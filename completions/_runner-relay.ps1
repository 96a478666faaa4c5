
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'runner-relay' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'runner-relay'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'runner-relay' {
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--worker-threads', '--worker-threads', [CompletionResultType]::ParameterName, 'Threads that serve the API and the runners'' sockets (default: one per CPU). Fewer leave more of a small host to other processes')
            [CompletionResult]::new('--access-log', '--access-log', [CompletionResultType]::ParameterName, 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay''s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald''s rate limit, which then drops the warnings that matter')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Run the relay')
            [CompletionResult]::new('admin', 'admin', [CompletionResultType]::ParameterValue, 'Manage members, API keys and teams in the relay''s store')
            [CompletionResult]::new('dev', 'dev', [CompletionResultType]::ParameterValue, 'Start a relay and a local runner in one command, for development')
            [CompletionResult]::new('generate-assets', 'generate-assets', [CompletionResultType]::ParameterValue, 'Regenerate completions/ and man/ from these definitions (for developers)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner-relay;serve' {
            [CompletionResult]::new('--listen', '--listen', [CompletionResultType]::ParameterName, 'Address to listen on')
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'Directory for the relay''s data (default: the platform data directory)')
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database URL (default: sqlite://<data-dir>/relay.db)')
            [CompletionResult]::new('--nats-url', '--nats-url', [CompletionResultType]::ParameterName, 'NATS server routing calls between relays (shared mode; needs a postgres:// database URL). Without it the relay runs alone')
            [CompletionResult]::new('--nats-subject-prefix', '--nats-subject-prefix', [CompletionResultType]::ParameterName, 'First token of every NATS subject this deployment uses')
            [CompletionResult]::new('--instance-id', '--instance-id', [CompletionResultType]::ParameterName, 'This relay instance''s id in shared mode (default: random per start)')
            [CompletionResult]::new('--relay-protocol', '--relay-protocol', [CompletionResultType]::ParameterName, 'Newest relay-to-relay message version to speak (default: this build''s). Lower only to stand in for an older build when rehearsing a rolling upgrade (docs/relay.md)')
            [CompletionResult]::new('--drain-grace', '--drain-grace', [CompletionResultType]::ParameterName, 'Seconds a stopping relay (SIGTERM) gives calls in flight before it sends its runners elsewhere')
            [CompletionResult]::new('--heartbeat-interval', '--heartbeat-interval', [CompletionResultType]::ParameterName, 'Seconds between a runner''s heartbeats (asked in `welcome`); a runner silent for six of them is dropped and its calls fail. Hidden: for tests of a stopped runner, which would otherwise wait 90 s')
            [CompletionResult]::new('--stream-keep-alive', '--stream-keep-alive', [CompletionResultType]::ParameterName, 'Seconds of silence after which a streamed call''s body carries a keep-alive frame (SSE: a comment line), so proxies in front of the relay keep the connection. Keep it under their idle timeout')
            [CompletionResult]::new('--output-stall-timeout', '--output-stall-timeout', [CompletionResultType]::ParameterName, 'Seconds a streamed call''s output waits for a caller that reads none of it before the call is cancelled (the runner''s socket waits meanwhile, so this bounds how long one slow reader holds it)')
            [CompletionResult]::new('--session-idle-timeout', '--session-idle-timeout', [CompletionResultType]::ParameterName, 'Seconds a work session (`POST /sessions`) may stay unused before it expires; its calls then fail with `session_expired` (410). Counted from the last call, with up to 10 s of grace')
            [CompletionResult]::new('--approval-ttl', '--approval-ttl', [CompletionResultType]::ParameterName, 'Seconds an approval (a call to a tool that needs a person''s approval, asked with `"on_approval": "wait"`) stays open; one not decided by then expires, which counts as denied')
            [CompletionResult]::new('--approval-webhook', '--approval-webhook', [CompletionResultType]::ParameterName, 'Post each new approval to this URL (JSON a chat tool can post, signed with HMAC-SHA256: docs/approvals.md). Needs --approval-webhook-secret-file. A chat webhook URL holds a token: set it in the environment (a 0600 env file), not on the command line; the relay never logs more than its origin')
            [CompletionResult]::new('--approval-webhook-secret-file', '--approval-webhook-secret-file', [CompletionResultType]::ParameterName, 'File holding the webhook''s signing secret (at least 16 characters; readable by its owner only, else the relay refuses to start)')
            [CompletionResult]::new('--public-url', '--public-url', [CompletionResultType]::ParameterName, 'The URL people and runners reach this relay at (e.g. behind a proxy), for the links the relay sends out (approval webhooks) and the console''s setup commands. An `https` URL makes the console''s cookie `Secure` (TLS ended at the proxy)')
            [CompletionResult]::new('--max-handshakes', '--max-handshakes', [CompletionResultType]::ParameterName, 'Runner connections allowed between their request and their `welcome` at once; more wait up to 5 s for a slot (at most 64 per slot), else are answered 503 with Retry-After (runners retry with backoff), so a reconnect storm never queues work the runners'' timeouts would throw away')
            [CompletionResult]::new('--releases-dir', '--releases-dir', [CompletionResultType]::ParameterName, 'Serve a runner release mirror from DIR (`install.sh`, `releases/latest`, `releases/download/<version>/…`) and tell older runners in heartbeat answers that a newer version exists')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Serve HTTPS with this PEM certificate chain (needs --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'The PEM private key of --tls-cert')
            [CompletionResult]::new('--audit-retention-days', '--audit-retention-days', [CompletionResultType]::ParameterName, 'Days audit entries are kept; older ones are pruned daily (the rest still verifies)')
            [CompletionResult]::new('--journal-result-max-kb', '--journal-result-max-kb', [CompletionResultType]::ParameterName, 'KiB of each call''s result the call journal keeps (what `GET /invocations/{call_id}` and a repeated `call_id` get); the end of longer output is kept, marked. The caller that waited got it all')
            [CompletionResult]::new('--journal-max-mb', '--journal-max-mb', [CompletionResultType]::ParameterName, 'MiB of results the call journal holds at most: past it, the oldest finished calls are pruned (checked every 5 min) before their 7 days')
            [CompletionResult]::new('--metrics-addr', '--metrics-addr', [CompletionResultType]::ParameterName, 'Serve `GET /metrics` without a credential on its own listener, e.g. 127.0.0.1:9464. Only a loopback address, unless --metrics-addr-public')
            [CompletionResult]::new('--metrics-token-file', '--metrics-token-file', [CompletionResultType]::ParameterName, 'Serve `GET /metrics` on the API port too, to requests bearing this file''s content as `Authorization: Bearer` (at least 32 characters, e.g. `openssl rand -hex 32`; the file must not be readable by group or others). A file, so the secret is never in argv')
            [CompletionResult]::new('--mcp-max-environments', '--mcp-max-environments', [CompletionResultType]::ParameterName, 'Above this many usable environments, `/mcp` lists the compact `list_tools` and `run_tool` instead of every environment''s tools')
            [CompletionResult]::new('--mcp-allowed-host', '--mcp-allowed-host', [CompletionResultType]::ParameterName, 'Accept `/mcp` requests only with this `Host` (repeatable, or comma-separated in the environment variable; `host` or `host:port`). Default: any host; the API key is what lets a request in')
            [CompletionResult]::new('--mcp-allowed-origin', '--mcp-allowed-origin', [CompletionResultType]::ParameterName, 'Accept `/mcp` requests from browser pages of this origin (repeatable; e.g. `https://console.example.com`). Default: none, so a page cannot call `/mcp` with a key it holds')
            [CompletionResult]::new('--console-docker-image', '--console-docker-image', [CompletionResultType]::ParameterName, 'The image the console''s setup guide tells Docker to run (built from installers/Dockerfile). Default: runner:<this relay''s version>')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--worker-threads', '--worker-threads', [CompletionResultType]::ParameterName, 'Threads that serve the API and the runners'' sockets (default: one per CPU). Fewer leave more of a small host to other processes')
            [CompletionResult]::new('--no-audit', '--no-audit', [CompletionResultType]::ParameterName, 'Record nothing in the audit log (who invoked what, token, member and environment changes, failed authentications). On by default; see docs/audit.md')
            [CompletionResult]::new('--audit-arguments', '--audit-arguments', [CompletionResultType]::ParameterName, 'Keep each call''s arguments in its audit entry (the values of the `env` argument masked), not only their SHA-256 digest')
            [CompletionResult]::new('--metrics-addr-public', '--metrics-addr-public', [CompletionResultType]::ParameterName, 'Let --metrics-addr listen beyond this machine (anyone who reaches it reads the metrics: no ids or secrets, but counts of your traffic)')
            [CompletionResult]::new('--no-metrics', '--no-metrics', [CompletionResultType]::ParameterName, 'Record no metrics (every recording is skipped; `/metrics` answers 404)')
            [CompletionResult]::new('--no-mcp', '--no-mcp', [CompletionResultType]::ParameterName, 'Do not serve `/mcp` (the relay as an MCP server; docs/mcp.md)')
            [CompletionResult]::new('--mcp-no-fast-path', '--mcp-no-fast-path', [CompletionResultType]::ParameterName, 'Serve every MCP request through the SDK''s per-request service, even plain `tools/call`s (for comparing the two paths)')
            [CompletionResult]::new('--no-console', '--no-console', [CompletionResultType]::ParameterName, 'Do not serve the web console at `/console` (docs/console.md)')
            [CompletionResult]::new('--access-log', '--access-log', [CompletionResultType]::ParameterName, 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay''s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald''s rate limit, which then drops the warnings that matter')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner-relay;admin' {
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'Directory for the relay''s data (default: the platform data directory)')
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database URL (default: sqlite://<data-dir>/relay.db)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--worker-threads', '--worker-threads', [CompletionResultType]::ParameterName, 'Threads that serve the API and the runners'' sockets (default: one per CPU). Fewer leave more of a small host to other processes')
            [CompletionResult]::new('--create', '--create', [CompletionResultType]::ParameterName, 'Create a new store if there is none at the data dir (or --database-url''s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves')
            [CompletionResult]::new('--access-log', '--access-log', [CompletionResultType]::ParameterName, 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay''s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald''s rate limit, which then drops the warnings that matter')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('create-key', 'create-key', [CompletionResultType]::ParameterValue, 'Create a member with an API key and print the key (alone) on stdout')
            [CompletionResult]::new('add-to-team', 'add-to-team', [CompletionResultType]::ParameterValue, 'Add an existing member to a team (no-op if already in it)')
            [CompletionResult]::new('remove-from-team', 'remove-from-team', [CompletionResultType]::ParameterValue, 'Remove a member from a team')
            [CompletionResult]::new('list-keys', 'list-keys', [CompletionResultType]::ParameterValue, 'List the API keys: each key''s hint (never the key), its member (id, name, kind, organisation admin, teams) and when it was made')
            [CompletionResult]::new('revoke-key', 'revoke-key', [CompletionResultType]::ParameterValue, 'Revoke a member''s API keys: they stop working at once on a relay that is restarted, within 10 s on a running one (it keeps a key it has seen that long). The member, its teams and its audit trail stay; `create-key` makes a new member with a new key. Asks first on a terminal; --yes for scripts')
            [CompletionResult]::new('list-members', 'list-members', [CompletionResultType]::ParameterValue, 'List the members: id, name, kind, organisation admin, teams and how many API keys each holds')
            [CompletionResult]::new('create-team', 'create-team', [CompletionResultType]::ParameterValue, 'Create a team (no-op if it exists)')
            [CompletionResult]::new('audit', 'audit', [CompletionResultType]::ParameterValue, 'The audit log')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner-relay;admin;create-key' {
            [CompletionResult]::new('--team', '--team', [CompletionResultType]::ParameterName, 'Add the member to this team (repeatable; the team must exist)')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'The member''s display name')
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'Directory for the relay''s data (default: the platform data directory)')
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database URL (default: sqlite://<data-dir>/relay.db)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--worker-threads', '--worker-threads', [CompletionResultType]::ParameterName, 'Threads that serve the API and the runners'' sockets (default: one per CPU). Fewer leave more of a small host to other processes')
            [CompletionResult]::new('--admin', '--admin', [CompletionResultType]::ParameterName, 'Make the member an organisation admin')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Make the member an agent (an API client acting for its teams, e.g. a coding agent or a CI pipeline) rather than a person')
            [CompletionResult]::new('--create', '--create', [CompletionResultType]::ParameterName, 'Create a new store if there is none at the data dir (or --database-url''s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves')
            [CompletionResult]::new('--access-log', '--access-log', [CompletionResultType]::ParameterName, 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay''s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald''s rate limit, which then drops the warnings that matter')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner-relay;admin;add-to-team' {
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'Directory for the relay''s data (default: the platform data directory)')
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database URL (default: sqlite://<data-dir>/relay.db)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--worker-threads', '--worker-threads', [CompletionResultType]::ParameterName, 'Threads that serve the API and the runners'' sockets (default: one per CPU). Fewer leave more of a small host to other processes')
            [CompletionResult]::new('--create', '--create', [CompletionResultType]::ParameterName, 'Create a new store if there is none at the data dir (or --database-url''s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves')
            [CompletionResult]::new('--access-log', '--access-log', [CompletionResultType]::ParameterName, 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay''s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald''s rate limit, which then drops the warnings that matter')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner-relay;admin;remove-from-team' {
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'Directory for the relay''s data (default: the platform data directory)')
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database URL (default: sqlite://<data-dir>/relay.db)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--worker-threads', '--worker-threads', [CompletionResultType]::ParameterName, 'Threads that serve the API and the runners'' sockets (default: one per CPU). Fewer leave more of a small host to other processes')
            [CompletionResult]::new('--create', '--create', [CompletionResultType]::ParameterName, 'Create a new store if there is none at the data dir (or --database-url''s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves')
            [CompletionResult]::new('--access-log', '--access-log', [CompletionResultType]::ParameterName, 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay''s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald''s rate limit, which then drops the warnings that matter')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner-relay;admin;list-keys' {
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'Directory for the relay''s data (default: the platform data directory)')
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database URL (default: sqlite://<data-dir>/relay.db)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--worker-threads', '--worker-threads', [CompletionResultType]::ParameterName, 'Threads that serve the API and the runners'' sockets (default: one per CPU). Fewer leave more of a small host to other processes')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON (one array) on stdout')
            [CompletionResult]::new('--create', '--create', [CompletionResultType]::ParameterName, 'Create a new store if there is none at the data dir (or --database-url''s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves')
            [CompletionResult]::new('--access-log', '--access-log', [CompletionResultType]::ParameterName, 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay''s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald''s rate limit, which then drops the warnings that matter')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner-relay;admin;revoke-key' {
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'Directory for the relay''s data (default: the platform data directory)')
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database URL (default: sqlite://<data-dir>/relay.db)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--worker-threads', '--worker-threads', [CompletionResultType]::ParameterName, 'Threads that serve the API and the runners'' sockets (default: one per CPU). Fewer leave more of a small host to other processes')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation')
            [CompletionResult]::new('--create', '--create', [CompletionResultType]::ParameterName, 'Create a new store if there is none at the data dir (or --database-url''s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves')
            [CompletionResult]::new('--access-log', '--access-log', [CompletionResultType]::ParameterName, 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay''s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald''s rate limit, which then drops the warnings that matter')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner-relay;admin;list-members' {
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'Directory for the relay''s data (default: the platform data directory)')
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database URL (default: sqlite://<data-dir>/relay.db)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--worker-threads', '--worker-threads', [CompletionResultType]::ParameterName, 'Threads that serve the API and the runners'' sockets (default: one per CPU). Fewer leave more of a small host to other processes')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON (one array) on stdout')
            [CompletionResult]::new('--create', '--create', [CompletionResultType]::ParameterName, 'Create a new store if there is none at the data dir (or --database-url''s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves')
            [CompletionResult]::new('--access-log', '--access-log', [CompletionResultType]::ParameterName, 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay''s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald''s rate limit, which then drops the warnings that matter')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner-relay;admin;create-team' {
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'Directory for the relay''s data (default: the platform data directory)')
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database URL (default: sqlite://<data-dir>/relay.db)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--worker-threads', '--worker-threads', [CompletionResultType]::ParameterName, 'Threads that serve the API and the runners'' sockets (default: one per CPU). Fewer leave more of a small host to other processes')
            [CompletionResult]::new('--create', '--create', [CompletionResultType]::ParameterName, 'Create a new store if there is none at the data dir (or --database-url''s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves')
            [CompletionResult]::new('--access-log', '--access-log', [CompletionResultType]::ParameterName, 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay''s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald''s rate limit, which then drops the warnings that matter')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner-relay;admin;audit' {
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'Directory for the relay''s data (default: the platform data directory)')
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database URL (default: sqlite://<data-dir>/relay.db)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--worker-threads', '--worker-threads', [CompletionResultType]::ParameterName, 'Threads that serve the API and the runners'' sockets (default: one per CPU). Fewer leave more of a small host to other processes')
            [CompletionResult]::new('--create', '--create', [CompletionResultType]::ParameterName, 'Create a new store if there is none at the data dir (or --database-url''s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves')
            [CompletionResult]::new('--access-log', '--access-log', [CompletionResultType]::ParameterName, 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay''s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald''s rate limit, which then drops the warnings that matter')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Walk the audit log''s hash chain from its oldest entry and check that no entry was changed or deleted. Exits 1 naming the first bad entry (changed row, broken link, missing rows); 0 when intact')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner-relay;admin;audit;verify' {
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'Directory for the relay''s data (default: the platform data directory)')
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database URL (default: sqlite://<data-dir>/relay.db)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--worker-threads', '--worker-threads', [CompletionResultType]::ParameterName, 'Threads that serve the API and the runners'' sockets (default: one per CPU). Fewer leave more of a small host to other processes')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the result as one JSON object on stdout')
            [CompletionResult]::new('--create', '--create', [CompletionResultType]::ParameterName, 'Create a new store if there is none at the data dir (or --database-url''s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves')
            [CompletionResult]::new('--access-log', '--access-log', [CompletionResultType]::ParameterName, 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay''s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald''s rate limit, which then drops the warnings that matter')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner-relay;admin;audit;help' {
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Walk the audit log''s hash chain from its oldest entry and check that no entry was changed or deleted. Exits 1 naming the first bad entry (changed row, broken link, missing rows); 0 when intact')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner-relay;admin;audit;help;verify' {
            break
        }
        'runner-relay;admin;audit;help;help' {
            break
        }
        'runner-relay;admin;help' {
            [CompletionResult]::new('create-key', 'create-key', [CompletionResultType]::ParameterValue, 'Create a member with an API key and print the key (alone) on stdout')
            [CompletionResult]::new('add-to-team', 'add-to-team', [CompletionResultType]::ParameterValue, 'Add an existing member to a team (no-op if already in it)')
            [CompletionResult]::new('remove-from-team', 'remove-from-team', [CompletionResultType]::ParameterValue, 'Remove a member from a team')
            [CompletionResult]::new('list-keys', 'list-keys', [CompletionResultType]::ParameterValue, 'List the API keys: each key''s hint (never the key), its member (id, name, kind, organisation admin, teams) and when it was made')
            [CompletionResult]::new('revoke-key', 'revoke-key', [CompletionResultType]::ParameterValue, 'Revoke a member''s API keys: they stop working at once on a relay that is restarted, within 10 s on a running one (it keeps a key it has seen that long). The member, its teams and its audit trail stay; `create-key` makes a new member with a new key. Asks first on a terminal; --yes for scripts')
            [CompletionResult]::new('list-members', 'list-members', [CompletionResultType]::ParameterValue, 'List the members: id, name, kind, organisation admin, teams and how many API keys each holds')
            [CompletionResult]::new('create-team', 'create-team', [CompletionResultType]::ParameterValue, 'Create a team (no-op if it exists)')
            [CompletionResult]::new('audit', 'audit', [CompletionResultType]::ParameterValue, 'The audit log')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner-relay;admin;help;create-key' {
            break
        }
        'runner-relay;admin;help;add-to-team' {
            break
        }
        'runner-relay;admin;help;remove-from-team' {
            break
        }
        'runner-relay;admin;help;list-keys' {
            break
        }
        'runner-relay;admin;help;revoke-key' {
            break
        }
        'runner-relay;admin;help;list-members' {
            break
        }
        'runner-relay;admin;help;create-team' {
            break
        }
        'runner-relay;admin;help;audit' {
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Walk the audit log''s hash chain from its oldest entry and check that no entry was changed or deleted. Exits 1 naming the first bad entry (changed row, broken link, missing rows); 0 when intact')
            break
        }
        'runner-relay;admin;help;audit;verify' {
            break
        }
        'runner-relay;admin;help;help' {
            break
        }
        'runner-relay;dev' {
            [CompletionResult]::new('--listen', '--listen', [CompletionResultType]::ParameterName, 'Address to listen on')
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'Directory for everything (default: a new temporary directory, kept)')
            [CompletionResult]::new('--runner-bin', '--runner-bin', [CompletionResultType]::ParameterName, 'The `runner` binary (default: next to this binary, else on PATH)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--worker-threads', '--worker-threads', [CompletionResultType]::ParameterName, 'Threads that serve the API and the runners'' sockets (default: one per CPU). Fewer leave more of a small host to other processes')
            [CompletionResult]::new('--no-sandbox-host', '--no-sandbox-host', [CompletionResultType]::ParameterName, 'Do not start a local sandbox host (by default one is started where this machine can isolate sandboxes, so sessions asking for `sandbox` work)')
            [CompletionResult]::new('--access-log', '--access-log', [CompletionResultType]::ParameterName, 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay''s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald''s rate limit, which then drops the warnings that matter')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner-relay;generate-assets' {
            [CompletionResult]::new('--out', '--out', [CompletionResultType]::ParameterName, 'Repository root to write into')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--worker-threads', '--worker-threads', [CompletionResultType]::ParameterName, 'Threads that serve the API and the runners'' sockets (default: one per CPU). Fewer leave more of a small host to other processes')
            [CompletionResult]::new('--access-log', '--access-log', [CompletionResultType]::ParameterName, 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay''s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald''s rate limit, which then drops the warnings that matter')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner-relay;help' {
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Run the relay')
            [CompletionResult]::new('admin', 'admin', [CompletionResultType]::ParameterValue, 'Manage members, API keys and teams in the relay''s store')
            [CompletionResult]::new('dev', 'dev', [CompletionResultType]::ParameterValue, 'Start a relay and a local runner in one command, for development')
            [CompletionResult]::new('generate-assets', 'generate-assets', [CompletionResultType]::ParameterValue, 'Regenerate completions/ and man/ from these definitions (for developers)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner-relay;help;serve' {
            break
        }
        'runner-relay;help;admin' {
            [CompletionResult]::new('create-key', 'create-key', [CompletionResultType]::ParameterValue, 'Create a member with an API key and print the key (alone) on stdout')
            [CompletionResult]::new('add-to-team', 'add-to-team', [CompletionResultType]::ParameterValue, 'Add an existing member to a team (no-op if already in it)')
            [CompletionResult]::new('remove-from-team', 'remove-from-team', [CompletionResultType]::ParameterValue, 'Remove a member from a team')
            [CompletionResult]::new('list-keys', 'list-keys', [CompletionResultType]::ParameterValue, 'List the API keys: each key''s hint (never the key), its member (id, name, kind, organisation admin, teams) and when it was made')
            [CompletionResult]::new('revoke-key', 'revoke-key', [CompletionResultType]::ParameterValue, 'Revoke a member''s API keys: they stop working at once on a relay that is restarted, within 10 s on a running one (it keeps a key it has seen that long). The member, its teams and its audit trail stay; `create-key` makes a new member with a new key. Asks first on a terminal; --yes for scripts')
            [CompletionResult]::new('list-members', 'list-members', [CompletionResultType]::ParameterValue, 'List the members: id, name, kind, organisation admin, teams and how many API keys each holds')
            [CompletionResult]::new('create-team', 'create-team', [CompletionResultType]::ParameterValue, 'Create a team (no-op if it exists)')
            [CompletionResult]::new('audit', 'audit', [CompletionResultType]::ParameterValue, 'The audit log')
            break
        }
        'runner-relay;help;admin;create-key' {
            break
        }
        'runner-relay;help;admin;add-to-team' {
            break
        }
        'runner-relay;help;admin;remove-from-team' {
            break
        }
        'runner-relay;help;admin;list-keys' {
            break
        }
        'runner-relay;help;admin;revoke-key' {
            break
        }
        'runner-relay;help;admin;list-members' {
            break
        }
        'runner-relay;help;admin;create-team' {
            break
        }
        'runner-relay;help;admin;audit' {
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Walk the audit log''s hash chain from its oldest entry and check that no entry was changed or deleted. Exits 1 naming the first bad entry (changed row, broken link, missing rows); 0 when intact')
            break
        }
        'runner-relay;help;admin;audit;verify' {
            break
        }
        'runner-relay;help;dev' {
            break
        }
        'runner-relay;help;generate-assets' {
            break
        }
        'runner-relay;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
