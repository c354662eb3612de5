//! Authentication: the Bind decisions ([`bind`]), the userPassword storage schemes
//! ([`password`]) and the failed-bind throttle ([`throttle`]).

pub mod bind;
pub mod password;
pub mod throttle;
