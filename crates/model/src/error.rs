//! Errors of the directory model, each with the RFC 4511 result code a server answers with.
//! This is the one place where model failures become result codes.

use larch_proto::ResultCode;

use crate::dn::DnError;

/// A request broke a rule of the directory model. The text is the diagnostic message: it
/// names the attribute, class or value concerned, for a person to read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// A DN that does not parse or cannot be normalized (`invalidDNSyntax`, 34).
    #[error(transparent)]
    InvalidDn(#[from] DnError),
    /// An attribute type the schema does not define (`undefinedAttributeType`, 17).
    #[error("{0}")]
    UndefinedAttributeType(String),
    /// A value that does not follow its attribute's syntax (`invalidAttributeSyntax`, 21).
    #[error("{0}")]
    InvalidAttributeSyntax(String),
    /// A value given twice, or added when present (`attributeOrValueExists`, 20).
    #[error("{0}")]
    AttributeOrValueExists(String),
    /// SINGLE-VALUE with several values, NO-USER-MODIFICATION set by a user, an
    /// increment of a non-integer (`constraintViolation`, 19).
    #[error("{0}")]
    ConstraintViolation(String),
    /// A value or attribute to delete that is not there (`noSuchAttribute`, 16).
    #[error("{0}")]
    NoSuchAttribute(String),
    /// Object class rules: missing MUST, attribute not allowed, no or several structural
    /// classes, unknown class (`objectClassViolation`, 65).
    #[error("{0}")]
    ObjectClassViolation(String),
    /// The RDN's values are not in the entry (`namingViolation`, 64).
    #[error("{0}")]
    NamingViolation(String),
    /// A modification would remove a value of the RDN (`notAllowedOnRDN`, 67).
    #[error("{0}")]
    NotAllowedOnRdn(String),
    /// The structural object class of an entry may not change (`objectClassModsProhibited`, 69).
    #[error("{0}")]
    ObjectClassModsProhibited(String),
    /// A request that breaks a rule of the protocol itself, such as a modify/add with no
    /// values (`protocolError`, 2).
    #[error("{0}")]
    ProtocolError(String),
    /// An assertion the attribute's rules cannot evaluate (`inappropriateMatching`, 18).
    #[error("{0}")]
    InappropriateMatching(String),
}

impl ModelError {
    /// The RFC 4511 result code for this error.
    pub fn result_code(&self) -> ResultCode {
        match self {
            ModelError::InvalidDn(_) => ResultCode::INVALID_DN_SYNTAX,
            ModelError::UndefinedAttributeType(_) => ResultCode::UNDEFINED_ATTRIBUTE_TYPE,
            ModelError::InvalidAttributeSyntax(_) => ResultCode::INVALID_ATTRIBUTE_SYNTAX,
            ModelError::AttributeOrValueExists(_) => ResultCode::ATTRIBUTE_OR_VALUE_EXISTS,
            ModelError::ConstraintViolation(_) => ResultCode::CONSTRAINT_VIOLATION,
            ModelError::NoSuchAttribute(_) => ResultCode::NO_SUCH_ATTRIBUTE,
            ModelError::ObjectClassViolation(_) => ResultCode::OBJECT_CLASS_VIOLATION,
            ModelError::NamingViolation(_) => ResultCode::NAMING_VIOLATION,
            ModelError::NotAllowedOnRdn(_) => ResultCode::NOT_ALLOWED_ON_RDN,
            ModelError::ObjectClassModsProhibited(_) => ResultCode::OBJECT_CLASS_MODS_PROHIBITED,
            ModelError::InappropriateMatching(_) => ResultCode::INAPPROPRIATE_MATCHING,
            ModelError::ProtocolError(_) => ResultCode::PROTOCOL_ERROR,
        }
    }
}
