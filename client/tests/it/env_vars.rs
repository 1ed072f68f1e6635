//! Every option of every subcommand can be set by an `NPUZZLE_*` environment variable, and
//! says which in its help; yes/no flags take true/false, yes/no, on/off or 1/0 from it.

use std::process::Command;

use crate::common::npuzzle;

/// Options of `npuzzle ARGS --help` that name no environment variable.
fn missing_env(args: &[&str]) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_npuzzle"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}");
    options_without_env(&String::from_utf8(out.stdout).unwrap())
}
#[test]
fn every_option_names_its_environment_variable() {
    let commands: &[&[&str]] = &[
        &[],
        &["solve"],
        &["batch"],
        &["verify"],
        &["gen"],
        &["bench"],
        &["cluster"],
        &["cluster-bench"],
        &["load"],
        &["pdb", "build"],
        &["pdb", "list"],
        &["stats"],
        &["health"],
    ];
    for args in commands {
        let missing = missing_env(args);
        assert!(missing.is_empty(), "npuzzle {args:?}: {missing:#?}");
    }
}

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
