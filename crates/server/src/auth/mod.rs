//! Authentication: the Bind decisions ([`bind`]), SASL mechanisms ([`sasl`]), password
//! policy in a bind ([`policy`]; on a cluster's follower, recorded by the leader:
//! [`cluster_record`]) and the confidentiality policy ([`confidentiality`]). What the directory itself holds for them
//! lives below it: the userPassword storage schemes ([`crate::password`]) and the
//! failed-bind throttle ([`crate::bind_throttle`]).

pub mod bind;
pub mod cluster_record;
pub mod confidentiality;
pub mod policy;
pub mod sasl;

/// The userPassword schemes, also at the path they had when they lived here.
pub use crate::password;
