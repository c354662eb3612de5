//! Reading a secret from the terminal without showing it: echo is turned off on standard
//! input for one line and turned back on, whatever the read returned. (An interrupt with
//! Ctrl-C while echo is off leaves it off, as with `getpass(3)`; `stty echo` restores it.)
//!
//! rustix's safe termios calls are used rather than a prompt crate: the whole job is two
//! `tcsetattr` calls around a line read.

use std::io::{BufRead, Write};

use larch_server::password::MAX_PASSWORD_BYTES;
use rustix::termios::{tcgetattr, tcsetattr, LocalModes, OptionalActions};

/// Writes `prompt` on standard error, reads one line from standard input (a terminal) with
/// echo off, and ends the line the user could not see.
pub fn read_hidden(prompt: &str) -> Result<Vec<u8>, String> {
    let stdin = std::io::stdin();
    let mut stderr = std::io::stderr();
    let saved = tcgetattr(&stdin).map_err(|e| format!("cannot read the terminal's settings: {e}"))?;
    let mut quiet = saved.clone();
    quiet.local_modes.remove(LocalModes::ECHO);
    // Echo off before the prompt shows, and without discarding input: whatever is typed
    // once the prompt is visible is neither shown nor lost.
    tcsetattr(&stdin, OptionalActions::Now, &quiet)
        .map_err(|e| format!("cannot turn the terminal's echo off: {e}"))?;
    let _ = stderr.write_all(prompt.as_bytes());
    let _ = stderr.flush();
    let mut line = Vec::new();
    let read = std::io::Read::take(stdin.lock(), MAX_PASSWORD_BYTES as u64 + 2).read_until(b'\n', &mut line);
    let restored = tcsetattr(&stdin, OptionalActions::Now, &saved);
    let _ = stderr.write_all(b"\n");
    read.map_err(|e| format!("cannot read the terminal: {e}"))?;
    restored.map_err(|e| format!("cannot turn the terminal's echo back on: {e}"))?;
    if line.is_empty() {
        return Err("no password (end of input)".into());
    }
    while matches!(line.last(), Some(b'\n' | b'\r')) {
        line.pop();
    }
    if line.len() > MAX_PASSWORD_BYTES {
        return Err(format!(
            "the password is longer than {MAX_PASSWORD_BYTES} octets; it would never verify"
        ));
    }
    Ok(line)
}
