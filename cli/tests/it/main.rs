//! End-to-end tests: the real `runner-relay` and real `runner` processes
//! over loopback sockets, with real files.

mod support;

mod cli;
mod install;
mod invoke;
mod runner;
mod update;
