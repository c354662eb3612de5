//! Property tests of the matching rules: idempotent keys, ordering keys that sort like the
//! values (against independent reference computations), substring matching against a
//! plain model, and no panics on arbitrary octets.

use larch_model::matching::{self, MatchingRule, SubstringPosition};
use larch_model::syntax;
use proptest::prelude::*;
use std::cmp::Ordering;

fn rule(name: &str) -> &'static MatchingRule {
    matching::lookup(name).unwrap()
}

fn key(name: &str, value: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    rule(name).normalize(value, &mut out).ok().map(|()| out)
}

/// Text with the characters string preparation cares about: ASCII, spaces and controls,
/// Latin letters with accents (precomposed and combining), compatibility forms, Greek
/// sigmas, German sharp s, soft hyphens, zero width and no-break spaces, and anything.
fn arb_text() -> impl Strategy<Value = String> {
    let interesting = prop_oneof![
        Just('a'),
        Just('Z'),
        Just(' '),
        Just('\t'),
        Just('\u{00A0}'),
        Just('\u{00AD}'),
        Just('\u{200B}'),
        Just('\u{0301}'),
        Just('\u{0345}'),
        Just('\u{00C9}'),
        Just('\u{00DF}'),
        Just('\u{1E9E}'),
        Just('\u{03A3}'),
        Just('\u{03C2}'),
        Just('\u{0390}'),
        Just('\u{1F88}'),
        Just('\u{3392}'),
        Just('\u{FB01}'),
        Just('\u{FF21}'),
        Just('\u{2163}'),
        Just('\u{0130}'),
        Just('\u{212A}'),
        Just('\u{01C5}'),
        Just('\u{FDFA}'),
        any::<char>(),
    ];
    proptest::collection::vec(interesting, 0..12).prop_map(String::from_iter)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A key, read again as a value, gives itself back.
    #[test]
    fn string_keys_are_idempotent(s in arb_text()) {
        for name in ["caseIgnoreMatch", "caseExactMatch", "telephoneNumberMatch", "caseIgnoreOrderingMatch"] {
            if let Some(k) = key(name, s.as_bytes()) {
                let again = key(name, &k);
                prop_assert_eq!(again, Some(k.clone()), "{} of {:?} -> {:?}", name, s, String::from_utf8_lossy(&k));
            }
        }
    }

    /// Case-ignoring keys do not see case; case-exact keys of differently-cased ASCII do.
    #[test]
    fn case_ignore_ignores_case(s in "[ -~]{1,24}") {
        let upper = s.to_uppercase();
        let lower = s.to_lowercase();
        prop_assert_eq!(key("caseIgnoreMatch", upper.as_bytes()), key("caseIgnoreMatch", lower.as_bytes()));
        prop_assert_eq!(key("caseIgnoreIA5Match", upper.as_bytes()), key("caseIgnoreIA5Match", lower.as_bytes()));
        if upper.trim() != lower.trim() {
            prop_assert_ne!(key("caseExactMatch", upper.as_bytes()), key("caseExactMatch", lower.as_bytes()));
        }
    }

    /// For printable ASCII the key is exactly: words joined by one space, lower-cased
    /// (a plain model, independent of the preparation code).
    #[test]
    fn ascii_case_ignore_model(s in "[ -~\t]{0,24}") {
        let words: Vec<String> = s.split([' ', '\t']).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
        let model = if words.is_empty() { " ".to_string() } else { words.join(" ") };
        if s.is_empty() {
            prop_assert_eq!(key("caseIgnoreMatch", b""), None);
        } else {
            prop_assert_eq!(key("caseIgnoreMatch", s.as_bytes()), Some(model.clone().into_bytes()));
        }
        prop_assert_eq!(key("caseIgnoreIA5Match", s.as_bytes()), Some(model.into_bytes()));
    }

    /// Telephone and numeric string keys drop exactly the insignificant characters.
    #[test]
    fn telephone_and_numeric_models(s in "[0-9 +-]{1,20}", n in "[0-9 ]{1,20}") {
        let phone_model: String = s.chars().filter(|c| *c != ' ' && *c != '-').collect();
        prop_assert_eq!(key("telephoneNumberMatch", s.as_bytes()), Some(phone_model.into_bytes()));
        let numeric_model: String = n.chars().filter(|c| *c != ' ').collect();
        prop_assert_eq!(key("numericStringMatch", n.as_bytes()), Some(numeric_model.into_bytes()));
    }

    /// Integer ordering keys sort like the integers (machine-size values).
    #[test]
    fn integer_order_small(a in any::<i128>(), b in any::<i128>()) {
        let ka = key("integerOrderingMatch", a.to_string().as_bytes()).unwrap();
        let kb = key("integerOrderingMatch", b.to_string().as_bytes()).unwrap();
        prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
        prop_assert_eq!(key("integerMatch", a.to_string().as_bytes()) == key("integerMatch", b.to_string().as_bytes()), a == b);
    }

    /// Integer ordering keys sort like the integers, at any length: compared with a
    /// reference that compares sign, then digit count, then digits.
    #[test]
    fn integer_order_any_length(
        (na, da) in (any::<bool>(), "(0|[1-9][0-9]{0,300})"),
        (nb, db) in (any::<bool>(), "(0|[1-9][0-9]{0,300})"),
    ) {
        let text = |neg: bool, d: &str| if neg && d != "0" { format!("-{d}") } else { d.to_string() };
        let (ta, tb) = (text(na, &da), text(nb, &db));
        let magnitude = |d: &str, e: &str| d.len().cmp(&e.len()).then(d.cmp(e));
        let sign = |t: &str| if t == "0" { 0 } else if t.starts_with('-') { -1 } else { 1 };
        let reference = match sign(&ta).cmp(&sign(&tb)) {
            Ordering::Equal if sign(&ta) < 0 => magnitude(&db, &da),
            Ordering::Equal => magnitude(&da, &db),
            other => other,
        };
        let ka = key("integerOrderingMatch", ta.as_bytes()).unwrap();
        let kb = key("integerOrderingMatch", tb.as_bytes()).unwrap();
        prop_assert_eq!(ka.cmp(&kb), reference, "{} vs {}", ta, tb);
    }

    /// Generalized time keys sort like the instants they name and are equal iff the
    /// instants are; the reference counts seconds day by day, independently of the code.
    #[test]
    fn generalized_time_order(a in arb_time(), b in arb_time()) {
        let ka = key("generalizedTimeOrderingMatch", a.text.as_bytes()).unwrap();
        let kb = key("generalizedTimeOrderingMatch", b.text.as_bytes()).unwrap();
        prop_assert_eq!(ka.cmp(&kb), a.instant().cmp(&b.instant()), "{} vs {}", a.text, b.text);
        let ea = key("generalizedTimeMatch", a.text.as_bytes()).unwrap();
        let eb = key("generalizedTimeMatch", b.text.as_bytes()).unwrap();
        prop_assert_eq!(ea == eb, a.instant() == b.instant());
        // The key, read as a UTC time again, is its own key.
        let mut utc = String::from_utf8(ea.clone()).unwrap();
        if utc.len() > 14 {
            utc.insert(14, '.');
        }
        utc.push('Z');
        prop_assert_eq!(key("generalizedTimeMatch", utc.as_bytes()), Some(ea));
    }

    /// Pieces cut out of a value match it, in every position.
    #[test]
    fn substrings_cut_from_the_value_match(
        words in proptest::collection::vec("[a-zA-Z0-9éß]{1,6}", 1..5),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
        use_initial in any::<bool>(),
        use_final in any::<bool>(),
    ) {
        let value = words.join(" ");
        let chars: Vec<char> = value.chars().collect();
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(chars.len() + 1)).collect();
        points.push(0);
        points.push(chars.len());
        points.sort_unstable();
        points.dedup();
        let pieces: Vec<String> = points.windows(2).map(|w| chars[w[0]..w[1]].iter().collect()).collect();
        // Drop the first/last piece unless used as initial/final; keep the rest as "any".
        let r = rule("caseIgnoreSubstringsMatch");
        let prep = |p: &str, pos| {
            let mut out = Vec::new();
            r.normalize_substring(p.as_bytes(), pos, &mut out).unwrap();
            out
        };
        let n = pieces.len();
        let initial = use_initial.then(|| prep(&pieces[0], SubstringPosition::Initial));
        let final_ = (use_final && n > 1).then(|| prep(&pieces[n - 1], SubstringPosition::Final));
        let start = usize::from(use_initial);
        let end = if use_final && n > 1 { n - 1 } else { n };
        let any: Vec<Vec<u8>> = pieces[start..end].iter().map(|p| prep(p, SubstringPosition::Any)).collect();
        let any: Vec<&[u8]> = any.iter().map(Vec::as_slice).collect();
        let mut value_key = Vec::new();
        r.normalize(value.to_uppercase().as_bytes(), &mut value_key).unwrap();
        prop_assert!(r.matches_substrings(&value_key, initial.as_deref(), &any, final_.as_deref()),
            "{:?} should match {:?}", value, pieces);
    }

    /// Substring matching of space-free ASCII agrees with a plain model.
    #[test]
    fn substrings_agree_with_model(
        value in "[abAB]{1,12}",
        initial in proptest::option::of("[abAB]{1,3}"),
        any in proptest::collection::vec("[abAB]{1,3}", 0..3),
        final_ in proptest::option::of("[abAB]{1,3}"),
    ) {
        let v = value.to_lowercase();
        let model = (|| {
            let mut pos = 0;
            let mut end = v.len();
            if let Some(i) = &initial {
                if !v.starts_with(&i.to_lowercase()) { return false; }
                pos = i.len();
            }
            if let Some(f) = &final_ {
                if !v.ends_with(&f.to_lowercase()) || v.len() - f.len() < pos { return false; }
                end = v.len() - f.len();
            }
            for a in &any {
                match v[pos..end].find(&a.to_lowercase()) {
                    Some(at) => pos += at + a.len(),
                    None => return false,
                }
            }
            true
        })();
        let r = rule("caseIgnoreSubstringsMatch");
        let prep = |p: &str, pos| {
            let mut out = Vec::new();
            r.normalize_substring(p.as_bytes(), pos, &mut out).unwrap();
            out
        };
        let i = initial.as_deref().map(|p| prep(p, SubstringPosition::Initial));
        let f = final_.as_deref().map(|p| prep(p, SubstringPosition::Final));
        let a: Vec<Vec<u8>> = any.iter().map(|p| prep(p, SubstringPosition::Any)).collect();
        let a: Vec<&[u8]> = a.iter().map(Vec::as_slice).collect();
        let mut value_key = Vec::new();
        r.normalize(value.as_bytes(), &mut value_key).unwrap();
        prop_assert_eq!(r.matches_substrings(&value_key, i.as_deref(), &a, f.as_deref()), model);
    }

    /// DN keys are DNs with the same key, and do not depend on case or spacing.
    #[test]
    fn dn_keys_are_idempotent(
        rdns in proptest::collection::vec(
            proptest::collection::vec((prop_oneof![Just("cn"), Just("OU"), Just("dc"), Just("2.5.4.3")], arb_dn_value()), 1..3),
            0..4),
    ) {
        let dn = rdns.iter()
            .map(|rdn| rdn.iter().map(|(t, v)| format!("{t}={v}")).collect::<Vec<_>>().join("+"))
            .collect::<Vec<_>>()
            .join(",");
        if let Some(k) = key("distinguishedNameMatch", dn.as_bytes()) {
            prop_assert!(syntax::lookup("1.3.6.1.4.1.1466.115.121.1.12").unwrap().validate(&k));
            prop_assert_eq!(key("distinguishedNameMatch", &k), Some(k.clone()), "{}", dn);
            if !dn.contains('\\') {
                let spaced = dn.replace(',', " , ");
                prop_assert_eq!(key("distinguishedNameMatch", spaced.as_bytes()), Some(k.clone()));
            }
            let upper = dn.to_uppercase();
            if let Some(ku) = key("distinguishedNameMatch", upper.as_bytes()) {
                prop_assert_eq!(ku, k);
            }
        }
    }

    /// Approximate keys ignore case and spacing.
    #[test]
    fn approx_ignores_case_and_spaces(s in "[a-zA-Z ]{0,30}") {
        let mut a = Vec::new();
        let mut b = Vec::new();
        matching::approx_key(s.as_bytes(), &mut a);
        matching::approx_key(format!("  {}  ", s.to_uppercase().replace(' ', "   ")).as_bytes(), &mut b);
        prop_assert_eq!(a, b);
    }

    /// Nothing panics on arbitrary octets, and failures leave a reason.
    #[test]
    fn arbitrary_octets(bytes in proptest::collection::vec(any::<u8>(), 0..48)) {
        let mut out = Vec::new();
        for r in matching::all() {
            out.clear();
            if let Err(e) = r.normalize(&bytes, &mut out) {
                prop_assert!(!e.reason.is_empty());
            }
            for pos in [SubstringPosition::Initial, SubstringPosition::Any, SubstringPosition::Final] {
                let _ = r.normalize_substring(&bytes, pos, &mut out);
            }
            let _ = r.matches_substrings(&bytes, Some(&bytes[..bytes.len() / 2]), &[&bytes], None);
        }
        for s in syntax::all() {
            let _ = s.validate(&bytes);
        }
        matching::approx_key(&bytes, &mut out);
    }

    /// Valid values of a syntax are accepted by the equality rules for that syntax.
    #[test]
    fn syntax_valid_means_rule_accepts(s in "[ -~]{1,16}") {
        for (syntax_oid, rule_name) in [
            ("1.3.6.1.4.1.1466.115.121.1.15", "caseIgnoreMatch"),
            ("1.3.6.1.4.1.1466.115.121.1.26", "caseExactIA5Match"),
            ("1.3.6.1.4.1.1466.115.121.1.27", "integerMatch"),
            ("1.3.6.1.4.1.1466.115.121.1.36", "numericStringMatch"),
            ("1.3.6.1.4.1.1466.115.121.1.50", "telephoneNumberMatch"),
            ("1.3.6.1.4.1.1466.115.121.1.12", "distinguishedNameMatch"),
            ("1.3.6.1.4.1.1466.115.121.1.38", "objectIdentifierMatch"),
        ] {
            let valid = syntax::lookup(syntax_oid).unwrap().validate(s.as_bytes());
            if valid {
                prop_assert!(key(rule_name, s.as_bytes()).is_some(), "{} accepts {:?} but {} does not", syntax_oid, s, rule_name);
            }
        }
    }
}

