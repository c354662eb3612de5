//! Which directive names slapd knows, so that a misspelled one is refused with its file and
//! line instead of being taken for something Larch merely lacks. The lists follow
//! `slapd.conf(5)`, `slapd-mdb(5)` and the overlays' manual pages of OpenLDAP 2.4 to 2.6.

/// Directives of the global section (and of the frontend database).
const GLOBAL: &[&str] = &[
    "access",
    "allow",
    "argsfile",
    "attributeoptions",
    "authid-rewriteengine",
    "authid-rewritemap",
    "authid-rewriterule",
    "authz-policy",
    "authz-regexp",
    "backend",
    "concurrency",
    "conn_max_pending",
    "conn_max_pending_auth",
    "database",
    "defaultsearchbase",
    "disallow",
    "gentlehup",
    "idletimeout",
    "include",
    "index_hash64",
    "index_intlen",
    "index_substr_any_len",
    "index_substr_any_step",
    "index_substr_if_maxlen",
    "index_substr_if_minlen",
    "limits",
    "listener-threads",
    "localssf",
    "logfile",
    "logfile-format",
    "logfile-only",
    "logfile-rotate",
    "loglevel",
    "moduleload",
    "modulepath",
    "overlay",
    "password-crypt-salt-format",
    "password-hash",
    "pidfile",
    "pluginlog",
    "referral",
    "require",
    "reverse-lookup",
    "rootdse",
    "sasl-auxprops",
    "sasl-cbinding",
    "sasl-host",
    "sasl-realm",
    "sasl-secprops",
    "schemadn",
    "security",
    "serverid",
    "sizelimit",
    "sockbuf_max_incoming",
    "sockbuf_max_incoming_auth",
    "sortvals",
    "tcp-buffer",
    "threadqueues",
    "threads",
    "timelimit",
    "tool-threads",
    "writetimeout",
    "tlscacertificatefile",
    "tlscacertificatepath",
    "tlscertificatefile",
    "tlscertificatekeyfile",
    "tlsciphersuite",
    "tlscrlcheck",
    "tlscrlfile",
    "tlsdhparamfile",
    "tlseccurve",
    "tlsprotocolmin",
    "tlsrandfile",
    "tlsverifyclient",
    "tlsecname",
    "rootdn",
    "rootpw",
    "lastmod",
    "readonly",
    "restrict",
    "add_content_acl",
    "monitoring",
];

/// Schema definitions written in the configuration itself.
pub const SCHEMA: &[&str] = &[
    "attributetype",
    "attributetypes",
    "objectclass",
    "objectclasses",
    "objectidentifier",
    "ldapsyntax",
    "ldapsyntaxes",
    "ditcontentrule",
    "ditcontentrules",
];

/// Directives of a database section (any backend).
const DATABASE: &[&str] = &[
    "suffix",
    "rootdn",
    "rootpw",
    "directory",
    "index",
    "maxsize",
    "maxreaders",
    "checkpoint",
    "dbnosync",
    "envflags",
    "mode",
    "searchstack",
    "multival",
    "idlexp",
    "maxentrysize",
    "rtxnsize",
    "access",
    "limits",
    "lastmod",
    "readonly",
    "restrict",
    "sizelimit",
    "timelimit",
    "syncrepl",
    "updateref",
    "mirrormode",
    "multiprovider",
    "multimaster",
    "monitoring",
    "add_content_acl",
    "hidden",
    "subordinate",
    "sync_use_subentry",
    "maxderefdepth",
    "schemadn",
    "requires",
    "require",
    "security",
    "overlay",
    "database",
    "include",
    "dbpagesize",
    "dbmaxsize",
    "txn_max",
    "cachesize",
    "idlcachesize",
    "dncachesize",
    "dbconfig",
    "dirtyread",
    "checksum",
    "lockdetect",
    "shm_key",
    "cachefree",
    "linearindex",
    "uri",
    "idassert-bind",
    "idassert-authzfrom",
    "chase-referrals",
    "rebind-as-user",
    "acl-bind",
    "network-timeout",
    "file",
];

/// Directives of overlays: names that start with an overlay's own prefix, and the few
/// that have no prefix.
const OVERLAY_PREFIXES: &[&str] = &[
    "memberof-",
    "refint_",
    "unique_",
    "ppolicy_",
    "syncprov-",
    "sssvlv-",
    "dynlist-",
    "lastbind",
    "autogroup-",
    "valsort-",
    "dds-",
    "homedir-",
    "pcache",
    "constraint_",
    "collectinfo",
    "rwm-",
    "translucent_",
    "retcode-",
    "deref-",
    "otp-",
    "remoteauth-",
    "seqmod-",
];

/// accesslog's and auditlog's directives.
const OVERLAY_WORDS: &[&str] = &[
    "logdb",
    "logops",
    "logold",
    "logoldattr",
    "logpurge",
    "logsuccess",
    "logbase",
    "auditlog",
];

