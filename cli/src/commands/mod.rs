//! One module per command of the tree in [`crate::args`].

pub mod approvals;
pub mod audit;
pub mod doctor;
pub mod env;
pub mod invoke;
pub mod login;
pub mod policy;
pub mod register;
pub mod run;
pub mod sandbox_host;
pub mod service;
pub mod session;
pub mod status;
pub mod template;
pub mod token;
pub mod tools;
pub mod update;
