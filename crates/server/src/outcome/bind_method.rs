//! How a Bind authenticated, as its outcome tells the observers (the monitor counts binds
//! by method and result).

use larch_proto::Authentication;

/// How a Bind authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BindMethod {
    /// Simple with an empty password (anonymous, RFC 4513 section 5.1.1 and 5.1.2).
    Anonymous = 0,
    /// Simple with a password.
    Simple,
    /// SASL EXTERNAL.
    External,
    /// SASL PLAIN.
    Plain,
    /// Another SASL mechanism, or an authentication choice the server does not know.
    Other,
}

/// How many methods there are.
pub const BIND_METHODS: usize = 5;

impl BindMethod {
    /// Every method, in order.
    pub const ALL: [BindMethod; BIND_METHODS] = [
        BindMethod::Anonymous,
        BindMethod::Simple,
        BindMethod::External,
        BindMethod::Plain,
        BindMethod::Other,
    ];

    /// The method of a BindRequest's authentication choice.
    pub fn of(authentication: &Authentication<'_>) -> BindMethod {
        match authentication {
            Authentication::Simple([]) => BindMethod::Anonymous,
            Authentication::Simple(_) => BindMethod::Simple,
            Authentication::Sasl { mechanism, .. } => Self::of_mechanism(mechanism),
            Authentication::Other { .. } => BindMethod::Other,
        }
    }

    /// The method of SASL mechanism `name`.
    fn of_mechanism(name: &[u8]) -> BindMethod {
        if name.eq_ignore_ascii_case(b"EXTERNAL") {
            BindMethod::External
        } else if name.eq_ignore_ascii_case(b"PLAIN") {
            BindMethod::Plain
        } else {
            BindMethod::Other
        }
    }

    /// The label value (`simple`, `sasl_external`...).
    pub fn label(self) -> &'static str {
        match self {
            BindMethod::Anonymous => "anonymous",
            BindMethod::Simple => "simple",
            BindMethod::External => "sasl_external",
            BindMethod::Plain => "sasl_plain",
            BindMethod::Other => "other",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sasl(mechanism: &[u8]) -> Authentication<'_> {
        Authentication::Sasl {
            mechanism,
            credentials: Some(b"\0u\0secret"),
        }
    }

    #[test]
    fn the_method_is_the_authentication_choice() {
        let cases = [
            (Authentication::Simple(b""), BindMethod::Anonymous),
            (Authentication::Simple(b"password"), BindMethod::Simple),
            (sasl(b"EXTERNAL"), BindMethod::External),
            (sasl(b"plain"), BindMethod::Plain),
            (sasl(b"SCRAM-SHA-256"), BindMethod::Other),
            (sasl(b""), BindMethod::Other),
            (
                Authentication::Other {
                    tag: 0xa9,
                    contents: b"",
                },
                BindMethod::Other,
            ),
        ];
        for (authentication, method) in cases {
            assert_eq!(BindMethod::of(&authentication), method, "{authentication:?}");
        }
        let labels: Vec<_> = BindMethod::ALL.iter().map(|m| m.label()).collect();
        assert_eq!(
            labels,
            ["anonymous", "simple", "sasl_external", "sasl_plain", "other"]
        );
    }
}