fn arb_dn_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 ]{1,10}",
        "[a-z]{1,3}(\\\\[,+;<>\"\\\\#= ]|\\\\[0-9a-f]{2})[a-z ]{0,3}",
        "#04[0-9]{2}[0-9a-f]{0,4}",
        "[ÀÉßσΣ a]{1,5}",
    ]
}

/// A generated Generalized Time and the fields it was made from.
#[derive(Debug, Clone)]
struct Time {
    text: String,
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    /// Seconds after the hour, as an exact fraction numerator over 10^FRACTION_SCALE.
    subhour: i128,
    offset_minutes: i64,
}

/// Fraction digits are at most this many, so every value is exact at this scale
/// (an hour fraction of 6 digits times 3600 needs 6 decimals).
const FRACTION_SCALE: u32 = 8;

impl Time {
    /// Seconds since 0000-01-01 00:00 UTC, scaled by 10^FRACTION_SCALE, counted day by day.
    fn instant(&self) -> i128 {
        let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let mut days: i64 = 0;
        for y in 0..self.year {
            days += if leap(y) { 366 } else { 365 };
        }
        let month_days = [
            31,
            if leap(self.year) { 29 } else { 28 },
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ];
        days += month_days[..(self.month - 1) as usize].iter().sum::<i64>();
        days += self.day - 1;
        let seconds = days * 86_400 + self.hour * 3600 - self.offset_minutes * 60;
        i128::from(seconds) * 10i128.pow(FRACTION_SCALE) + self.subhour
    }
}

