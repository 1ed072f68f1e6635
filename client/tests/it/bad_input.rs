//! Bad input never stops a batch: each bad board gets its own `invalid` answer that names the
//! problem, every good board is still answered, and the exit code is 1.

use crate::common::{npuzzle, records};
use npuzzle_cluster::testing::assert_optimal;
use npuzzle_solver::{Goal, Shape};

#[test]
fn a_batch_mixing_good_and_bad_lines_answers_every_line() {
    let out = npuzzle(
        &["batch", "examples/with_errors.txt", "--output", "jsonl"],
        "",
    );
    assert_eq!(out.code, 1);
    let records = records(&out.stdout);
    let status: Vec<&str> = records
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        status,
        [
            "solved",
            "invalid",
            "invalid",
            "invalid",
            "invalid",
            "invalid",
            "unsolvable",
            "solved"
        ]
    );
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r["index"], i);
    }
    let errors: Vec<&str> = records.iter().filter_map(|r| r["error"].as_str()).collect();
    let expected = [
        "line 4: duplicate tile 8",
        "line 5: missing blank",
        "line 6: tile 9 at position 8 is out of range",
        "line 7: cannot infer the board size from 11 tiles",
        "line 8: unknown token \"y\" at position 4",
    ];
    for (e, want) in errors.iter().zip(expected) {
        assert!(e.starts_with(want), "{e:?} should start with {want:?}");
    }
    let goal = Goal::blank_last(Shape::new(3, 3).unwrap());
    let moves = records[7]["moves"].as_str().unwrap();
    assert_optimal("8 6 7 2 5 4 3 0 1", &goal, moves, 31);
}

#[test]
fn text_output_names_each_problem_on_its_own_line() {
    let out = npuzzle(
        &["batch"],
        "1 2 3 4 5 6 0 7 8\n1 2 3 4 5\n\u{ff}\u{fe}\n1 2 3 4 5 6 7 0 8\n",
    );
    assert_eq!(out.code, 1);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0], "RR");
    assert!(lines[1].starts_with("invalid: line 2: cannot infer the board size"));
    assert!(lines[2].starts_with("invalid: line 3: unknown token"));
    assert_eq!(lines[3], "R");
}

#[test]
fn bytes_that_are_not_utf8_are_an_invalid_line_not_a_crash() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_npuzzle"))
        .arg("batch")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"1 2 3 \xff\xfe 5 6 7 8\n1 2 3 4 5 6 7 0 8\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text.lines()
            .next()
            .unwrap()
            .starts_with("invalid: line 1: unknown token")
    );
    assert_eq!(text.lines().nth(1), Some("R"));
}

#[test]
fn usage_errors_exit_with_2() {
    assert_eq!(npuzzle(&["solve"], "").code, 2);
    assert_eq!(npuzzle(&["solve", "1 2 3 4", "--size", "7x7"], "").code, 2);
    assert_eq!(npuzzle(&["batch", "--format", "csv"], "").code, 2);
    let missing = npuzzle(&["batch", "no/such/file.txt"], "");
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.contains("cannot open no/such/file.txt"));
}

#[test]
fn simulate_refuses_a_setting_the_coordinator_refuses() {
    let out = npuzzle(
        &[
            "simulate",
            "data/traces/korf24-40.trace",
            "--slots",
            "4",
            "--bounds-ahead",
            "0",
        ],
        "",
    );
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("units may go on 0 bounds ahead: from 1 to 3"),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains("speedup"), "{}", out.stdout);
}
