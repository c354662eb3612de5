//! Why a configuration cannot be used: [`ConfigError`], defined in [`crate::config_error`]
//! so that access control, which the configuration compiles its rules with, can report
//! with it too.

pub use crate::config_error::{ConfigError, Origin, Position};
