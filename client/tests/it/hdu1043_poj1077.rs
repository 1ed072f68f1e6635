//! HDU 1043 / POJ 1077 ("Eight"): 3x3 boards with `x` as the blank, answers in lower case; any
//! optimal path is accepted (special judge), so answers are checked by replay and length.

use crate::common::npuzzle;
use npuzzle_cluster::testing::assert_optimal;
use npuzzle_solver::{Goal, Shape};

#[test]
fn the_sample_board_is_solved_in_19_lower_case_moves() {
    let out = npuzzle(
        &["batch", "--format", "poj1077"],
        "2  3  4  1  5  x  7  6  8\n",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let answer = out.stdout.trim();
    assert!(answer.chars().all(|c| "udlr".contains(c)), "{answer}");
    let goal = Goal::blank_last(Shape::new(3, 3).unwrap());
    assert_optimal("2 3 4 1 5 x 7 6 8", &goal, answer, 19);
}

#[test]
fn the_format_is_detected_and_unsolvable_boards_say_so() {
    let input = "2 3 4 1 5 x 7 6 8\n1 2 3 4 5 6 8 7 x\n1 2 3 4 5 6 7 8 x\n";
    let out = npuzzle(&["batch", "examples/poj1077.txt"], "");
    assert_eq!(out.stdout.trim().len(), 19);
    let out = npuzzle(&["batch"], input);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0].len(), 19);
    assert_eq!(lines[1], "unsolvable");
    assert_eq!(lines[2], "");
}
