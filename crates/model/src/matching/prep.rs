//! RFC 4518 string preparation: Transcode, Map, Normalize, Prohibit, then Insignificant
//! Character Handling.
//!
//! 1. Transcode: values arrive as UTF-8; anything else is invalid.
//! 2. Map (2.2): soft hyphens, the combining grapheme joiner, variation selectors, the
//!    object replacement character, zero width space and every other control or format
//!    code point RFC 4518 lists are removed; tab, LF, VT, FF, CR, NEL and every separator
//!    code point (Zs, Zl, Zp) become SPACE. Case-ignoring rules then fold case with
//!    [`fold_char`]: `char::to_lowercase` (full Unicode lower-casing, current Unicode
//!    version) plus the few RFC 3454 B.2 mappings where folding differs from
//!    lower-casing (`ß` -> `ss`, final sigma, the Greek and Latin symbol variants, ...).
//!    What remains different from B.2: B.2 is frozen at Unicode 3.2 and also maps some
//!    compatibility characters that NFKC alone would leave in upper case (`㎒` -> `mhz`);
//!    instead of that table, folding is simply applied again after NFKC (step 3), which
//!    gives the same results for those characters and keeps the output stable.
//! 3. Normalize: NFKC, via the `unicode-normalization` crate. Skipped when every code
//!    point is below U+0300 without a compatibility decomposition, or the crate's quick
//!    check says the string is already NFKC. Cost (benches/matching.rs, one core): an
//!    ASCII name's caseIgnoreMatch key takes ~13 ns (one pass, no Unicode work), a Latin
//!    name with accents ~180 ns, Greek or fullwidth text 450-650 ns.
//! 4. Prohibit (2.4): unassigned code points (by the crate's current Unicode tables,
//!    not the Unicode 3.2 table A.1 of RFC 3454: refusing every character added since 2002
//!    would refuse many names stored today), private use, non-characters, U+FFFD, and the
//!    RFC 3454 C.8 display-changing code points that survive mapping (U+0340, U+0341).
//!    Surrogates cannot occur in Rust strings.
//! 5. Insignificant character handling (2.6), per rule: spaces ([`Spaces`]), numeric
//!    strings (all spaces removed) and telephone numbers (all spaces and hyphens removed).
//!
//! A "space" in step 5 is U+0020 not followed by a combining mark, as RFC 4518 2.6.1 says.
//!
//! Equality keys are written in a compact form: no leading or trailing space and one space
//! between words, or a single space for a string with no word. RFC 4518 2.6.1 writes them
//! with one space at each end and two between words (two spaces for no word); the two
//! forms are in one-to-one correspondence, so equality is the same, and because SPACE is
//! the smallest code point that survives mapping, code point order is the same too.
//! Substring keys use the RFC form, which substring matching needs.

use unicode_normalization::char::{is_combining_mark, is_public_assigned};
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

use super::{InvalidValue, SubstringPosition};

/// How many times folding and NFKC are alternated before giving up on a fixed point.
/// One round suffices for all but a handful of compatibility characters; two for those.
const MAX_FOLD_ROUNDS: usize = 3;

/// Step 2 for one code point: `None` maps to nothing, `Some(' ')` to SPACE.
fn map_char(c: char) -> Option<char> {
    match c {
        // Mapped to nothing: soft hyphens, CGJ, variation selectors, ORC, zero width space,
        // and the control and format code points of RFC 4518 2.2.
        '\u{00AD}'
        | '\u{1806}'
        | '\u{034F}'
        | '\u{180B}'..='\u{180D}'
        | '\u{FE00}'..='\u{FE0F}'
        | '\u{FFFC}' => None,
        '\u{200B}' => None,
        '\u{0009}'..='\u{000D}' | '\u{0085}' => Some(' '),
        '\u{0000}'..='\u{0008}'
        | '\u{000E}'..='\u{001F}'
        | '\u{007F}'..='\u{0084}'
        | '\u{0086}'..='\u{009F}'
        | '\u{06DD}'
        | '\u{070F}'
        | '\u{180E}'
        | '\u{200C}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2063}'
        | '\u{206A}'..='\u{206F}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}'
        | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0001}'
        | '\u{E0020}'..='\u{E007F}' => None,
        // Separators (Zs, Zl, Zp) become SPACE.
        '\u{00A0}'
        | '\u{1680}'
        | '\u{2000}'..='\u{200A}'
        | '\u{2028}'
        | '\u{2029}'
        | '\u{202F}'
        | '\u{205F}'
        | '\u{3000}' => Some(' '),
        c => Some(c),
    }
}

