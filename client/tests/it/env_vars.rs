//! Yes/no flags take true/false, yes/no, on/off or 1/0 from their `NPUZZLE_*` environment
//! variable. (That every option of every subcommand names one is checked on the flags'
//! `Command`, in `src/main.rs`.)

use std::process::Command;

use crate::common::npuzzle;

#[test]
fn flags_read_yes_and_no_from_the_environment() {
    let board = "8 6 7 2 5 4 3 0 1";
    let json = Command::new(env!("CARGO_BIN_EXE_npuzzle"))
        .args(["solve", "--serial", board])
        .env("NPUZZLE_JSON", "1")
        .output()
        .unwrap();
    let record: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(record["length"], 31);
    let text = Command::new(env!("CARGO_BIN_EXE_npuzzle"))
        .args(["solve", board])
        .env("NPUZZLE_JSON", "no")
        .env("NPUZZLE_SERIAL", "true")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(text.stdout).unwrap().trim(),
        "UULDDRRUULDLDRRUULDLDRRUULLDDRR"
    );
}

#[test]
fn serial_and_coordinator_exclude_each_other_only_when_both_are_on() {
    let both = npuzzle(
        &[
            "solve",
            "--serial",
            "--coordinator",
            "http://127.0.0.1:9",
            "1 2 3 0",
        ],
        "",
    );
    assert_eq!(both.code, 2);
    assert!(
        both.stderr.contains("exclude each other"),
        "{}",
        both.stderr
    );
    let off = Command::new(env!("CARGO_BIN_EXE_npuzzle"))
        .args(["solve", "--coordinator", "http://127.0.0.1:9", "1 2 3 0"])
        .env("NPUZZLE_SERIAL", "false")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&off.stderr);
    assert!(!stderr.contains("exclude each other"), "{stderr}");
    let resume = npuzzle(&["batch", "--resume"], "");
    assert_eq!(resume.code, 2);
    assert!(
        resume.stderr.contains("--resume needs --out"),
        "{}",
        resume.stderr
    );
}
