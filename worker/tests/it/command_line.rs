//! The real `npuzzle-worker` binary: `--log-format json` writes one JSON object per line on
//! stderr. (That every flag names its `NPUZZLE_*` variable is checked on the flags' `Command`,
//! in `src/main.rs`.)

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn json_lines_on_stderr() {
    // Nothing listens on port 9 of loopback: the worker logs its failed session and retries.
    let empty = std::env::temp_dir().join(format!("npuzzle-no-tables-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_npuzzle-worker"))
        .args(["--coordinator", "http://127.0.0.1:9", "--threads", "1"])
        .args(["--log-format", "json"])
        .env("NPUZZLE_PDB_DIR", &empty)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the worker starts");
    let mut line = String::new();
    let read = BufReader::new(child.stderr.take().unwrap()).read_line(&mut line);
    let _ = child.kill();
    let _ = child.wait();
    read.expect("a log line");
    let event: serde_json::Value = serde_json::from_str(&line).expect("one JSON object");
    assert!(event["level"].is_string(), "{line}");
    assert!(event["message"].is_string(), "{line}");
    assert!(event["timestamp"].is_string(), "{line}");
}
