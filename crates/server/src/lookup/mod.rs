//! The lookups that binds, writes and searches share, on one store version: none of them
//! knows the directory, the connection or the operation that asks.
//!
//! - [`class`]: whether an entry is a referral or an alias, from the `objectClass` index
//!   (the class keys worked out once per store, [`IndexedClass`]);
//! - [`last_base`]: a connection's last normalized search base, reused for its next search
//!   of that base and for a Bind DN below it;
//! - [`referral`]: the `referral` result for an update, a compare or a search base at or
//!   below a referral entry (the check made before access control), and the rewriting of
//!   the entry's URLs, which continuation references (`crate::search::referral`) share.

pub mod class;
pub mod last_base;
pub mod referral;

pub use class::{IndexedClass, ALIAS_CLASS, REFERRAL_CLASS};
pub use last_base::{LastBase, MAX_CACHED_BASE};
pub use referral::{referral_above, referral_above_text};
