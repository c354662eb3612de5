//! `larch-model`: what a directory *means*, independent of storage and sockets.
//!
//! - [`dn`]: distinguished names (RFC 4514): parsing, escaping, printing, and the
//!   normalized form used as a map key.
//! - [`schema`]: the schema (RFC 4512): attribute types, object classes, syntaxes and
//!   matching rules as loaded from the shipped and the operator's schema files.
//! - [`syntax`]: attribute syntax validators (RFC 4517).
//! - [`matching`]: matching rules with RFC 4518 string preparation; each turns a value into
//!   the key that equality, ordering and substring tests compare.
//! - [`entry`]: entries, in the owned form a write builds and the compact BER form the
//!   store keeps; schema checking and modifications.
//! - [`filter`]: three-valued search filter evaluation against entries.
//! - [`ModelError`]: every rule a request can break, with its RFC 4511 result code.
//!
//! What it must not know: sockets, files other than schema files it is handed, the
//! write-ahead log, threads, access control.

#![forbid(unsafe_code)]

pub mod dn;
pub mod entry;
mod error;
pub mod filter;
pub mod matching;
pub mod schema;
pub mod syntax;
pub mod varint;

pub use error::ModelError;
