//! The real `npuzzle-worker` binary: `--log-format json` writes one JSON object per line on
//! stderr. (That every flag names its `NPUZZLE_*` variable is checked on the flags' `Command`,
//! in `src/main.rs`.)

use std::process::{Command, Stdio};
use std::time::Duration;

use npuzzle_cluster::testing::Process;

#[test]
fn json_lines_on_stderr() {
    // Nothing listens on port 9 of loopback: the worker logs its failed session and retries.
    let empty = std::env::temp_dir().join(format!("npuzzle-no-tables-{}", std::process::id()));
    let mut child = Process::spawn(
        Command::new(env!("CARGO_BIN_EXE_npuzzle-worker"))
            .args(["--coordinator", "http://127.0.0.1:9", "--threads", "1"])
            .args(["--log-format", "json"])
            .env("NPUZZLE_PDB_DIR", &empty)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    let line = child.wait_for_line(Duration::from_secs(30), |_| true);
    child.kill();
    let event: serde_json::Value = serde_json::from_str(&line).expect("one JSON object");
    assert!(event["level"].is_string(), "{line}");
    assert!(event["message"].is_string(), "{line}");
    assert!(event["timestamp"].is_string(), "{line}");
}