/// Where a directive is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Before the first `database` line.
    Global,
    /// Inside a database section.
    Database,
}

/// True when `name` (lowercase) is a directive slapd accepts in `section` (overlay
/// directives included).
pub fn is_known(name: &str, section: Section) -> bool {
    let in_section = match section {
        Section::Global => GLOBAL.contains(&name),
        Section::Database => DATABASE.contains(&name),
    };
    in_section || SCHEMA.contains(&name) || is_overlay_directive(name)
}

/// True when `name` (lowercase) is one of an overlay's directives.
pub fn is_overlay_directive(name: &str) -> bool {
    OVERLAY_WORDS.contains(&name) || OVERLAY_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The `slapd.conf` name of a cn=config attribute (`olcDbIndex` -> `index`), lowercase;
/// `None` for an attribute that is not a configuration setting (objectClass, cn, the
/// operational attributes slapd keeps on its cn=config entries).
pub fn from_olc(attribute: &str) -> Option<String> {
    let lower = attribute.to_ascii_lowercase();
    let rest = lower.strip_prefix("olc")?;
    Some(
        match rest {
            "dbindex" => "index",
            "dbdirectory" => "directory",
            "dbmaxsize" => "maxsize",
            "dbmaxreaders" => "maxreaders",
            "dbcheckpoint" => "checkpoint",
            "dbnosync" => "dbnosync",
            "dbenvflags" => "envflags",
            "dbmode" => "mode",
            "dbsearchstack" => "searchstack",
            "dbmultival" => "multival",
            "dbidlexp" => "idlexp",
            "dbmaxentrysize" => "maxentrysize",
            "dbrtxnsize" => "rtxnsize",
            "dburi" => "uri",
            "memberofgroupoc" => "memberof-group-oc",
            "memberofmemberad" => "memberof-member-ad",
            "memberofmemberofad" => "memberof-memberof-ad",
            "memberofrefint" => "memberof-refint",
            "memberofdn" => "memberof-dn",
            "memberofdangling" => "memberof-dangling",
            "memberofdanglingerror" => "memberof-dangling-error",
            "refintattribute" => "refint_attributes",
            "refintnothing" => "refint_nothing",
            "refintmodifiersname" => "refint_modifiersname",
            "uniqueuri" => "unique_uri",
            "uniquebase" => "unique_base",
            "uniqueattribute" => "unique_attributes",
            "uniqueignore" => "unique_ignore",
            "uniquestrict" => "unique_strict",
            "accesslogdb" => "logdb",
            "accesslogops" => "logops",
            "accesslogold" => "logold",
            "accesslogoldattr" => "logoldattr",
            "accesslogpurge" => "logpurge",
            "accesslogsuccess" => "logsuccess",
            "accesslogbase" => "logbase",
            "auditlogfile" => "auditlog",
            "spcheckpoint" => "syncprov-checkpoint",
            "spsessionlog" => "syncprov-sessionlog",
            "spnopresent" => "syncprov-nopresent",
            "spreloadhint" => "syncprov-reloadhint",
            "ppolicydefault" => "ppolicy_default",
            "ppolicyhashcleartext" => "ppolicy_hash_cleartext",
            "ppolicyuselockout" => "ppolicy_use_lockout",
            "ppolicyforwardupdates" => "ppolicy_forward_updates",
            "passwordhash" => "password-hash",
            "passwordcryptsaltformat" => "password-crypt-salt-format",
            "disallows" => "disallow",
            "allows" => "allow",
            "requires" => "require",
            "authzregexp" => "authz-regexp",
            "authzpolicy" => "authz-policy",
            "toolthreads" => "tool-threads",
            "listenerthreads" => "listener-threads",
            "sockbufmaxincoming" => "sockbuf_max_incoming",
            "sockbufmaxincomingauth" => "sockbuf_max_incoming_auth",
            "connmaxpending" => "conn_max_pending",
            "connmaxpendingauth" => "conn_max_pending_auth",
            "tlscacertificatefile" => "tlscacertificatefile",
            "tlscertificatefile" => "tlscertificatefile",
            "tlscertificatekeyfile" => "tlscertificatekeyfile",
            other => other,
        }
        .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_unknown() {
        assert!(is_known("index", Section::Database));
        assert!(!is_known("index", Section::Global));
        assert!(is_known("memberof-group-oc", Section::Database));
        assert!(is_known("tlscertificatefile", Section::Global));
        assert!(!is_known("indx", Section::Database));
        assert_eq!(from_olc("olcDbIndex").as_deref(), Some("index"));
        assert_eq!(from_olc("olcSuffix").as_deref(), Some("suffix"));
        assert_eq!(from_olc("entryCSN"), None);
    }
}
