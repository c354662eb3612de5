//! The LDAPv3 operations of RFC 4511 section 4.2 to 4.14, one file each. Each type decodes
//! from the contents of its application-tagged element and encodes those contents back.

mod abandon;
mod add;
mod bind;
mod compare;
mod delete;
mod entry;
mod extended;
mod modify;
mod modify_dn;
mod search;

pub use abandon::AbandonRequest;
pub use add::AddRequest;
pub use bind::{Authentication, BindRequest, BindResponse};
pub use compare::CompareRequest;
pub use delete::DelRequest;
pub use entry::{
    encode_search_result_entry, encode_search_result_entry_with_controls, PartialAttribute,
    SearchResultEntry, SearchResultReference,
};
pub use extended::{ExtendedRequest, ExtendedResponse, IntermediateResponse};
pub use modify::{Change, ModifyOperation, ModifyRequest};
pub use modify_dn::ModifyDnRequest;
pub use search::{DerefAliases, SearchRequest, SearchScope};
