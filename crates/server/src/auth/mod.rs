//! Authentication: the Bind decisions ([`bind`]), the userPassword storage schemes
//! ([`password`]), SASL mechanisms ([`sasl`]), the confidentiality policy
//! ([`confidentiality`]) and the failed-bind throttle ([`throttle`]).

pub mod bind;
pub mod confidentiality;
pub mod password;
pub mod sasl;
pub mod throttle;
