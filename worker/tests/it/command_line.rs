//! The real `npuzzle-worker` binary: `--log-format json` writes one JSON object per line on
//! stderr, and every flag names the `NPUZZLE_*` environment variable that also sets it.

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

#[test]
fn every_flag_names_its_environment_variable() {
    let out = Command::new(env!("CARGO_BIN_EXE_npuzzle-worker"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let missing = options_without_env(&help);
    assert!(missing.is_empty(), "{missing:#?}");
    assert!(help.contains("--metrics-listen"), "{help}");
}

/// The options of a `--help`/`-h` text (each with its description, which clap puts on the same
/// line or the next ones) that name no `NPUZZLE_*` environment variable.
fn options_without_env(help: &str) -> Vec<String> {
    let mut options: Vec<String> = Vec::new();
    for line in help.lines() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() && !line.is_empty() {
            // A blank line inside a long description (clap indents it).
            continue;
        }
        if trimmed.starts_with('-') {
            options.push(trimmed.to_string());
        } else if line.starts_with("  ") && !trimmed.is_empty() {
            if let Some(last) = options.last_mut() {
                last.push(' ');
                last.push_str(trimmed);
            }
        } else {
            // A heading or a blank line ends the option before it.
            options.push(String::new());
        }
    }
    options
        .into_iter()
        .filter(|o| o.starts_with('-'))
        .filter(|o| !o.contains("--help") && !o.contains("--version"))
        .filter(|o| !o.contains("[env: NPUZZLE_"))
        .collect()
}
