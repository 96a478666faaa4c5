//! End-to-end tests: the real `runner-relay` and real `runner` processes
//! over loopback sockets, with real files.

mod support;

mod approvals;
mod autoupdate;
mod backlog;
mod browser_install;
mod cli;
mod console;
mod container_image;
mod dev_mode;
mod doctor;
mod doctor_proxy;
mod health;
mod install;
mod invoke;
mod kept_output;
mod layers;
mod leftovers;
mod metrics;
mod readme_tour;
mod reboot;
mod relay_mcp;
mod runner;
mod sandbox_host;
mod service;
mod snapshots;
mod stopped_runner;
mod template;
mod tls;
mod tool_secrets;
mod tools_argv;
mod tools_browser;
mod tools_claude;
mod tools_files;
mod tools_http;
mod tools_mcp;
mod tools_mcp_http;
mod tools_schemas;
mod tools_shell;
mod tools_support;
mod update;
