//! `npuzzle gen` is reproducible by seed and its boards solve; `npuzzle verify` pinpoints an
//! illegal move and accepts a real solution.

use crate::common::npuzzle;

#[test]
fn gen_repeats_itself_for_a_seed_and_batch_solves_what_it_makes() {
    let a = npuzzle(
        &["gen", "--size", "3x3", "--count", "20", "--seed", "42"],
        "",
    );
    let b = npuzzle(
        &["gen", "--size", "3x3", "--count", "20", "--seed", "42"],
        "",
    );
    let c = npuzzle(
        &["gen", "--size", "3x3", "--count", "20", "--seed", "43"],
        "",
    );
    assert_eq!(a.code, 0, "{}", a.stderr);
    assert_eq!(a.stdout, b.stdout);
    assert_ne!(a.stdout, c.stdout);
    assert_eq!(a.stdout.lines().count(), 20);
    let solved = npuzzle(&["batch", "--serial", "--output", "jsonl"], &a.stdout);
    assert_eq!(solved.code, 0, "{}", solved.stderr);
    let records = crate::common::records(&solved.stdout);
    assert!(records.iter().all(|r| r["status"] == "solved"));
    for (line, r) in a.stdout.lines().zip(&records) {
        let verdict = npuzzle(&["verify", line, r["moves"].as_str().unwrap()], "");
        assert_eq!(verdict.code, 0, "{line}: {}", verdict.stdout);
    }
}

#[test]
fn verify_pinpoints_the_illegal_move() {
    let out = npuzzle(&["verify", "1 2 3 4 5 6 0 7 8", "RRD"], "");
    assert_eq!(out.code, 1);
    assert!(
        out.stdout
            .starts_with("move 2 (D) is illegal: the blank is at row 2, column 2"),
        "{}",
        out.stdout
    );
    let walk = npuzzle(&["gen", "--size", "4x4", "--walk", "8", "--count", "3"], "");
    assert_eq!(walk.stdout.lines().count(), 3);
}
