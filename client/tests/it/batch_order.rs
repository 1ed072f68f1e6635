//! A batch of many boards on several threads: answers in input order, each optimal.

use crate::common::{npuzzle, records};
use npuzzle_cluster::testing::assert_optimal;
use npuzzle_solver::{Board, Goal, HeuristicKind, Limits, Move, SearchOutcome, Shape, Solver};

#[test]
fn answers_stay_in_input_order_and_are_optimal() {
    let shape = Shape::new(3, 3).unwrap();
    let goal = Goal::blank_last(shape);
    let reference = Solver::new(goal, HeuristicKind::Manhattan).unwrap();
    let mut boards = Vec::new();
    let mut seed = 99u64;
    for i in 0..400 {
        let mut b = *goal.board();
        // Walks of very different lengths, so boards finish out of order.
        for _ in 0..(i % 7) * 10 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if let Some(n) = b.after(Move::ALL[(seed >> 33) as usize % 4]) {
                b = n;
            }
        }
        boards.push(b);
    }
    let input: String = boards.iter().map(|b| format!("{b}\n")).collect();
    let out = npuzzle(&["batch", "--jobs", "3", "--output", "jsonl"], &input);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let records = records(&out.stdout);
    assert_eq!(records.len(), boards.len());
    for (i, (r, b)) in records.iter().zip(&boards).enumerate() {
        assert_eq!(r["index"], i);
        let SearchOutcome::Solved(best) = reference.solve(b, &Limits::default()).unwrap().outcome
        else {
            panic!()
        };
        assert_eq!(r["length"], best.len(), "board {i}");
        assert_optimal(b, &goal, r["moves"].as_str().unwrap(), best.len());
        let _ = Board::parse(&b.to_string(), None).unwrap();
    }
}
