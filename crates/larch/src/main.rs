//! The `larch` binary. It will carry the subcommands `serve`, `import`, `export`,
//! `snapshot`, `verify`, `gen`, `bench` and `passwd`; none of them exists yet, and the
//! binary says so rather than pretending.

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("--version") | Some("-V") => {
            println!("larch {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!(
                "larch {}: `{other}` is not available yet; only the LDAPv3 codec (larch-proto) \
                 is built so far. See README.md.",
                env!("CARGO_PKG_VERSION")
            );
            ExitCode::from(2)
        }
        None => {
            eprintln!(
                "larch {}: the directory server is not built yet; only the LDAPv3 codec \
                 (larch-proto) exists so far. See README.md.",
                env!("CARGO_PKG_VERSION")
            );
            ExitCode::from(2)
        }
    }
}
