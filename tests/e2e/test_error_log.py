"""The error log (`[error_log]` in larch.toml, docs/logs.md): a server writing JSON lines
to a file from level "warn", whose level is changed to "info" by editing the file and
sending SIGHUP, without a restart."""

import json
import os
import signal
import time

import pytest

# How long the server may take to act on a SIGHUP.
WAIT_S = 15.0

ERROR_LOG_TOML = '\n[error_log]\npath = "error.log"\nformat = "json"\nlevel = "{level}"\n'


def records(path):
    """The complete lines of the error log so far, each parsed as JSON (a line being
    written at this moment is left for the next read)."""
    if not path.exists():
        return []
    complete = path.read_text().split("\n")[:-1]
    return [json.loads(line) for line in complete]


def wait_for(path, predicate, what):
    """The records once one of them satisfies predicate; fails after WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while True:
        recs = records(path)
        if any(predicate(r) for r in recs):
            return recs
        assert time.monotonic() < deadline, f"no {what} in the error log:\n" + "\n".join(map(str, recs))
        time.sleep(0.05)


def set_level(srv, old, new):
    """Rewrites the server's larch.toml with error_log.level = new (it was old)."""
    toml = srv.workdir / "larch.toml"
    text = toml.read_text()
    assert f'level = "{old}"' in text, text
    toml.write_text(text.replace(f'level = "{old}"', f'level = "{new}"'))


@pytest.mark.larch_only("Larch's own error log and its configuration")
def test_json_error_log_in_a_file_and_its_level_changed_on_sighup(make_extra_server):
    srv = make_extra_server(larch_extra_toml=ERROR_LOG_TOML.format(level="warn"))
    log = srv.workdir / "error.log"
    # Started and answering: the file exists (relative to the configuration file), nothing
    # went to standard error, and nothing below "warn" was written.
    assert log.is_file()
    assert srv.stderr_tail() == "", srv.stderr_tail()
    assert all(r["level"] in ("WARN", "ERROR") for r in records(log)), records(log)

    # A level the server does not know: it keeps "warn" and says why, as an error.
    set_level(srv, "warn", "verbose")
    os.kill(srv.pid, signal.SIGHUP)
    recs = wait_for(log, lambda r: r["level"] == "ERROR" and "error_log.level" in r.get("error", ""),
                    "error about error_log.level")
    refused = next(r for r in recs if r["level"] == "ERROR")
    assert "cannot be used" in refused["message"], refused
    assert refused["error_log_level"] == "warn", refused
    for r in recs:
        assert {"timestamp", "level", "message", "target"} <= r.keys(), r
        assert r["level"] != "INFO", r

    # "info" in the file and SIGHUP: the change itself is the first info message.
    set_level(srv, "verbose", "info")
    os.kill(srv.pid, signal.SIGHUP)
    recs = wait_for(log, lambda r: r["level"] == "INFO", "info message")
    changed = next(r for r in recs if r["level"] == "INFO")
    assert changed["message"] == "SIGHUP: error log level changed", changed
    assert (changed["from"], changed["to"]) == ("warn", "info"), changed
    assert changed["target"] == "larch::serve_cmd", changed

    # The level stays "info": the next SIGHUP says so, at that level.
    os.kill(srv.pid, signal.SIGHUP)
    wait_for(log, lambda r: r["message"] == "SIGHUP: error log level unchanged" and r["error_log_level"] == "info",
             "second SIGHUP's info message")
    assert srv.alive()
    assert srv.stderr_tail() == "", srv.stderr_tail()
