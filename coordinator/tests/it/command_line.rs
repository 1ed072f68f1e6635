//! The real `npuzzle-coordinator` binary: `--log-format json` writes one JSON object per line on
//! stderr; the default text format carries no colour codes when stderr is not a terminal; every
//! flag names the `NPUZZLE_*` environment variable that also sets it.

use std::process::{Command, Stdio};
use std::time::Duration;

use npuzzle_cluster::testing::Process;

/// Starts the coordinator on a free port and returns its first log line.
fn first_log_line(args: &[&str]) -> String {
    let mut child = Process::spawn(
        Command::new(env!("CARGO_BIN_EXE_npuzzle-coordinator"))
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .env_remove("RUST_LOG")
            .env_remove("NPUZZLE_LOG_FORMAT")
            .env_remove("NPUZZLE_METRICS_LISTEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    child.wait_for_line(Duration::from_secs(30), |_| true)
}

#[test]
fn json_lines_on_stderr() {
    let line = first_log_line(&["--log-format", "json"]);
    let event: serde_json::Value = serde_json::from_str(&line).expect("one JSON object");
    assert_eq!(event["level"], "INFO", "{line}");
    assert_eq!(event["message"], "coordinator listening", "{line}");
    let address = event["address"].as_str().expect("the address field");
    assert!(address.starts_with("127.0.0.1:"), "{line}");
    assert!(event["timestamp"].is_string(), "{line}");
}

#[test]
fn text_without_colours_when_not_a_terminal() {
    let line = first_log_line(&[]);
    assert!(line.contains("coordinator listening"), "{line}");
    assert!(!line.contains('\x1b'), "ANSI codes in {line:?}");
}

#[test]
fn an_unknown_format_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_npuzzle-coordinator"))
        .args(["--listen", "127.0.0.1:0", "--log-format", "yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("text or json"), "{stderr}");
}

/// The coordinator binary with `args` and no token or TLS settings from the environment, run
/// until it exits (it must, at start-up).
fn refused(args: &[&str]) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_npuzzle-coordinator"));
    command.args(["--listen", "127.0.0.1:0"]).args(args);
    for name in [
        "NPUZZLE_CLIENT_TOKEN",
        "NPUZZLE_CLIENT_TOKEN_FILE",
        "NPUZZLE_WORKER_TOKEN",
        "NPUZZLE_WORKER_TOKEN_FILE",
        "NPUZZLE_TLS_CERT",
        "NPUZZLE_TLS_KEY",
    ] {
        command.env_remove(name);
    }
    let out = command.stdin(Stdio::null()).output().unwrap();
    assert!(!out.status.success(), "{args:?} started");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn equal_tokens_and_empty_token_files_stop_it_at_start() {
    let same = refused(&[
        "--client-token",
        "same-5ecret",
        "--worker-token",
        "same-5ecret",
    ]);
    assert!(same.contains("are the same"), "{same}");
    assert!(!same.contains("same-5ecret"), "{same}");

    let dir = std::env::temp_dir().join(format!("npuzzle-empty-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("token");
    std::fs::write(&empty, "\n").unwrap();
    let message = refused(&["--worker-token-file", empty.to_str().unwrap()]);
    assert!(message.contains("is empty"), "{message}");
    let _ = std::fs::remove_dir_all(&dir);

    let lone = refused(&["--tls-cert", "cert.pem"]);
    assert!(lone.contains("--tls-key"), "{lone}");
}

#[test]
fn flags_out_of_range_stop_it_at_start_naming_the_setting() {
    for (flag, value, name) in [
        ("--units-per-slot", "0", "units per slot is 0"),
        ("--max-connections", "0", "max connections is 0"),
        ("--handshake-secs", "0", "the handshake timeout is 0"),
        ("--lease-secs", "0", "the lease timeout is zero"),
        ("--audit-fraction", "1.5", "the audit fraction is 1.5"),
    ] {
        let message = refused(&[flag, value]);
        assert!(message.contains(name), "{flag} {value}: {message}");
        assert!(!message.contains("coordinator listening"), "{message}");
    }
}
