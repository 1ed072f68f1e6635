//! `npuzzle solve`: the move string, `unsolvable`, or one JSON object.

use crate::common::npuzzle;
use npuzzle_cluster::testing::assert_optimal;
use npuzzle_solver::{Board, Goal, Shape};

#[test]
fn prints_an_optimal_move_string() {
    let out = npuzzle(&["solve", "8 6 7 2 5 4 3 0 1"], "");
    assert_eq!(out.code, 0);
    let goal = Goal::blank_last(Shape::new(3, 3).unwrap());
    assert_optimal("8 6 7 2 5 4 3 0 1", &goal, out.stdout.trim(), 31);
}

#[test]
fn prints_unsolvable_for_odd_parity() {
    let out = npuzzle(&["solve", "2,1,3,4,5,6,7,8,x"], "");
    assert_eq!((out.code, out.stdout.as_str()), (0, "unsolvable\n"));
}

#[test]
fn json_has_every_field() {
    let out = npuzzle(&["solve", "1 2 3 4 5 6 0 7 8", "--json"], "");
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["status"], "solved");
    assert_eq!(v["moves"], "RR");
    assert_eq!(v["length"], 2);
    assert!(v["nodes"].is_u64() && v["millis"].is_number() && v["error"].is_null());
    let out = npuzzle(&["solve", "1 2 3 4 5 6 7 7 0", "--json"], "");
    assert_eq!(out.code, 1);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["status"], "invalid");
    assert_eq!(v["error"], "duplicate tile 7: at positions 6 and 7");
}

#[test]
fn an_invalid_board_is_named_on_stderr() {
    let out = npuzzle(&["solve", "1 2 3 4 5 6 7 8 9"], "");
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("tile 9 at position 8 is out of range"),
        "{}",
        out.stderr
    );
}

#[test]
fn rectangles_goals_and_heuristics() {
    let s = Shape::new(3, 2).unwrap();
    let out = npuzzle(&["solve", "4 1 2 5 0 3", "--size", "3x2"], "");
    assert_optimal("4 1 2 5 0 3", &Goal::blank_last(s), out.stdout.trim(), 5);

    let korf = "14 13 15 7 11 12 9 5 6 0 2 1 4 8 10 3"; // Korf #1, 57 moves to blank-first
    let goal = Goal::blank_first(Shape::new(4, 4).unwrap());
    let out = npuzzle(
        &[
            "solve",
            korf,
            "--goal",
            "blank-first",
            "--heuristic",
            "lc",
            "--serial",
        ],
        "",
    );
    assert_optimal(korf, &goal, out.stdout.trim(), 57);

    let custom = "1 2 3 8 0 4 7 6 5";
    let out = npuzzle(
        &[
            "solve",
            "2 8 3 1 6 4 7 0 5",
            "--goal",
            custom,
            "--heuristic",
            "md",
        ],
        "",
    );
    let goal = Goal::from_board(Board::parse(custom, None).unwrap());
    assert_optimal("2 8 3 1 6 4 7 0 5", &goal, out.stdout.trim(), 5);

    let out = npuzzle(&["solve", "1 2 3 4 5 6 7 8 0", "--goal", "1 2 3"], "");
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("invalid goal"), "{}", out.stderr);
}
