//! Authentication: checking credentials (the userPassword storage schemes in
//! [`password`]).

pub mod bind;
pub mod password;