/// Case folding of one code point, appended to `out`: full lower-casing, except for the
/// code points whose RFC 3454 B.2 (full case folding) result differs from their
/// lower-case form.
pub(crate) fn fold_char(c: char, out: &mut String) {
    let special: Option<&str> = match c {
        '\u{00DF}' | '\u{1E9E}' => Some("ss"), // ß, ẞ
        '\u{00B5}' => Some("\u{03BC}"),        // micro sign -> mu
        '\u{017F}' => Some("s"),               // long s
        '\u{0345}' | '\u{1FBE}' => Some("\u{03B9}"),
        '\u{03C2}' => Some("\u{03C3}"), // final sigma
        '\u{03D0}' => Some("\u{03B2}"),
        '\u{03D1}' => Some("\u{03B8}"),
        '\u{03D5}' => Some("\u{03C6}"),
        '\u{03D6}' => Some("\u{03C0}"),
        '\u{03F0}' => Some("\u{03BA}"),
        '\u{03F1}' => Some("\u{03C1}"),
        '\u{03F5}' => Some("\u{03B5}"),
        '\u{1E9B}' => Some("\u{1E61}"),
        '\u{0149}' => Some("\u{02BC}n"),
        '\u{01F0}' => Some("j\u{030C}"),
        _ => None,
    };
    match special {
        Some(s) => out.push_str(s),
        None if c.is_ascii() => out.push(c.to_ascii_lowercase()),
        None if ('\u{1C80}'..='\u{1FFC}').contains(&c) => {
            match FOLDED_APART.binary_search_by_key(&c, |(k, _)| *k) {
                Ok(i) => out.push_str(FOLDED_APART[i].1),
                Err(_) => out.extend(c.to_lowercase()),
            }
        }
        None => out.extend(c.to_lowercase()),
    }
}

