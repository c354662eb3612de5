//! Validation of a BER filter, iterative with an explicit, fixed-size stack.
//!
//! Steps, for each element met in document order:
//! 1. read its tag and length, and check it ends within its parent;
//! 2. count it as a child of its parent (a `not` takes exactly one);
//! 3. `and`/`or`/`not`: open a frame (at most `MAX_FILTER_DEPTH`) and descend into it;
//!    a leaf: validate its contents completely and step over it;
//! 4. close every frame whose end has been reached.

use super::{filter_tag as ft, AttributeValueAssertion, MatchingRuleAssertion, Substring, SubstringFilter};
use crate::ber::tag;
use crate::error::{DecodeError, DecodeErrorKind, Result};
use crate::limits::MAX_FILTER_DEPTH;

const CTX: &str = "filter";

#[derive(Clone, Copy)]
struct Frame {
    end: usize,
    is_not: bool,
    children: u32,
}

/// Validates that `tlv` is exactly one well-formed filter.
pub(super) fn validate(tlv: &[u8]) -> Result<()> {
    let mut stack = [Frame {
        end: 0,
        is_not: false,
        children: 0,
    }; MAX_FILTER_DEPTH];
    let mut depth = 0usize;
    let mut pos = 0usize;
    loop {
        let limit = if depth == 0 {
            tlv.len()
        } else {
            stack[depth - 1].end
        };
        let (t, len, hdr) = crate::ber::reader::read_header(&tlv[pos..limit], CTX)?;
        let start = pos + hdr;
        if len > (limit - start) as u64 {
            return Err(DecodeError::new(DecodeErrorKind::Truncated, CTX));
        }
        let end = start + len as usize;
        if depth > 0 {
            let parent = &mut stack[depth - 1];
            parent.children += 1;
            if parent.is_not && parent.children > 1 {
                return Err(DecodeError::new(DecodeErrorKind::NotArity, CTX));
            }
        }
        match t {
            ft::AND | ft::OR | ft::NOT => {
                if depth == MAX_FILTER_DEPTH {
                    return Err(DecodeError::new(
                        DecodeErrorKind::FilterTooDeep {
                            limit: MAX_FILTER_DEPTH,
                        },
                        CTX,
                    ));
                }
                stack[depth] = Frame {
                    end,
                    is_not: t == ft::NOT,
                    children: 0,
                };
                depth += 1;
                pos = start;
            }
            _ => {
                validate_leaf(t, &tlv[start..end])?;
                pos = end;
            }
        }
        while depth > 0 && pos == stack[depth - 1].end {
            let frame = stack[depth - 1];
            if frame.is_not && frame.children != 1 {
                return Err(DecodeError::new(DecodeErrorKind::NotArity, CTX));
            }
            depth -= 1;
        }
        if depth == 0 {
            return if pos == tlv.len() {
                Ok(())
            } else {
                Err(DecodeError::new(DecodeErrorKind::TrailingData, CTX))
            };
        }
    }
}

fn validate_leaf(t: u8, c: &[u8]) -> Result<()> {
    match t {
        ft::EQUALITY | ft::GREATER_OR_EQUAL | ft::LESS_OR_EQUAL | ft::APPROX => {
            AttributeValueAssertion::decode_contents(c, "filter.AttributeValueAssertion").map(|_| ())
        }
        ft::PRESENT => Ok(()),
        ft::SUBSTRINGS => {
            let s = SubstringFilter::decode_contents(c)?;
            validate_substring_order(&s)
        }
        ft::EXTENSIBLE => {
            let m = MatchingRuleAssertion::decode_contents(c)?;
            if m.rule.is_none() && m.description.is_none() {
                return Err(DecodeError::new(
                    DecodeErrorKind::ExtensibleMatchIncomplete,
                    "filter.extensibleMatch",
                ));
            }
            Ok(())
        }
        // An unknown choice of the extensible CHOICE: kept, evaluated as Undefined.
        t if t & tag::CLASS_MASK == tag::CONTEXT => Ok(()),
        found => Err(DecodeError::new(DecodeErrorKind::InvalidTag { found }, CTX)),
    }
}

fn validate_substring_order(s: &SubstringFilter<'_>) -> Result<()> {
    const SUB_CTX: &str = "filter.substrings";
    let mut count = 0usize;
    let mut seen_final = false;
    for (i, part) in s.substrings.iter().enumerate() {
        count += 1;
        let ok = match part {
            Substring::Initial(_) => i == 0,
            Substring::Any(_) => !seen_final,
            Substring::Final(_) => !seen_final,
        };
        if !ok {
            return Err(DecodeError::new(DecodeErrorKind::SubstringOrder, SUB_CTX));
        }
        seen_final |= matches!(part, Substring::Final(_));
    }
    if count == 0 {
        return Err(DecodeError::new(DecodeErrorKind::Empty, SUB_CTX));
    }
    Ok(())
}
