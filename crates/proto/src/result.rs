//! `LDAPResult` (RFC 4511 section 4.1.9) and the result codes.

use std::fmt;

use crate::ber::{tag, Reader, Writer};
use crate::error::Result;
use crate::seq::SeqOf;

/// An LDAP result code. Kept open (a number, not a closed enum) because RFC 4511 lets
/// the set grow: a client must accept codes it does not know.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResultCode(pub u32);

macro_rules! result_codes {
    ($($name:ident = $value:literal, $text:literal;)*) => {
        impl ResultCode {
            $(
                #[doc = concat!("`", $text, "` (", stringify!($value), ")")]
                pub const $name: ResultCode = ResultCode($value);
            )*

            /// The name RFC 4511 (or the RFC that added the code) gives it, if known.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some($text),)*
                    _ => None,
                }
            }
        }
    };
}

result_codes! {
    SUCCESS = 0, "success";
    OPERATIONS_ERROR = 1, "operationsError";
    PROTOCOL_ERROR = 2, "protocolError";
    TIME_LIMIT_EXCEEDED = 3, "timeLimitExceeded";
    SIZE_LIMIT_EXCEEDED = 4, "sizeLimitExceeded";
    COMPARE_FALSE = 5, "compareFalse";
    COMPARE_TRUE = 6, "compareTrue";
    AUTH_METHOD_NOT_SUPPORTED = 7, "authMethodNotSupported";
    STRONGER_AUTH_REQUIRED = 8, "strongerAuthRequired";
    REFERRAL = 10, "referral";
    ADMIN_LIMIT_EXCEEDED = 11, "adminLimitExceeded";
    UNAVAILABLE_CRITICAL_EXTENSION = 12, "unavailableCriticalExtension";
    CONFIDENTIALITY_REQUIRED = 13, "confidentialityRequired";
    SASL_BIND_IN_PROGRESS = 14, "saslBindInProgress";
    NO_SUCH_ATTRIBUTE = 16, "noSuchAttribute";
    UNDEFINED_ATTRIBUTE_TYPE = 17, "undefinedAttributeType";
    INAPPROPRIATE_MATCHING = 18, "inappropriateMatching";
    CONSTRAINT_VIOLATION = 19, "constraintViolation";
    ATTRIBUTE_OR_VALUE_EXISTS = 20, "attributeOrValueExists";
    INVALID_ATTRIBUTE_SYNTAX = 21, "invalidAttributeSyntax";
    NO_SUCH_OBJECT = 32, "noSuchObject";
    ALIAS_PROBLEM = 33, "aliasProblem";
    INVALID_DN_SYNTAX = 34, "invalidDNSyntax";
    ALIAS_DEREFERENCING_PROBLEM = 36, "aliasDereferencingProblem";
    INAPPROPRIATE_AUTHENTICATION = 48, "inappropriateAuthentication";
    INVALID_CREDENTIALS = 49, "invalidCredentials";
    INSUFFICIENT_ACCESS_RIGHTS = 50, "insufficientAccessRights";
    BUSY = 51, "busy";
    UNAVAILABLE = 52, "unavailable";
    UNWILLING_TO_PERFORM = 53, "unwillingToPerform";
    LOOP_DETECT = 54, "loopDetect";
    SORT_CONTROL_MISSING = 60, "sortControlMissing";
    OFFSET_RANGE_ERROR = 61, "offsetRangeError";
    NAMING_VIOLATION = 64, "namingViolation";
    OBJECT_CLASS_VIOLATION = 65, "objectClassViolation";
    NOT_ALLOWED_ON_NON_LEAF = 66, "notAllowedOnNonLeaf";
    NOT_ALLOWED_ON_RDN = 67, "notAllowedOnRDN";
    ENTRY_ALREADY_EXISTS = 68, "entryAlreadyExists";
    OBJECT_CLASS_MODS_PROHIBITED = 69, "objectClassModsProhibited";
    AFFECTS_MULTIPLE_DSAS = 71, "affectsMultipleDSAs";
    VIRTUAL_LIST_VIEW_ERROR = 76, "virtualListViewError";
    OTHER = 80, "other";
    CANCELED = 118, "canceled";
    NO_SUCH_OPERATION = 119, "noSuchOperation";
    TOO_LATE = 120, "tooLate";
    CANNOT_CANCEL = 121, "cannotCancel";
    ASSERTION_FAILED = 122, "assertionFailed";
    AUTHORIZATION_DENIED = 123, "authorizationDenied";
    E_SYNC_REFRESH_REQUIRED = 4096, "e-syncRefreshRequired";
}

