//! Authentication: checking credentials (the userPassword storage schemes in
//! [`password`]), SASL mechanisms ([`sasl`]), and the confidentiality policy
//! ([`confidentiality`]).

pub mod bind;
pub mod confidentiality;
pub mod password;
pub mod sasl;