fn arb_time() -> impl Strategy<Value = Time> {
    (
        1..=9998i64,
        1..=12i64,
        1..=28i64,
        0..=23i64,
        0..=3u8,
        0..=59i64,
        // Leap seconds sort between :59 and the next minute, which the reference cannot
        // say; they are covered by the table tests.
        0..=59i64,
        "[0-9]{1,6}",
        prop_oneof![
            Just(None),
            (-14..=14i64, prop_oneof![Just(0i64), Just(30), Just(45)]).prop_map(Some)
        ],
        any::<bool>(),
    )
        .prop_map(
            |(year, month, day, hour, precision, minute, second, frac, zone, comma)| {
                let second = if precision >= 2 { second } else { 0 };
                let mut text = format!("{year:04}{month:02}{day:02}{hour:02}");
                let scale = 10i128.pow(FRACTION_SCALE);
                let mut subhour: i128 = 0;
                if precision >= 1 {
                    text.push_str(&format!("{minute:02}"));
                    subhour += i128::from(minute) * 60 * scale;
                }
                if precision >= 2 {
                    text.push_str(&format!("{second:02}"));
                    subhour += i128::from(second) * scale;
                }
                if precision == 3 || (precision < 2 && comma) {
                    // A fraction of the last field written.
                    text.push(if comma { ',' } else { '.' });
                    text.push_str(&frac);
                    let digits = frac.len() as u32;
                    let f: i128 = frac.parse().unwrap();
                    let unit: i128 = match precision {
                        0 => 3600,
                        1 => 60,
                        _ => 1,
                    };
                    subhour += f * unit * 10i128.pow(FRACTION_SCALE - digits);
                }
                let offset_minutes = match zone {
                    None => {
                        text.push('Z');
                        0
                    }
                    Some((h, m)) => {
                        let total = h * 60 + if h < 0 { -m } else { m };
                        let sign = if total < 0 || (h == 0 && m != 0 && comma) {
                            '-'
                        } else {
                            '+'
                        };
                        let total = if sign == '-' { -total.abs() } else { total.abs() };
                        text.push_str(&format!("{sign}{:02}{:02}", total.abs() / 60, total.abs() % 60));
                        total
                    }
                };
                Time {
                    text,
                    year,
                    month,
                    day,
                    hour,
                    subhour,
                    offset_minutes,
                }
            },
        )
}
