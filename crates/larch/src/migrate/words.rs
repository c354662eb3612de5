//! Splitting a slapd configuration line into words, as slapd does: words are separated by
//! blanks; a double-quoted stretch (anywhere in a word, as in `dn.base="cn=a b"`) keeps
//! its blanks and loses its quotes; inside quotes a backslash keeps the next character.

/// Most words on one line: a real `access` line has a few dozen.
pub const MAX_WORDS: usize = 4096;

/// Why a line could not be split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WordsError {
    /// A quote was opened and never closed.
    UnclosedQuote,
    /// More than [`MAX_WORDS`] words.
    TooMany,
}

impl std::fmt::Display for WordsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WordsError::UnclosedQuote => f.write_str("a double quote is not closed"),
            WordsError::TooMany => write!(f, "more than {MAX_WORDS} words on one line"),
        }
    }
}

/// The words of `line`.
pub fn split(line: &str) -> Result<Vec<String>, WordsError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            '\\' if quoted => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    if words.len() == MAX_WORDS {
                        return Err(WordsError::TooMany);
                    }
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quoted {
        return Err(WordsError::UnclosedQuote);
    }
    if in_word {
        if words.len() == MAX_WORDS {
            return Err(WordsError::TooMany);
        }
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_anywhere_in_a_word() {
        assert_eq!(
            split(r#"access to dn.base="cn=a b,dc=x" by * read"#).unwrap(),
            ["access", "to", "dn.base=cn=a b,dc=x", "by", "*", "read"]
        );
        assert_eq!(split(r#"rootpw "a\"b""#).unwrap(), ["rootpw", "a\"b"]);
        assert_eq!(split(r#""""#).unwrap(), [""]);
        assert_eq!(split("  a\tb  ").unwrap(), ["a", "b"]);
        assert_eq!(split(r#"suffix "dc=x"#), Err(WordsError::UnclosedQuote));
    }
}
