//! How a sandbox is kept apart from its host: its root file system
//! ([`rootfs`]), namespaces ([`enter`]: bubblewrap in a private mount
//! namespace), resource limits ([`limits`]), and what a machine lacks to
//! do any of it ([`checks`]).

pub mod checks;
pub mod enter;
pub mod limits;
pub mod rootfs;