/// Full case folding (Unicode's CaseFolding.txt, status C and F) of the code points whose
/// lower-case form is not their folding and that an upper-cased value would otherwise
/// tell apart: Cyrillic's rounded letters (U+1C80-U+1C88) and Greek's letters with the iota
/// subscript or adscript (U+1F80-U+1FFC), which fold to the letter and a separate iota.
/// Sorted, for a binary search.
const FOLDED_APART: &[(char, &str)] = &[
    ('\u{1C80}', "\u{0432}"),
    ('\u{1C81}', "\u{0434}"),
    ('\u{1C82}', "\u{043E}"),
    ('\u{1C83}', "\u{0441}"),
    ('\u{1C84}', "\u{0442}"),
    ('\u{1C85}', "\u{0442}"),
    ('\u{1C86}', "\u{044A}"),
    ('\u{1C87}', "\u{0463}"),
    ('\u{1C88}', "\u{A64B}"),
    ('\u{1F80}', "\u{1F00}\u{03B9}"),
    ('\u{1F81}', "\u{1F01}\u{03B9}"),
    ('\u{1F82}', "\u{1F02}\u{03B9}"),
    ('\u{1F83}', "\u{1F03}\u{03B9}"),
    ('\u{1F84}', "\u{1F04}\u{03B9}"),
    ('\u{1F85}', "\u{1F05}\u{03B9}"),
    ('\u{1F86}', "\u{1F06}\u{03B9}"),
    ('\u{1F87}', "\u{1F07}\u{03B9}"),
    ('\u{1F88}', "\u{1F00}\u{03B9}"),
    ('\u{1F89}', "\u{1F01}\u{03B9}"),
    ('\u{1F8A}', "\u{1F02}\u{03B9}"),
    ('\u{1F8B}', "\u{1F03}\u{03B9}"),
    ('\u{1F8C}', "\u{1F04}\u{03B9}"),
    ('\u{1F8D}', "\u{1F05}\u{03B9}"),
    ('\u{1F8E}', "\u{1F06}\u{03B9}"),
    ('\u{1F8F}', "\u{1F07}\u{03B9}"),
    ('\u{1F90}', "\u{1F20}\u{03B9}"),
    ('\u{1F91}', "\u{1F21}\u{03B9}"),
    ('\u{1F92}', "\u{1F22}\u{03B9}"),
    ('\u{1F93}', "\u{1F23}\u{03B9}"),
    ('\u{1F94}', "\u{1F24}\u{03B9}"),
    ('\u{1F95}', "\u{1F25}\u{03B9}"),
    ('\u{1F96}', "\u{1F26}\u{03B9}"),
    ('\u{1F97}', "\u{1F27}\u{03B9}"),
    ('\u{1F98}', "\u{1F20}\u{03B9}"),
    ('\u{1F99}', "\u{1F21}\u{03B9}"),
    ('\u{1F9A}', "\u{1F22}\u{03B9}"),
    ('\u{1F9B}', "\u{1F23}\u{03B9}"),
    ('\u{1F9C}', "\u{1F24}\u{03B9}"),
    ('\u{1F9D}', "\u{1F25}\u{03B9}"),
    ('\u{1F9E}', "\u{1F26}\u{03B9}"),
    ('\u{1F9F}', "\u{1F27}\u{03B9}"),
    ('\u{1FA0}', "\u{1F60}\u{03B9}"),
    ('\u{1FA1}', "\u{1F61}\u{03B9}"),
    ('\u{1FA2}', "\u{1F62}\u{03B9}"),
    ('\u{1FA3}', "\u{1F63}\u{03B9}"),
    ('\u{1FA4}', "\u{1F64}\u{03B9}"),
    ('\u{1FA5}', "\u{1F65}\u{03B9}"),
    ('\u{1FA6}', "\u{1F66}\u{03B9}"),
    ('\u{1FA7}', "\u{1F67}\u{03B9}"),
    ('\u{1FA8}', "\u{1F60}\u{03B9}"),
    ('\u{1FA9}', "\u{1F61}\u{03B9}"),
    ('\u{1FAA}', "\u{1F62}\u{03B9}"),
    ('\u{1FAB}', "\u{1F63}\u{03B9}"),
    ('\u{1FAC}', "\u{1F64}\u{03B9}"),
    ('\u{1FAD}', "\u{1F65}\u{03B9}"),
    ('\u{1FAE}', "\u{1F66}\u{03B9}"),
    ('\u{1FAF}', "\u{1F67}\u{03B9}"),
    ('\u{1FB2}', "\u{1F70}\u{03B9}"),
    ('\u{1FB3}', "\u{03B1}\u{03B9}"),
    ('\u{1FB4}', "\u{03AC}\u{03B9}"),
    ('\u{1FB7}', "\u{03B1}\u{0342}\u{03B9}"),
    ('\u{1FBC}', "\u{03B1}\u{03B9}"),
    ('\u{1FC2}', "\u{1F74}\u{03B9}"),
    ('\u{1FC3}', "\u{03B7}\u{03B9}"),
    ('\u{1FC4}', "\u{03AE}\u{03B9}"),
    ('\u{1FC7}', "\u{03B7}\u{0342}\u{03B9}"),
    ('\u{1FCC}', "\u{03B7}\u{03B9}"),
    ('\u{1FF2}', "\u{1F7C}\u{03B9}"),
    ('\u{1FF3}', "\u{03C9}\u{03B9}"),
    ('\u{1FF4}', "\u{03CE}\u{03B9}"),
    ('\u{1FF7}', "\u{03C9}\u{0342}\u{03B9}"),
    ('\u{1FFC}', "\u{03C9}\u{03B9}"),
];

/// Blocks in which every code point is assigned (checked against the crate's tables by a
/// test), for the scripts most names are written in. `is_public_assigned` is a long
/// `match` costing tens of nanoseconds per code point; this answers first.
fn surely_assigned(c: char) -> bool {
    matches!(c,
        '\u{0000}'..='\u{0377}'       // Latin, IPA, spacing modifiers, combining marks
        | '\u{03A3}'..='\u{052F}'     // Greek, Cyrillic
        | '\u{0600}'..='\u{070D}'     // Arabic
        | '\u{1E00}'..='\u{1F15}'     // Latin Extended Additional, Greek Extended (start)
        | '\u{2000}'..='\u{2064}'     // General Punctuation
        | '\u{3041}'..='\u{3096}'     // Hiragana
        | '\u{3099}'..='\u{30FF}'     // Katakana
        | '\u{3220}'..='\u{A48C}'     // CJK symbols, ideographs, Yi
        | '\u{AC00}'..='\u{D7A3}'     // Hangul syllables
        | '\u{FF01}'..='\u{FFBE}'     // fullwidth and halfwidth forms
        | '\u{1F300}'..='\u{1F6D9}'   // pictographs, emoticons
    )
}

