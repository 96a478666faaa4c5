//! Integration tests of the permission engine, in one test binary.

mod adversarial;
mod blind_spots;
mod conformance;
mod differential;
mod loading;
mod properties;
mod robustness;
mod support;
