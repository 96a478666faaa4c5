# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_runner_global_optspecs
    string join \n config-dir= state-dir= ca-file= insecure-skip-tls-verify= log-format= h/help V/version
end

function __fish_runner_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_runner_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_runner_using_subcommand
    set -l cmd (__fish_runner_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c runner -n "__fish_runner_needs_command" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_needs_command" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_needs_command" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_needs_command" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_needs_command" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_needs_command" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_needs_command" -f -a "register" -d 'Check a registration token against the relay and store it for `runner run`'
complete -c runner -n "__fish_runner_needs_command" -f -a "unregister" -d 'Remove the stored registration (config and token)'
complete -c runner -n "__fish_runner_needs_command" -f -a "run" -d 'Connect to the relay and execute tool calls until stopped'
complete -c runner -n "__fish_runner_needs_command" -f -a "login" -d 'Store the relay URL and an API key for the admin commands'
complete -c runner -n "__fish_runner_needs_command" -f -a "logout" -d 'Forget the relay URL and API key `runner login` stored (the key is removed from the keychain and the credentials file). RUNNER_URL and RUNNER_API_KEY are not touched'
complete -c runner -n "__fish_runner_needs_command" -f -a "env" -d 'Create, list, show, update and delete execution environments'
complete -c runner -n "__fish_runner_needs_command" -f -a "token" -d 'Generate, inspect and revoke an environment\'s registration token'
complete -c runner -n "__fish_runner_needs_command" -f -a "template" -d 'Create, list, show, edit and delete sandbox templates'
complete -c runner -n "__fish_runner_needs_command" -f -a "session" -d 'Start, list, show and end sessions: calls that stay on one machine'
complete -c runner -n "__fish_runner_needs_command" -f -a "approvals" -d 'List, show, approve and deny calls that wait for a person\'s approval'
complete -c runner -n "__fish_runner_needs_command" -f -a "audit" -d 'Read the relay\'s audit log (organisation admins)'
complete -c runner -n "__fish_runner_needs_command" -f -a "tools" -d 'List the tools an environment offers (its runner\'s catalogue, filtered by policy)'
complete -c runner -n "__fish_runner_needs_command" -f -a "status" -d 'Show an environment\'s status, or with --local this machine\'s runner as it sees itself'
complete -c runner -n "__fish_runner_needs_command" -f -a "invoke" -d 'Run a tool on an environment\'s runner and print its output'
complete -c runner -n "__fish_runner_needs_command" -f -a "doctor" -d 'Explain what is wrong when the runner or the admin commands can\'t reach the relay'
complete -c runner -n "__fish_runner_needs_command" -f -a "service" -d 'Install, start, stop and inspect the runner as a system service'
complete -c runner -n "__fish_runner_needs_command" -f -a "update" -d 'Update this binary from the release mirror (default: the registered relay)'
complete -c runner -n "__fish_runner_needs_command" -f -a "policy" -d 'Check commands against a permission file and lint permission files'
complete -c runner -n "__fish_runner_needs_command" -f -a "sandbox-host" -d 'Make this machine a sandbox host: start isolated, temporary runners (sandboxes) when the relay asks'
complete -c runner -n "__fish_runner_needs_command" -f -a "sandbox-enter" -d 'Become bubblewrap in a private mount namespace with the sandbox\'s root mounted (started by the sandbox host)'
complete -c runner -n "__fish_runner_needs_command" -f -a "sandbox-init" -d 'A sandbox\'s first process (started by bubblewrap)'
complete -c runner -n "__fish_runner_needs_command" -f -a "tool-view" -d 'Make the namespace tools run in and hold it (started by `run`)'
complete -c runner -n "__fish_runner_needs_command" -f -a "generate-assets" -d 'Regenerate completions/ and man/ from these definitions (for developers)'
complete -c runner -n "__fish_runner_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand register" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand register" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand register" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand register" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand register" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand register" -l url -d 'Base URL of the relay, e.g. https://relay.example.com (required: this flag or RUNNER_URL)' -r
complete -c runner -n "__fish_runner_using_subcommand register" -l token -d 'The registration token (prefer RUNNER_TOKEN or --token-stdin)' -r
complete -c runner -n "__fish_runner_using_subcommand register" -l credential-store -d 'Where to keep the token' -r -f -a "auto\t'The OS keychain when one answers, else a 0600 file'
keyring\t'The OS keychain only (fails if none is usable)'
file\t'A file readable by its owner only'"
complete -c runner -n "__fish_runner_using_subcommand register" -l token-stdin -d 'Read the token from standard input'
complete -c runner -n "__fish_runner_using_subcommand register" -l replace -d 'Register even though a runner on another machine is connected to the environment: `runner run` here will replace it (it stops)'
complete -c runner -n "__fish_runner_using_subcommand register" -l json -d 'Print the result as JSON'
complete -c runner -n "__fish_runner_using_subcommand register" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand register" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand unregister" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand unregister" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand unregister" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand unregister" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand unregister" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand unregister" -s y -l yes -d 'Do not ask for confirmation'
complete -c runner -n "__fish_runner_using_subcommand unregister" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand unregister" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand run" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand run" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand run" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand run" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand run" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand run" -l url -d 'Relay URL. With RUNNER_TOKEN also set in the environment, `run` needs no prior `register` (how the service and the container image run); otherwise the registration from `runner register` is used' -r
complete -c runner -n "__fish_runner_using_subcommand run" -l workspace -d 'Root directory for relative paths of file tools and the default working directory of `shell` (default: STATE_DIR/workspace)' -r -F
complete -c runner -n "__fish_runner_using_subcommand run" -l permission-config -d 'Local permission file (YAML, key `permission`) checked before any command runs. Unset: every command is allowed. Set but missing or invalid: the runner refuses to start' -r -F
complete -c runner -n "__fish_runner_using_subcommand run" -l call-log -d 'Log every call that ran ("call finished": call id, tool, exit code, ms) at info, target `runner_cli::calls`: this machine\'s own record of what ran on it, whoever runs the relay. `false` leaves it to the relay\'s journal, for a runner taking thousands of calls a second (the line is a measurable share of a short call\'s CPU, and journald\'s rate limit drops every line of a service past 10,000 in 30 s). Calls that fail (refused by the permission file, bad arguments, a command that cannot start) are logged either way ("call failed")' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand run" -l max-concurrent-calls -d 'Calls executed at once; more wait in a queue (reported as backlog)' -r
complete -c runner -n "__fish_runner_using_subcommand run" -l kept-output-max-mb -d 'Most MiB the files keeping large outputs (WORKSPACE/.runner/output) may hold; past it the oldest are removed when a new one is written (they are also removed after 7 days)' -r
complete -c runner -n "__fish_runner_using_subcommand run" -l worker-threads -d 'Threads that run the connection and the calls\' I/O. One is enough for most hosts and the fastest: commands run in their own processes, file and search tools on a separate pool, and one thread never has to wake another to hand a call on (`ping` 0.88× and 28 % less CPU per call than two threads, output streams as fast). Raise it for many large output streams at once' -r
complete -c runner -n "__fish_runner_using_subcommand run" -l mcp-config -d 'MCP servers to start and relay (YAML, key `servers`); their tools are announced as SERVER__TOOL. Set but unusable: the runner refuses to start' -r -F
complete -c runner -n "__fish_runner_using_subcommand run" -l browser-install-command -d 'How to install Chromium when the environment asks for browser tools and no browser is on PATH: a program and its arguments separated by spaces (no quoting; run without a shell, as the runner\'s user). Beats `browser_install_command` in config.yaml. Unset: the package manager on PATH (apt-get, dnf, apk, zypper, pacman), as root only' -r
complete -c runner -n "__fish_runner_using_subcommand run" -l health-addr -d 'Serve /healthz (200 when connected, 503 otherwise), /status.json and /metrics (Prometheus) on this address, e.g. 127.0.0.1:9464, for load balancers, watchdogs and monitoring. `runner status --local` works without it' -r
complete -c runner -n "__fish_runner_using_subcommand run" -l auto-update -d 'Install newer releases the relay announces (signature and SHA-256 verified, rolled back if the new binary does not connect). `false` only logs that an update exists' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand run" -l call-cgroups -d 'Give each process-running call a cgroup of its own where cgroup v2 is writable (the service unit delegates one), so that stopping the call also stops processes that left its process group and wiped their environment (`env -i setsid …`). Where the kernel allows `clone3`, the process is created inside its cgroup, and cgroups are reused between calls; elsewhere it moves itself in first (≈ 0.5 ms, more without cgroup2\'s `favordynmods`: `runner doctor` says which). `false` keeps to the process group and the RUNNER_CALL_ID marker' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand run" -l hide-runner-files -d 'Run tools with the runner\'s config and state directories (the credential files among them), the service\'s environment file and, when the keychain holds a runner secret, the session bus hidden from them, the workspace left visible: in a mount namespace (as root) or a user namespace mapping the runner\'s own uid (otherwise; there setuid programs such as sudo do not raise privileges). `auto` does it where this host allows and says once where it does not, `on` refuses to start there; `runner doctor` says which applies' -r -f -a "auto\t'Where this host allows a mount namespace (as root, or in a user namespace); elsewhere tools run without it, and the runner says so'
on\t'Always: the runner refuses to start where it cannot'
off\t'Never'"
complete -c runner -n "__fish_runner_using_subcommand run" -l idle-exit-s -d 'Exit (0) after this many seconds without a call: a sandbox\'s runner, whose host then destroys the sandbox' -r
complete -c runner -n "__fish_runner_using_subcommand run" -l max-lifetime-s -d 'Exit (0) this many seconds after start, whatever it is doing' -r
complete -c runner -n "__fish_runner_using_subcommand run" -l relay-proxy -d 'HTTP proxy for the relay connection only, not passed to tools (a sandbox\'s way out to its relay)' -r
complete -c runner -n "__fish_runner_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand run" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand login" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand login" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand login" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand login" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand login" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand login" -l url -d 'Base URL of the relay (required: this flag or RUNNER_URL)' -r
complete -c runner -n "__fish_runner_using_subcommand login" -l credential-store -d 'Where to keep the API key' -r -f -a "auto\t'The OS keychain when one answers, else a 0600 file'
keyring\t'The OS keychain only (fails if none is usable)'
file\t'A file readable by its owner only'"
complete -c runner -n "__fish_runner_using_subcommand login" -l api-key-stdin -d 'Read the API key from standard input'
complete -c runner -n "__fish_runner_using_subcommand login" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand login" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand logout" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand logout" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand logout" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand logout" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand logout" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand logout" -l json -d 'Print the result as JSON'
complete -c runner -n "__fish_runner_using_subcommand logout" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand logout" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -f -a "create" -d 'Create an environment'
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -f -a "list" -d 'List the environments you can see'
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -f -a "show" -d 'Show one environment'
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -f -a "update" -d 'Change an environment\'s fields or policy'
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -f -a "delete" -d 'Delete an environment (cannot be undone; its runner stops)'
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -f -a "deploy" -d 'Run the environment\'s runner on a sandbox host (a managed runner with a new token nobody sees; the previous token keeps working for the grace period). Replaces a runner installed by hand'
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -f -a "undeploy" -d 'Stop the environment\'s managed runner'
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -f -a "deployment" -d 'Show the environment\'s newest deployment and its state'
complete -c runner -n "__fish_runner_using_subcommand env; and not __fish_seen_subcommand_from create list show update delete deploy undeploy deployment help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l name -d 'Unique name (≤128 characters); blank: the first runner\'s hostname' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l description -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l scope -d '`shared` or `team:NAME`; fixed at creation' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l tier -r -f -a "production\t''
development\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l tag -d 'Routing tag; repeat for several' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l type -d 'Type label (default `Local`). `sandbox-host` makes a sandbox host\'s environment (organisation admins, shared scope; its policy is the relay\'s): run `runner sandbox-host` with its token' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l allow-tool -d 'Allow this tool; repeat for several (replaces the list; `\'\'` allows none)' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l file-path -d 'Directory under which file tools work (`*` for all); repeat for several (replaces the list; `\'\'` clears it)' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l require-approval -d 'Tool that needs a person\'s approval; repeat for several (replaces the list; `\'\'` clears it)' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l allow-all-tools -d 'Allow every tool the runner announces'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from create" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from list" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from list" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from list" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from list" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from list" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from list" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from list" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from show" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from show" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from show" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from show" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from show" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from show" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from show" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -l name -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -l description -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -l tier -r -f -a "production\t''
development\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -l tag -d 'Replace the tags; repeat for several' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -l allow-tool -d 'Allow this tool; repeat for several (replaces the list; `\'\'` allows none)' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -l file-path -d 'Directory under which file tools work (`*` for all); repeat for several (replaces the list; `\'\'` clears it)' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -l require-approval -d 'Tool that needs a person\'s approval; repeat for several (replaces the list; `\'\'` clears it)' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -l allow-all-tools -d 'Allow every tool the runner announces'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from update" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from delete" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from delete" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from delete" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from delete" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from delete" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from delete" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from delete" -s y -l yes -d 'Do not ask for confirmation'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from delete" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from delete" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from delete" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deploy" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deploy" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deploy" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deploy" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deploy" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deploy" -l grace-hours -d 'Hours the previous token keeps working (0–168)' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deploy" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deploy" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deploy" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deploy" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from undeploy" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from undeploy" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from undeploy" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from undeploy" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from undeploy" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from undeploy" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from undeploy" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from undeploy" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from undeploy" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deployment" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deployment" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deployment" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deployment" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deployment" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deployment" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deployment" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deployment" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from deployment" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from help" -f -a "create" -d 'Create an environment'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from help" -f -a "list" -d 'List the environments you can see'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from help" -f -a "show" -d 'Show one environment'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from help" -f -a "update" -d 'Change an environment\'s fields or policy'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from help" -f -a "delete" -d 'Delete an environment (cannot be undone; its runner stops)'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from help" -f -a "deploy" -d 'Run the environment\'s runner on a sandbox host (a managed runner with a new token nobody sees; the previous token keeps working for the grace period). Replaces a runner installed by hand'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from help" -f -a "undeploy" -d 'Stop the environment\'s managed runner'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from help" -f -a "deployment" -d 'Show the environment\'s newest deployment and its state'
complete -c runner -n "__fish_runner_using_subcommand env; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand token; and not __fish_seen_subcommand_from generate rotate status revoke help" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand token; and not __fish_seen_subcommand_from generate rotate status revoke help" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand token; and not __fish_seen_subcommand_from generate rotate status revoke help" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand token; and not __fish_seen_subcommand_from generate rotate status revoke help" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand token; and not __fish_seen_subcommand_from generate rotate status revoke help" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand token; and not __fish_seen_subcommand_from generate rotate status revoke help" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand token; and not __fish_seen_subcommand_from generate rotate status revoke help" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand token; and not __fish_seen_subcommand_from generate rotate status revoke help" -f -a "generate" -d 'Generate a new token (the previous one keeps working for the grace period); `rotate` is the same command'
complete -c runner -n "__fish_runner_using_subcommand token; and not __fish_seen_subcommand_from generate rotate status revoke help" -f -a "rotate" -d 'Generate a new token (the previous one keeps working for the grace period); `rotate` is the same command'
complete -c runner -n "__fish_runner_using_subcommand token; and not __fish_seen_subcommand_from generate rotate status revoke help" -f -a "status" -d 'Show the token\'s age, last use and days to expiry (never the token)'
complete -c runner -n "__fish_runner_using_subcommand token; and not __fish_seen_subcommand_from generate rotate status revoke help" -f -a "revoke" -d 'Invalidate every token of the environment and disconnect its runner (asks first, as `env delete` does; --yes for scripts)'
complete -c runner -n "__fish_runner_using_subcommand token; and not __fish_seen_subcommand_from generate rotate status revoke help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from generate" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from generate" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from generate" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from generate" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from generate" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from generate" -l grace-hours -d 'Hours the previous token keeps working (0–168). 0 cuts the connected runner off at once, so it asks first (--yes for scripts)' -r
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from generate" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from generate" -s y -l yes -d 'Do not ask for confirmation before --grace-hours 0'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from generate" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from generate" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from generate" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from rotate" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from rotate" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from rotate" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from rotate" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from rotate" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from rotate" -l grace-hours -d 'Hours the previous token keeps working (0–168). 0 cuts the connected runner off at once, so it asks first (--yes for scripts)' -r
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from rotate" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from rotate" -s y -l yes -d 'Do not ask for confirmation before --grace-hours 0'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from rotate" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from rotate" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from rotate" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from status" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from status" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from status" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from status" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from status" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from status" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from status" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from status" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from status" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from revoke" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from revoke" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from revoke" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from revoke" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from revoke" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from revoke" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from revoke" -s y -l yes -d 'Do not ask for confirmation'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from revoke" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from revoke" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from revoke" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from help" -f -a "generate" -d 'Generate a new token (the previous one keeps working for the grace period); `rotate` is the same command'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from help" -f -a "status" -d 'Show the token\'s age, last use and days to expiry (never the token)'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from help" -f -a "revoke" -d 'Invalidate every token of the environment and disconnect its runner (asks first, as `env delete` does; --yes for scripts)'
complete -c runner -n "__fish_runner_using_subcommand token; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand template; and not __fish_seen_subcommand_from create list show edit delete help" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and not __fish_seen_subcommand_from create list show edit delete help" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and not __fish_seen_subcommand_from create list show edit delete help" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and not __fish_seen_subcommand_from create list show edit delete help" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand template; and not __fish_seen_subcommand_from create list show edit delete help" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand template; and not __fish_seen_subcommand_from create list show edit delete help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand template; and not __fish_seen_subcommand_from create list show edit delete help" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand template; and not __fish_seen_subcommand_from create list show edit delete help" -f -a "create" -d 'Create a template'
complete -c runner -n "__fish_runner_using_subcommand template; and not __fish_seen_subcommand_from create list show edit delete help" -f -a "list" -d 'List the templates you can see'
complete -c runner -n "__fish_runner_using_subcommand template; and not __fish_seen_subcommand_from create list show edit delete help" -f -a "show" -d 'Show one template (--json: with its variables and setup script)'
complete -c runner -n "__fish_runner_using_subcommand template; and not __fish_seen_subcommand_from create list show edit delete help" -f -a "edit" -d 'Change a template\'s fields (not its scope)'
complete -c runner -n "__fish_runner_using_subcommand template; and not __fish_seen_subcommand_from create list show edit delete help" -f -a "delete" -d 'Delete a template (sessions using it keep working; their new sandboxes get the default configuration)'
complete -c runner -n "__fish_runner_using_subcommand template; and not __fish_seen_subcommand_from create list show edit delete help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -l scope -d '`shared` or `team:NAME`; fixed at creation' -r
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -l description -r
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -l network -d 'Where sandboxes may connect (default for a new template: none)' -r -f -a "none\t'No network but loopback'
allow-all\t'The host\'s network, unfiltered'
allowlist\t'Only the --allow-domain domains, through a proxy'"
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -l allow-domain -d 'A domain (and its subdomains) --network allowlist lets through; repeat for several (replaces the list; `\'\'` clears it)' -r
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -l env-file -d 'Environment variables in `.env` form (KEY=value lines, comments, quoted values; at most 32 KiB); `-` reads standard input' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -l setup-script -d 'Bash script run as root in each new sandbox before its first call (at most 64 KiB); `-` reads standard input, an empty file removes it' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -l idle-timeout -d 'Stop a sandbox after this long without a call (e.g. 900, 15m, 2h; default for a new template: 15m)' -r
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -l max-lifetime -d 'Stop a sandbox after this long whatever it does (e.g. 8h, 2d; default for a new template: 8h)' -r
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from create" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from list" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from list" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from list" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from list" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from list" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from list" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from list" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from show" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from show" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from show" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from show" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from show" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from show" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from show" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -l name -d 'A new name' -r
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -l description -r
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -l network -d 'Where sandboxes may connect (default for a new template: none)' -r -f -a "none\t'No network but loopback'
allow-all\t'The host\'s network, unfiltered'
allowlist\t'Only the --allow-domain domains, through a proxy'"
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -l allow-domain -d 'A domain (and its subdomains) --network allowlist lets through; repeat for several (replaces the list; `\'\'` clears it)' -r
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -l env-file -d 'Environment variables in `.env` form (KEY=value lines, comments, quoted values; at most 32 KiB); `-` reads standard input' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -l setup-script -d 'Bash script run as root in each new sandbox before its first call (at most 64 KiB); `-` reads standard input, an empty file removes it' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -l idle-timeout -d 'Stop a sandbox after this long without a call (e.g. 900, 15m, 2h; default for a new template: 15m)' -r
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -l max-lifetime -d 'Stop a sandbox after this long whatever it does (e.g. 8h, 2d; default for a new template: 8h)' -r
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from edit" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from delete" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from delete" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from delete" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from delete" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from delete" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from delete" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from delete" -s y -l yes -d 'Do not ask for confirmation'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from delete" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from delete" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from delete" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from help" -f -a "create" -d 'Create a template'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from help" -f -a "list" -d 'List the templates you can see'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from help" -f -a "show" -d 'Show one template (--json: with its variables and setup script)'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from help" -f -a "edit" -d 'Change a template\'s fields (not its scope)'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from help" -f -a "delete" -d 'Delete a template (sessions using it keep working; their new sandboxes get the default configuration)'
complete -c runner -n "__fish_runner_using_subcommand template; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand session; and not __fish_seen_subcommand_from create list show end help" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand session; and not __fish_seen_subcommand_from create list show end help" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand session; and not __fish_seen_subcommand_from create list show end help" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand session; and not __fish_seen_subcommand_from create list show end help" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand session; and not __fish_seen_subcommand_from create list show end help" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand session; and not __fish_seen_subcommand_from create list show end help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand session; and not __fish_seen_subcommand_from create list show end help" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand session; and not __fish_seen_subcommand_from create list show end help" -f -a "create" -d 'Start a session and print its id (alone: `$(runner session create)`)'
complete -c runner -n "__fish_runner_using_subcommand session; and not __fish_seen_subcommand_from create list show end help" -f -a "list" -d 'List your sessions (every session for organisation admins)'
complete -c runner -n "__fish_runner_using_subcommand session; and not __fish_seen_subcommand_from create list show end help" -f -a "show" -d 'Show a session: its environment and that environment\'s status now, why it was chosen, last use and expiry'
complete -c runner -n "__fish_runner_using_subcommand session; and not __fish_seen_subcommand_from create list show end help" -f -a "end" -d 'End a session; later calls through it fail'
complete -c runner -n "__fish_runner_using_subcommand session; and not __fish_seen_subcommand_from create list show end help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from create" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from create" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from create" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from create" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from create" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from create" -l env -d '`auto` (an online runner you may use), `sandbox`, or an environment id or name. Default: the agent\'s default environment, else its team\'s, else `auto`' -r
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from create" -l tag -d 'Tag `auto` prefers (an environment carrying all of them wins); repeat for several' -r
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from create" -l agent -d 'The agent (member id or name) the session works for, whose default environment applies' -r
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from create" -l template -d 'The template (id or name) that prepares the session\'s sandbox (with `--env sandbox`, or `auto` when it gets one)' -r
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from create" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from create" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from create" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from create" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from list" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from list" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from list" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from list" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from list" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from list" -l state -d 'Only sessions in this state' -r -f -a "open\t''
ended\t''
expired\t''"
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from list" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from list" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from show" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from show" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from show" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from show" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from show" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from show" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from show" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from end" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from end" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from end" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from end" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from end" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from end" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from end" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from end" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from end" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "create" -d 'Start a session and print its id (alone: `$(runner session create)`)'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "list" -d 'List your sessions (every session for organisation admins)'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "show" -d 'Show a session: its environment and that environment\'s status now, why it was chosen, last use and expiry'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "end" -d 'End a session; later calls through it fail'
complete -c runner -n "__fish_runner_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand approvals; and not __fish_seen_subcommand_from list show approve deny help" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand approvals; and not __fish_seen_subcommand_from list show approve deny help" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand approvals; and not __fish_seen_subcommand_from list show approve deny help" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand approvals; and not __fish_seen_subcommand_from list show approve deny help" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand approvals; and not __fish_seen_subcommand_from list show approve deny help" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand approvals; and not __fish_seen_subcommand_from list show approve deny help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand approvals; and not __fish_seen_subcommand_from list show approve deny help" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand approvals; and not __fish_seen_subcommand_from list show approve deny help" -f -a "list" -d 'List approvals you may see, newest first (default: pending ones)'
complete -c runner -n "__fish_runner_using_subcommand approvals; and not __fish_seen_subcommand_from list show approve deny help" -f -a "show" -d 'Show one approval: the call in full (values of `env` masked), who asked, the rule, the decision, the call\'s end and the webhook\'s delivery'
complete -c runner -n "__fish_runner_using_subcommand approvals; and not __fish_seen_subcommand_from list show approve deny help" -f -a "approve" -d 'Approve: the stored call runs once, exactly as asked. Approving again changes nothing'
complete -c runner -n "__fish_runner_using_subcommand approvals; and not __fish_seen_subcommand_from list show approve deny help" -f -a "deny" -d 'Deny: the call never runs; its requester\'s invoke exits 66'
complete -c runner -n "__fish_runner_using_subcommand approvals; and not __fish_seen_subcommand_from list show approve deny help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from list" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from list" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from list" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from list" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from list" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from list" -l status -d 'Only approvals in this state' -r -f -a "pending\t''
approved\t''
denied\t''
expired\t''
all\t''"
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from list" -l env -d 'Only approvals of this environment (id or name)' -r
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from list" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from list" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from show" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from show" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from show" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from show" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from show" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from show" -l wait -d 'Wait until the approval is settled (denied, expired, or approved and its call ended), up to this long: 90s, 10m, 1h' -r
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from show" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from show" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from approve" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from approve" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from approve" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from approve" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from approve" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from approve" -l comment -d 'Why, for the record (shown to the requester)' -r
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from approve" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from approve" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from approve" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from approve" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from deny" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from deny" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from deny" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from deny" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from deny" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from deny" -l comment -d 'Why, for the record (shown to the requester)' -r
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from deny" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from deny" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from deny" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from deny" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from help" -f -a "list" -d 'List approvals you may see, newest first (default: pending ones)'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from help" -f -a "show" -d 'Show one approval: the call in full (values of `env` masked), who asked, the rule, the decision, the call\'s end and the webhook\'s delivery'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from help" -f -a "approve" -d 'Approve: the stored call runs once, exactly as asked. Approving again changes nothing'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from help" -f -a "deny" -d 'Deny: the call never runs; its requester\'s invoke exits 66'
complete -c runner -n "__fish_runner_using_subcommand approvals; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand audit" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand audit" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand audit" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand audit" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand audit" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand audit" -l env -d 'Only entries about this environment (id)' -r
complete -c runner -n "__fish_runner_using_subcommand audit" -l actor -d 'Only entries by this member (id)' -r
complete -c runner -n "__fish_runner_using_subcommand audit" -l action -d 'Only this action, e.g. tool.invoke, token.generate, auth.failed' -r
complete -c runner -n "__fish_runner_using_subcommand audit" -l session -d 'Only calls through this session' -r
complete -c runner -n "__fish_runner_using_subcommand audit" -l tool -d 'Only calls of this tool' -r
complete -c runner -n "__fish_runner_using_subcommand audit" -l since -d 'Only entries at or after this time (RFC 3339 or Unix seconds)' -r
complete -c runner -n "__fish_runner_using_subcommand audit" -l until -d 'Only entries before this time (RFC 3339 or Unix seconds)' -r
complete -c runner -n "__fish_runner_using_subcommand audit" -l limit -d 'At most this many entries (default: 50 in the table, all with --json)' -r
complete -c runner -n "__fish_runner_using_subcommand audit" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand audit" -l follow -d 'Keep printing new entries as they are recorded (polls every 2 s; stop with Ctrl-C)'
complete -c runner -n "__fish_runner_using_subcommand audit" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand audit" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand audit" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand tools" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand tools" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand tools" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand tools" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand tools" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand tools" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand tools" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand tools" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand tools" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand status" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand status" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand status" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand status" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand status" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand status" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand status" -l local -d 'Report the runner of this machine (its state directory): connected or not and why, relay, version, calls in flight and queued'
complete -c runner -n "__fish_runner_using_subcommand status" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand status" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand status" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand invoke" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand invoke" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand invoke" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand invoke" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand invoke" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand invoke" -l session -d 'Run the tool where this session runs its calls (the first call of a session picks the machine). Default: RUNNER_SESSION' -r
complete -c runner -n "__fish_runner_using_subcommand invoke" -l arg -d 'Argument as KEY=VALUE (a string) or KEY:=JSON (a number, bool, list…)' -r
complete -c runner -n "__fish_runner_using_subcommand invoke" -l args-json -d 'All arguments as one JSON object (merged under --arg)' -r
complete -c runner -n "__fish_runner_using_subcommand invoke" -l timeout -d 'Seconds before the relay gives up and cancels the call (1–3600)' -r
complete -c runner -n "__fish_runner_using_subcommand invoke" -l wait-approval -d 'When the tool needs a person\'s approval, ask for one and wait up to DURATION (default 10m) for the decision and the call; its approval id goes to stderr. Denied or expired: exit 66; still pending: 75. Tools that need no approval run at once' -r
complete -c runner -n "__fish_runner_using_subcommand invoke" -l call-id -d 'The call\'s id (1–128 of A-Z a-z 0-9 . _ : -): the relay runs a call id once, and answers it again with that call\'s answer. Default: a fresh one, with which invoke asks again when it loses the relay mid-call; pass the id a lost invoke printed to fetch that call\'s answer without running it twice' -r
complete -c runner -n "__fish_runner_using_subcommand invoke" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand invoke" -l stream -d 'Print the tool\'s output as it is produced, byte for byte (stdout to stdout, stderr to stderr: binary output can be piped), then exit with the tool\'s exit code'
complete -c runner -n "__fish_runner_using_subcommand invoke" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand invoke" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand invoke" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand doctor" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand doctor" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand doctor" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand doctor" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand doctor" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand doctor" -l permission-config -d 'Permission file to validate (as `runner run` would load it)' -r -F
complete -c runner -n "__fish_runner_using_subcommand doctor" -l workspace -d 'Workspace to check (default: STATE_DIR/workspace). Checked, never created' -r -F
complete -c runner -n "__fish_runner_using_subcommand doctor" -l kept-output-max-mb -d 'The cap `runner run` keeps large outputs under, to compare the workspace\'s kept output with' -r
complete -c runner -n "__fish_runner_using_subcommand doctor" -l browser-install-command -d 'The install command `runner run` would use for Chromium (as its `--browser-install-command`), to say whether it can install one' -r
complete -c runner -n "__fish_runner_using_subcommand doctor" -l hide-runner-files -d 'Whether `runner run` hides its files from tools (as it would be started), to check that this machine allows it' -r -f -a "auto\t'Where this host allows a mount namespace (as root, or in a user namespace); elsewhere tools run without it, and the runner says so'
on\t'Always: the runner refuses to start where it cannot'
off\t'Never'"
complete -c runner -n "__fish_runner_using_subcommand doctor" -l url -d 'Relay URL (default: the one stored by `runner login`)' -r
complete -c runner -n "__fish_runner_using_subcommand doctor" -l sandbox-host -d 'Also check that this machine can run sandboxes (`runner sandbox-host`)'
complete -c runner -n "__fish_runner_using_subcommand doctor" -l json -d 'Print machine-readable JSON instead of text'
complete -c runner -n "__fish_runner_using_subcommand doctor" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand doctor" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand service; and not __fish_seen_subcommand_from install uninstall start stop status logs help" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and not __fish_seen_subcommand_from install uninstall start stop status logs help" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and not __fish_seen_subcommand_from install uninstall start stop status logs help" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and not __fish_seen_subcommand_from install uninstall start stop status logs help" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand service; and not __fish_seen_subcommand_from install uninstall start stop status logs help" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand service; and not __fish_seen_subcommand_from install uninstall start stop status logs help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand service; and not __fish_seen_subcommand_from install uninstall start stop status logs help" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand service; and not __fish_seen_subcommand_from install uninstall start stop status logs help" -f -a "install" -d 'Write the service definition and /etc/runner/env, create the user, enable and start it'
complete -c runner -n "__fish_runner_using_subcommand service; and not __fish_seen_subcommand_from install uninstall start stop status logs help" -f -a "uninstall" -d 'Stop and remove the service (keeps /etc/runner/env unless --purge)'
complete -c runner -n "__fish_runner_using_subcommand service; and not __fish_seen_subcommand_from install uninstall start stop status logs help" -f -a "start" -d 'Start the service'
complete -c runner -n "__fish_runner_using_subcommand service; and not __fish_seen_subcommand_from install uninstall start stop status logs help" -f -a "stop" -d 'Stop the service'
complete -c runner -n "__fish_runner_using_subcommand service; and not __fish_seen_subcommand_from install uninstall start stop status logs help" -f -a "status" -d 'Show the service manager\'s view of the service (where there is none, says so and how to run the runner instead)'
complete -c runner -n "__fish_runner_using_subcommand service; and not __fish_seen_subcommand_from install uninstall start stop status logs help" -f -a "logs" -d 'Show the service\'s logs'
complete -c runner -n "__fish_runner_using_subcommand service; and not __fish_seen_subcommand_from install uninstall start stop status logs help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from install" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from install" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from install" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from install" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from install" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from install" -l run-as -d 'Run as this existing user instead of a dedicated `runner` user (for their kubeconfig or docker group); home protection is relaxed for that user\'s home only' -r
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from install" -l root -d 'Write every file under DIR instead of / and do not touch users or services (for packaging and tests)' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from install" -l url -d 'Relay URL (default: this user\'s registration)' -r
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from install" -l binary -d 'Path of the installed runner binary the service starts (default /usr/local/bin/runner); it must exist (under --root, or as given)' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from install" -l permission-config -d 'Permission file the service passes to `runner run`' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from install" -l dry-run -d 'Print what would be written and run, change nothing'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from install" -l verify -d 'Check the token against the relay before installing, and refuse a token it refuses. The default checks whenever the relay answers and only warns when it cannot be reached; --verify also refuses then'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from install" -l no-verify -d 'Install without checking the token against the relay'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from install" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from install" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from uninstall" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from uninstall" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from uninstall" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from uninstall" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from uninstall" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from uninstall" -l root -d 'Remove files under DIR instead of /' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from uninstall" -l purge -d 'Also remove /etc/runner/env (the runner\'s token and settings); asks first, --yes for scripts'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from uninstall" -s y -l yes -d 'Do not ask for confirmation before --purge'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from uninstall" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from uninstall" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from start" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from start" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from start" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from start" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from start" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from start" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from start" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from stop" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from stop" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from stop" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from stop" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from stop" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from stop" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from stop" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from status" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from status" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from status" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from status" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from status" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from status" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from status" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from logs" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from logs" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from logs" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from logs" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from logs" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from logs" -s n -l lines -d 'How many recent lines to show' -r
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from logs" -s f -l follow -d 'Keep printing new lines'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from logs" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from logs" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from help" -f -a "install" -d 'Write the service definition and /etc/runner/env, create the user, enable and start it'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from help" -f -a "uninstall" -d 'Stop and remove the service (keeps /etc/runner/env unless --purge)'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from help" -f -a "start" -d 'Start the service'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from help" -f -a "stop" -d 'Stop the service'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from help" -f -a "status" -d 'Show the service manager\'s view of the service (where there is none, says so and how to run the runner instead)'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from help" -f -a "logs" -d 'Show the service\'s logs'
complete -c runner -n "__fish_runner_using_subcommand service; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand update" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand update" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand update" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand update" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand update" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand update" -l mirror -d 'Release mirror serving releases/latest and releases/download/ (default: the registered relay URL)' -r
complete -c runner -n "__fish_runner_using_subcommand update" -l check -d 'Only compare this version with the mirror\'s latest; change nothing. Exits 0 when up to date, 11 when an update is available'
complete -c runner -n "__fish_runner_using_subcommand update" -l rollback -d 'Restore the binary the last update replaced (runner.previous)'
complete -c runner -n "__fish_runner_using_subcommand update" -l service-step -d 'The root half of a service\'s self-update, run by the systemd unit\'s `ExecStartPre=` before each start: install the release the runner asked for (verified again, newer only), or roll back an update that failed its probation. Does nothing when nothing was asked. Always exits 0, so it can never keep the service from starting'
complete -c runner -n "__fish_runner_using_subcommand update" -s y -l yes -d 'Do not ask for confirmation on a terminal'
complete -c runner -n "__fish_runner_using_subcommand update" -l json -d 'Print the result as JSON'
complete -c runner -n "__fish_runner_using_subcommand update" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand update" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand policy; and not __fish_seen_subcommand_from check lint help" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand policy; and not __fish_seen_subcommand_from check lint help" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand policy; and not __fish_seen_subcommand_from check lint help" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand policy; and not __fish_seen_subcommand_from check lint help" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand policy; and not __fish_seen_subcommand_from check lint help" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand policy; and not __fish_seen_subcommand_from check lint help" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand policy; and not __fish_seen_subcommand_from check lint help" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand policy; and not __fish_seen_subcommand_from check lint help" -f -a "check" -d 'Check one command against a permission file: exit 0 allowed, 1 denied, 2 the file was refused'
complete -c runner -n "__fish_runner_using_subcommand policy; and not __fish_seen_subcommand_from check lint help" -f -a "lint" -d 'Load a permission file and report errors and rules that can never decide anything: exit 0 clean, 1 warnings, 2 refused'
complete -c runner -n "__fish_runner_using_subcommand policy; and not __fish_seen_subcommand_from check lint help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from check" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from check" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from check" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from check" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from check" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from check" -l config -d 'The permission file (YAML with a top-level `permission` mapping)' -r -F
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from check" -l json -d 'Print the decision as one JSON object on stdout'
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from check" -l stdin -d 'Read the command from standard input instead of the arguments'
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from check" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from lint" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from lint" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from lint" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from lint" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from lint" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from lint" -l json -d 'Print the result as one JSON object on stdout'
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from lint" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from lint" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from help" -f -a "check" -d 'Check one command against a permission file: exit 0 allowed, 1 denied, 2 the file was refused'
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from help" -f -a "lint" -d 'Load a permission file and report errors and rules that can never decide anything: exit 0 clean, 1 warnings, 2 refused'
complete -c runner -n "__fish_runner_using_subcommand policy; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand sandbox-host" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand sandbox-host" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand sandbox-host" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand sandbox-host" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand sandbox-host" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand sandbox-host" -l url -d 'Relay URL (with RUNNER_TOKEN in the environment; otherwise the registration\'s)' -r
complete -c runner -n "__fish_runner_using_subcommand sandbox-host" -l slots -d 'Sandboxes run at once at most (default: eight per CPU, at most one per 256 MiB of memory, at least one)' -r
complete -c runner -n "__fish_runner_using_subcommand sandbox-host" -l sandbox-memory-mb -d 'A sandbox\'s memory limit, MiB, unless the relay\'s request sets one' -r
complete -c runner -n "__fish_runner_using_subcommand sandbox-host" -l sandbox-pids -d 'A sandbox\'s limit of processes and threads, unless the request sets one' -r
complete -c runner -n "__fish_runner_using_subcommand sandbox-host" -l sandbox-cpus -d 'A sandbox\'s CPU quota in CPUs (1.5: one and a half), unless the request sets one. Default: no quota' -r
complete -c runner -n "__fish_runner_using_subcommand sandbox-host" -l base-image -d 'A full root file system (made by mmdebstrap or debootstrap) to use as every sandbox\'s read-only lower layer, instead of the host-derived base (the host\'s /usr and a filtered copy of /etc)' -r -F
complete -c runner -n "__fish_runner_using_subcommand sandbox-host" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner -n "__fish_runner_using_subcommand sandbox-host" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand sandbox-enter" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand sandbox-enter" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand sandbox-enter" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand sandbox-enter" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand sandbox-enter" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand sandbox-enter" -l plan -r -F
complete -c runner -n "__fish_runner_using_subcommand sandbox-enter" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand sandbox-enter" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand sandbox-init" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand sandbox-init" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand sandbox-init" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand sandbox-init" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand sandbox-init" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand sandbox-init" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand sandbox-init" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand tool-view" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand tool-view" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand tool-view" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand tool-view" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand tool-view" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand tool-view" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand tool-view" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand generate-assets" -l config-dir -d 'Directory holding config.yaml and (when no keychain is usable) the credential files' -r -F
complete -c runner -n "__fish_runner_using_subcommand generate-assets" -l state-dir -d 'Directory for run-time state: the single-instance lock, the default workspace' -r -F
complete -c runner -n "__fish_runner_using_subcommand generate-assets" -l ca-file -d 'Also trust the CA certificates in this PEM file for the relay connection (added to the system\'s roots)' -r -F
complete -c runner -n "__fish_runner_using_subcommand generate-assets" -l insecure-skip-tls-verify -d 'Do not verify the relay\'s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY' -r -f -a "true\t''
false\t''"
complete -c runner -n "__fish_runner_using_subcommand generate-assets" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c runner -n "__fish_runner_using_subcommand generate-assets" -l out -d 'Repository root to write into' -r -F
complete -c runner -n "__fish_runner_using_subcommand generate-assets" -s h -l help -d 'Print help'
complete -c runner -n "__fish_runner_using_subcommand generate-assets" -s V -l version -d 'Print version'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "register" -d 'Check a registration token against the relay and store it for `runner run`'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "unregister" -d 'Remove the stored registration (config and token)'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "run" -d 'Connect to the relay and execute tool calls until stopped'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "login" -d 'Store the relay URL and an API key for the admin commands'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "logout" -d 'Forget the relay URL and API key `runner login` stored (the key is removed from the keychain and the credentials file). RUNNER_URL and RUNNER_API_KEY are not touched'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "env" -d 'Create, list, show, update and delete execution environments'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "token" -d 'Generate, inspect and revoke an environment\'s registration token'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "template" -d 'Create, list, show, edit and delete sandbox templates'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "session" -d 'Start, list, show and end sessions: calls that stay on one machine'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "approvals" -d 'List, show, approve and deny calls that wait for a person\'s approval'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "audit" -d 'Read the relay\'s audit log (organisation admins)'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "tools" -d 'List the tools an environment offers (its runner\'s catalogue, filtered by policy)'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "status" -d 'Show an environment\'s status, or with --local this machine\'s runner as it sees itself'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "invoke" -d 'Run a tool on an environment\'s runner and print its output'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "doctor" -d 'Explain what is wrong when the runner or the admin commands can\'t reach the relay'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "service" -d 'Install, start, stop and inspect the runner as a system service'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "update" -d 'Update this binary from the release mirror (default: the registered relay)'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "policy" -d 'Check commands against a permission file and lint permission files'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "sandbox-host" -d 'Make this machine a sandbox host: start isolated, temporary runners (sandboxes) when the relay asks'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "sandbox-enter" -d 'Become bubblewrap in a private mount namespace with the sandbox\'s root mounted (started by the sandbox host)'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "sandbox-init" -d 'A sandbox\'s first process (started by bubblewrap)'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "tool-view" -d 'Make the namespace tools run in and hold it (started by `run`)'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "generate-assets" -d 'Regenerate completions/ and man/ from these definitions (for developers)'
complete -c runner -n "__fish_runner_using_subcommand help; and not __fish_seen_subcommand_from register unregister run login logout env token template session approvals audit tools status invoke doctor service update policy sandbox-host sandbox-enter sandbox-init tool-view generate-assets help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from env" -f -a "create" -d 'Create an environment'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from env" -f -a "list" -d 'List the environments you can see'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from env" -f -a "show" -d 'Show one environment'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from env" -f -a "update" -d 'Change an environment\'s fields or policy'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from env" -f -a "delete" -d 'Delete an environment (cannot be undone; its runner stops)'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from env" -f -a "deploy" -d 'Run the environment\'s runner on a sandbox host (a managed runner with a new token nobody sees; the previous token keeps working for the grace period). Replaces a runner installed by hand'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from env" -f -a "undeploy" -d 'Stop the environment\'s managed runner'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from env" -f -a "deployment" -d 'Show the environment\'s newest deployment and its state'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from token" -f -a "generate" -d 'Generate a new token (the previous one keeps working for the grace period); `rotate` is the same command'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from token" -f -a "status" -d 'Show the token\'s age, last use and days to expiry (never the token)'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from token" -f -a "revoke" -d 'Invalidate every token of the environment and disconnect its runner (asks first, as `env delete` does; --yes for scripts)'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from template" -f -a "create" -d 'Create a template'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from template" -f -a "list" -d 'List the templates you can see'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from template" -f -a "show" -d 'Show one template (--json: with its variables and setup script)'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from template" -f -a "edit" -d 'Change a template\'s fields (not its scope)'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from template" -f -a "delete" -d 'Delete a template (sessions using it keep working; their new sandboxes get the default configuration)'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "create" -d 'Start a session and print its id (alone: `$(runner session create)`)'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "list" -d 'List your sessions (every session for organisation admins)'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "show" -d 'Show a session: its environment and that environment\'s status now, why it was chosen, last use and expiry'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "end" -d 'End a session; later calls through it fail'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from approvals" -f -a "list" -d 'List approvals you may see, newest first (default: pending ones)'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from approvals" -f -a "show" -d 'Show one approval: the call in full (values of `env` masked), who asked, the rule, the decision, the call\'s end and the webhook\'s delivery'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from approvals" -f -a "approve" -d 'Approve: the stored call runs once, exactly as asked. Approving again changes nothing'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from approvals" -f -a "deny" -d 'Deny: the call never runs; its requester\'s invoke exits 66'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from service" -f -a "install" -d 'Write the service definition and /etc/runner/env, create the user, enable and start it'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from service" -f -a "uninstall" -d 'Stop and remove the service (keeps /etc/runner/env unless --purge)'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from service" -f -a "start" -d 'Start the service'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from service" -f -a "stop" -d 'Stop the service'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from service" -f -a "status" -d 'Show the service manager\'s view of the service (where there is none, says so and how to run the runner instead)'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from service" -f -a "logs" -d 'Show the service\'s logs'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from policy" -f -a "check" -d 'Check one command against a permission file: exit 0 allowed, 1 denied, 2 the file was refused'
complete -c runner -n "__fish_runner_using_subcommand help; and __fish_seen_subcommand_from policy" -f -a "lint" -d 'Load a permission file and report errors and rules that can never decide anything: exit 0 clean, 1 warnings, 2 refused'
