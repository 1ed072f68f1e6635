//! UVa 10181 ("15-Puzzle Problem"): a count, then 4x4 boards of 4 lines; answers in upper case,
//! or `This puzzle is not solvable.`

use crate::common::{npuzzle, records};
use npuzzle_cluster::testing::assert_optimal;
use npuzzle_solver::{Goal, Shape};

#[test]
fn the_sample_input_gives_the_sample_answers() {
    let out = npuzzle(&["batch", "examples/uva10181.txt"], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2);
    let goal = Goal::blank_last(Shape::new(4, 4).unwrap());
    // The judge's sample answer is LLLDRDRDR (9 moves); any optimal path is accepted.
    assert_optimal("2 3 4 0 1 5 7 8 9 6 10 12 13 14 11 15", &goal, lines[0], 9);
    assert_eq!(lines[1], "This puzzle is not solvable.");
}

#[test]
fn a_short_file_reports_the_missing_puzzle_and_answers_the_rest() {
    let input = "2\n2 3 4 0\n1 5 7 8\n9 6 10 12\n13 14 11 15\n";
    let out = npuzzle(
        &["batch", "--format", "uva10181", "--output", "jsonl"],
        input,
    );
    assert_eq!(out.code, 1);
    let records = records(&out.stdout);
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["status"], "solved");
    assert_eq!(records[0]["length"], 9);
    assert_eq!(records[1]["status"], "invalid");
    assert!(
        records[1]["error"]
            .as_str()
            .unwrap()
            .contains("missing puzzle")
    );
}