fn is_prohibited(c: char) -> bool {
    // is_public_assigned is false for unassigned code points, non-characters and
    // private use; the rest are listed by RFC 4518 2.4.
    matches!(c, '\u{FFFD}' | '\u{0340}' | '\u{0341}') || !(surely_assigned(c) || is_public_assigned(c))
}

/// Code points that NFKC leaves alone in any context: below U+0300 (so no combining
/// mark, canonical combining class 0, and never the second half of a composition), minus
/// the ones with a compatibility decomposition. A test checks this against the crate.
fn nfkc_inert(c: char) -> bool {
    c < '\u{0300}'
        && !matches!(c,
            '\u{00A0}' | '\u{00A8}' | '\u{00AA}' | '\u{00AF}' | '\u{00B2}'..='\u{00B5}'
            | '\u{00B8}'..='\u{00BA}' | '\u{00BC}'..='\u{00BE}' | '\u{0132}' | '\u{0133}'
            | '\u{013F}' | '\u{0140}' | '\u{0149}' | '\u{017F}' | '\u{01C4}'..='\u{01CC}'
            | '\u{01F1}'..='\u{01F3}' | '\u{02B0}'..='\u{02B8}' | '\u{02D8}'..='\u{02DD}'
            | '\u{02E0}'..='\u{02E4}')
}

/// NFKC in place; true if it changed anything.
fn nfkc_in_place(s: &mut String) -> bool {
    if s.chars().all(nfkc_inert) || is_nfkc_quick(s.chars()) == IsNormalized::Yes {
        return false;
    }
    let normalized: String = s.nfkc().collect();
    let changed = normalized != *s;
    *s = normalized;
    changed
}

/// Steps 1-4: the prepared string, without insignificant character handling.
pub(crate) fn prepare(value: &[u8], fold: bool) -> Result<String, InvalidValue> {
    let s = std::str::from_utf8(value).map_err(|_| InvalidValue::new("the value is not UTF-8"))?;
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if let Some(m) = map_char(c) {
            if fold {
                fold_char(m, &mut out);
            } else {
                out.push(m);
            }
        }
    }
    let changed = nfkc_in_place(&mut out);
    if fold && changed {
        // NFKC can produce upper-case letters from compatibility characters (U+3392 ㎒ ->
        // "MHz"); fold again until nothing changes (RFC 3454 B.2 builds this into its
        // table).
        for _ in 0..MAX_FOLD_ROUNDS {
            let mut again = String::with_capacity(out.len());
            for c in out.chars() {
                fold_char(c, &mut again);
            }
            nfkc_in_place(&mut again);
            if again == out {
                break;
            }
            out = again;
        }
    }
    if !out.is_ascii() && out.chars().any(is_prohibited) {
        return Err(InvalidValue::new(
            "the value holds a prohibited or unassigned code point",
        ));
    }
    Ok(out)
}

/// Where a string being prepared stands: a whole value (or a non-substring assertion), or
/// a piece of a substring assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spaces {
    /// Equality and ordering keys, compact form: words separated by one space, no space
    /// at either end; a single space when there is no word (so that no key is empty and
    /// a DN printed with it stays a valid DN).
    Compact,
    /// A whole attribute value for substring matching, RFC 4518 2.6.1 form: one space at
    /// each end, two between words; exactly two spaces when there is no word.
    SubstringValue,
    /// A piece of a substring assertion (RFC 4518 2.6.1 second paragraph; inner runs of
    /// spaces become two spaces, as in the value, so that pieces spanning words match).
    Piece(SubstringPosition),
}

/// The words of a prepared string: runs of code points that are not spaces, where a
/// space is U+0020 not followed by a combining mark.
/// Returns (words, starts with space, ends with space).
fn words(s: &str) -> (Vec<&str>, bool, bool) {
    let mut words = Vec::new();
    let mut word_start: Option<usize> = None;
    let mut starts = false;
    let mut ends = false;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let is_space = c == ' ' && !chars.peek().is_some_and(|&(_, n)| is_combining_mark(n));
        if i == 0 {
            starts = is_space;
        }
        ends = is_space;
        match (is_space, word_start) {
            (true, Some(start)) => {
                words.push(&s[start..i]);
                word_start = None;
            }
            (false, None) => word_start = Some(i),
            _ => {}
        }
    }
    if let Some(start) = word_start {
        words.push(&s[start..]);
    }
    (words, starts, ends)
}

