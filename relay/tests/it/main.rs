//! Integration tests of the relay: real HTTP over loopback and fake runners
//! that speak the real WebSocket protocol.

mod support;

mod access;
mod admission;
mod approvals;
mod audit;
mod cli;
mod cluster;
mod cluster_rebalance;
mod conformance;
mod console;
mod environments;
mod invoke;
mod journal;
mod metrics;
mod openapi;
mod protocol;
mod sandboxes;
mod sessions;
mod status;
mod store;
mod streaming;
mod templates;
mod tokens;
mod validation;
