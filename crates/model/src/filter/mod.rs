//! Search filter evaluation (RFC 4511 section 4.5.1.7), three-valued.
//!
//! A filter is compiled once per search ([`CompiledFilter::compile`]): attribute
//! descriptions resolved to their types and subtypes, assertion values normalized by the
//! rule that will compare them, every part that cannot be evaluated (an undefined attribute
//! type, a type with no suitable rule, an assertion value invalid for the rule, an unknown
//! filter choice) turned into the constant Undefined. Evaluating it against an entry then
//! only normalizes the entry's values and compares keys; it walks the compiled nodes with a
//! fixed stack and allocates nothing beyond the caller's scratch buffer.
//!
//! A server enforcing access control hides the types a requester may not search
//! ([`CompiledFilter::hide`]: each assertion on them becomes Undefined).

mod compile;
mod eval;
mod restrict;

pub use compile::CompiledFilter;

/// A three-valued truth (RFC 4511 section 4.5.1.7): a search returns an entry only when
/// its filter is `True`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tri {
    /// The filter matches.
    True,
    /// The filter does not match.
    False,
    /// The filter cannot be evaluated (e.g. an undefined attribute type).
    Undefined,
}

impl Tri {
    /// `and`: FALSE if any is FALSE, else Undefined if any is Undefined, else TRUE.
    pub fn and(self, other: Tri) -> Tri {
        match (self, other) {
            (Tri::False, _) | (_, Tri::False) => Tri::False,
            (Tri::Undefined, _) | (_, Tri::Undefined) => Tri::Undefined,
            _ => Tri::True,
        }
    }

    /// `or`: TRUE if any is TRUE, else Undefined if any is Undefined, else FALSE.
    pub fn or(self, other: Tri) -> Tri {
        match (self, other) {
            (Tri::True, _) | (_, Tri::True) => Tri::True,
            (Tri::Undefined, _) | (_, Tri::Undefined) => Tri::Undefined,
            _ => Tri::False,
        }
    }

    /// `not`: TRUE and FALSE swap; Undefined stays Undefined.
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Tri {
        match self {
            Tri::True => Tri::False,
            Tri::False => Tri::True,
            Tri::Undefined => Tri::Undefined,
        }
    }

    /// A boolean as TRUE or FALSE.
    pub fn from_bool(b: bool) -> Tri {
        if b {
            Tri::True
        } else {
            Tri::False
        }
    }
}