/// Step 5 for the space-handling rules: appends the key of a prepared string.
pub(crate) fn handle_spaces(s: &str, mode: Spaces, out: &mut Vec<u8>) {
    let (words, starts, ends) = words(s);
    let (lead, sep, trail): (&[u8], &[u8], &[u8]) = match mode {
        Spaces::Compact if words.is_empty() => (b" ", b"", b""),
        Spaces::Compact => (b"", b" ", b""),
        Spaces::SubstringValue if words.is_empty() => (b"  ", b"", b""),
        Spaces::SubstringValue => (b" ", b"  ", b" "),
        Spaces::Piece(_) if words.is_empty() => (b" ", b"", b""),
        Spaces::Piece(position) => {
            let lead: &[u8] = match position {
                SubstringPosition::Initial => b" ",
                _ if starts => b" ",
                _ => b"",
            };
            let trail: &[u8] = match position {
                SubstringPosition::Final => b" ",
                _ if ends => b" ",
                _ => b"",
            };
            (lead, b"  ", trail)
        }
    };
    out.extend_from_slice(lead);
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(sep);
        }
        out.extend_from_slice(w.as_bytes());
    }
    out.extend_from_slice(trail);
}

/// The fast path for equality keys of ASCII values with no control characters: mapping is
/// the identity, folding is ASCII lower-casing, NFKC is the identity and nothing is
/// prohibited, so the key is written in one pass. `false` if the value is not such a
/// string (then nothing was appended).
pub(crate) fn compact_ascii(value: &[u8], fold: bool, out: &mut Vec<u8>) -> bool {
    if !value.iter().all(|&b| (0x20..0x7f).contains(&b)) {
        return false;
    }
    // The prepared value is never longer than the value (one space when it is all spaces):
    // one allocation, where pushing into an empty buffer grew it two or three times.
    out.reserve(value.len().max(1));
    let mut pending_space = false;
    let mut any = false;
    for &b in value {
        if b == b' ' {
            pending_space = any;
            continue;
        }
        if pending_space {
            out.push(b' ');
            pending_space = false;
        }
        out.push(if fold { b.to_ascii_lowercase() } else { b });
        any = true;
    }
    if !any {
        out.push(b' ');
    }
    true
}

/// Steps 1-5 for the space-handling string rules.
pub(crate) fn prepare_spaces(
    value: &[u8],
    fold: bool,
    mode: Spaces,
    out: &mut Vec<u8>,
) -> Result<(), InvalidValue> {
    if mode == Spaces::Compact && compact_ascii(value, fold, out) {
        return Ok(());
    }
    let s = prepare(value, fold)?;
    handle_spaces(&s, mode, out);
    Ok(())
}

