//! Authentication: checking credentials (the userPassword storage schemes in
//! [`password`]).

pub mod password;