impl fmt::Debug for ResultCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n}({})", self.0),
            None => write!(f, "ResultCode({})", self.0),
        }
    }
}

impl fmt::Display for ResultCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Tag of the optional referral inside an LDAPResult (`[3]`, constructed).
pub const REFERRAL_TAG: u8 = tag::context_constructed(3);

/// The tags of the LDAPResult components, which every response SEQUENCE starts with.
pub(crate) const RESULT_COMPONENTS: [u8; 3] = [tag::ENUMERATED, tag::OCTET_STRING, REFERRAL_TAG];

/// `LDAPResult`: the common part of every response.
///
/// ```
/// use larch_proto::{LdapMessage, LdapResult, ProtocolOp, ResultCode};
/// let done = LdapMessage::new(2, ProtocolOp::SearchResultDone(LdapResult::new(
///     ResultCode::NO_SUCH_OBJECT, b"dc=example,dc=com", b"no such entry")));
/// let mut out = Vec::new();
/// done.encode(&mut out);
/// let back = LdapMessage::decode(&out).unwrap();
/// assert_eq!(back, done);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LdapResult<'a> {
    /// The result code.
    pub code: ResultCode,
    /// `matchedDN`: for noSuchObject and the like, the deepest existing ancestor.
    pub matched_dn: &'a [u8],
    /// `diagnosticMessage`: text for a person.
    pub diagnostic_message: &'a [u8],
    /// Referral URIs, present only with [`ResultCode::REFERRAL`].
    pub referral: Option<SeqOf<'a, &'a [u8]>>,
}

impl<'a> LdapResult<'a> {
    /// A result with no referral.
    pub const fn new(code: ResultCode, matched_dn: &'a [u8], diagnostic_message: &'a [u8]) -> Self {
        LdapResult {
            code,
            matched_dn,
            diagnostic_message,
            referral: None,
        }
    }

    /// A plain `success` result.
    pub const fn success() -> Self {
        Self::new(ResultCode::SUCCESS, b"", b"")
    }

    /// Reads the LDAPResult components from the start of `r` (COMPONENTS OF).
    pub(crate) fn decode_from(r: &mut Reader<'a>) -> Result<Self> {
        let code = r.read_integer_in(tag::ENUMERATED, 0, i64::from(i32::MAX), "LDAPResult.resultCode")?;
        let matched_dn = r.read_octets(tag::OCTET_STRING, "LDAPResult.matchedDN")?;
        let diagnostic_message = r.read_octets(tag::OCTET_STRING, "LDAPResult.diagnosticMessage")?;
        let referral = match r.read_optional(REFERRAL_TAG, "LDAPResult.referral")? {
            Some(contents) => Some(non_empty_uris(contents, "LDAPResult.referral")?),
            None => None,
        };
        Ok(LdapResult {
            code: ResultCode(code as u32),
            matched_dn,
            diagnostic_message,
            referral,
        })
    }

    /// Writes the LDAPResult components.
    pub(crate) fn encode_into(&self, w: &mut Writer<'_>) {
        w.integer(tag::ENUMERATED, i64::from(self.code.0));
        w.octet_string(self.matched_dn);
        w.octet_string(self.diagnostic_message);
        if let Some(uris) = &self.referral {
            let m = w.begin(REFERRAL_TAG);
            uris.encode_contents(w);
            w.end(m);
        }
    }

    /// Decodes a bare LDAPResult (the contents of e.g. an AddResponse).
    pub(crate) fn decode_contents(contents: &'a [u8], ctx: &'static str) -> Result<Self> {
        let mut r = Reader::new(contents);
        let result = Self::decode_from(&mut r)?;
        r.finish_sequence(ctx, &RESULT_COMPONENTS)?;
        Ok(result)
    }
}

/// Validates a `SEQUENCE SIZE (1..MAX) OF URI`.
pub(crate) fn non_empty_uris<'a>(contents: &'a [u8], ctx: &'static str) -> Result<SeqOf<'a, &'a [u8]>> {
    let uris = SeqOf::decode_contents(contents).map_err(|e| e.within(ctx))?;
    if uris.is_empty() {
        return Err(crate::error::DecodeError::new(
            crate::error::DecodeErrorKind::Empty,
            ctx,
        ));
    }
    Ok(uris)
}