/// Steps 1-5 for numeric strings (2.6.2: every space removed) and telephone numbers
/// (2.6.3: every space and hyphen removed). Hyphens are HYPHEN-MINUS, ARMENIAN HYPHEN,
/// HYPHEN, NON-BREAKING HYPHEN, MINUS SIGN, SMALL HYPHEN-MINUS and FULLWIDTH HYPHEN-MINUS
/// not followed by a combining mark; NFKC has already turned the last two into `-`.
pub(crate) fn prepare_removing(value: &[u8], hyphens: bool, out: &mut Vec<u8>) -> Result<(), InvalidValue> {
    if value.iter().all(|&b| (0x20..0x7f).contains(&b)) {
        // Printable ASCII: mapping and NFKC are the identity, folding is ASCII.
        let insignificant = |b: u8| b == b' ' || (hyphens && b == b'-');
        out.extend(
            value
                .iter()
                .filter(|&&b| !insignificant(b))
                .map(u8::to_ascii_lowercase),
        );
        return Ok(());
    }
    let s = prepare(value, true)?;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let insignificant = c == ' '
            || (hyphens
                && matches!(
                    c,
                    '-' | '\u{058A}' | '\u{2010}' | '\u{2011}' | '\u{2212}' | '\u{FE63}' | '\u{FF0D}'
                ));
        if insignificant && !chars.peek().is_some_and(|&n| is_combining_mark(n)) {
            continue;
        }
        let mut buf = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(v: &str, fold: bool, mode: Spaces) -> String {
        let mut out = Vec::new();
        prepare_spaces(v.as_bytes(), fold, mode, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn an_upper_cased_value_folds_to_the_same_key() {
        // Every code point but one: `ı` (U+0131) folds to itself under RFC 3454 B.2 while
        // its upper case `I` folds to `i`, so upper-casing a Turkish value changes it.
        let mut text = String::new();
        for c in ('\u{80}'..=char::MAX).filter(|&c| c != '\u{0131}') {
            text.clear();
            text.push(c);
            let Ok(folded) = prepare(text.as_bytes(), true) else {
                continue;
            };
            let upper: String = c.to_uppercase().collect();
            if let Ok(upper_folded) = prepare(upper.as_bytes(), true) {
                assert_eq!(folded, upper_folded, "U+{:04X} {c} against {upper}", c as u32);
            }
        }
        assert_eq!(prepare("\u{1F80}".as_bytes(), true).unwrap(), "\u{1F00}\u{03B9}");
    }

    #[test]
    fn rfc4518_space_examples() {
        // 2.6.1: "foo<SPACE>bar<SPACE><SPACE>" as a value.
        assert_eq!(key("foo bar  ", false, Spaces::SubstringValue), " foo  bar ");
        assert_eq!(key("foo bar  ", false, Spaces::Compact), "foo bar");
        assert_eq!(
            key("foo bar  ", false, Spaces::Piece(SubstringPosition::Initial)),
            " foo  bar "
        );
        assert_eq!(
            key("foo bar  ", false, Spaces::Piece(SubstringPosition::Any)),
            "foo  bar "
        );
        assert_eq!(
            key("foo bar  ", false, Spaces::Piece(SubstringPosition::Final)),
            "foo  bar "
        );
        assert_eq!(key("   ", false, Spaces::SubstringValue), "  ");
        assert_eq!(key("   ", false, Spaces::Piece(SubstringPosition::Any)), " ");
        assert_eq!(key("   ", false, Spaces::Compact), " ");
        assert_eq!(key("", false, Spaces::Compact), " ");
        assert_eq!(key("\u{00AD}", false, Spaces::Compact), " ");
        assert_eq!(key(" a", false, Spaces::Piece(SubstringPosition::Any)), " a");
        assert_eq!(key("a", false, Spaces::Piece(SubstringPosition::Final)), "a ");
    }

    #[test]
    fn mapping_and_folding() {
        assert_eq!(key("A\u{00AD}B\u{200B}C", true, Spaces::Compact), "abc");
        assert_eq!(key("a\tb\u{00A0}c\u{3000}d", false, Spaces::Compact), "a b c d");
        assert_eq!(
            key("STRASSE", true, Spaces::Compact),
            key("straße", true, Spaces::Compact)
        );
        assert_eq!(
            key("ΟΔΟΣ", true, Spaces::Compact),
            key("οδος", true, Spaces::Compact)
        );
        assert_eq!(key("\u{3392}", true, Spaces::Compact), "mhz");
        assert_eq!(key("ｆｕｌｌ", true, Spaces::Compact), "full");
        assert_eq!(key("e\u{0301}", false, Spaces::Compact), "\u{00E9}");
        assert_eq!(key("ﬁ", false, Spaces::Compact), "fi");
    }

    #[test]
    fn space_before_combining_mark_is_not_a_space() {
        assert_eq!(key("a \u{0301}", false, Spaces::Compact), "a \u{0301}");
        assert_eq!(key(" \u{0301}", false, Spaces::SubstringValue), "  \u{0301} ");
    }

    #[test]
    fn prohibited() {
        for bad in ["\u{E000}", "a\u{FFFD}", "\u{FDD0}", "\u{10FFFF}", "\u{50000}"] {
            assert!(prepare(bad.as_bytes(), true).is_err(), "{bad:?}");
        }
        assert!(prepare(&[0xff], true).is_err());
        assert!(prepare("😀 ok".as_bytes(), true).is_ok());
    }

    #[test]
    fn fast_paths_agree_with_the_unicode_tables() {
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            if surely_assigned(c) {
                assert!(is_public_assigned(c), "U+{:04X} is not assigned", u32::from(c));
            }
            if nfkc_inert(c) {
                let mut s = String::new();
                s.push(c);
                assert!(
                    s.nfkc().eq(std::iter::once(c)),
                    "U+{:04X} changes under NFKC",
                    u32::from(c)
                );
            }
        }
    }

    #[test]
    fn removing() {
        let mut out = Vec::new();
        prepare_removing("+1 408-555\u{2010}1212".as_bytes(), true, &mut out).unwrap();
        assert_eq!(out, b"+14085551212");
        out.clear();
        prepare_removing(b" 1 2 3 ", false, &mut out).unwrap();
        assert_eq!(out, b"123");
    }
}
