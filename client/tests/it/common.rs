//! What the tests share: running the real `npuzzle` binary, checking its answers, and the
//! local cluster they run it against (`npuzzle_cluster::testing::ClusterThread`, with
//! [`one_worker`]).
#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Stdio};

use npuzzle_cluster::Options;

pub struct Output {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

/// Runs `npuzzle args…` with `stdin` as input, from the repository root.
pub fn npuzzle(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_npuzzle"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("npuzzle runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Output {
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// Parses `--output jsonl` text into one JSON value per line.
pub fn records(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON object"))
        .collect()
}

/// One one-thread worker loading no pattern databases, and `coordinator`.
pub fn one_worker(coordinator: npuzzle_coordinator::Config) -> Options {
    Options {
        coordinator,
        threads: Some(1),
        load_pdbs: false,
        name: "test".into(),
        ..Options::default()
    }
}
