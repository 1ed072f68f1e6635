//! Korf's (1985) 15-puzzle instances (goal: blank first). The 15 easiest by Manhattan node count
//! run here; all 100 run in the benchmark (`npuzzle bench data/korf100.txt --goal blank-first`).

use crate::common::{KORF100, korf_md_nodes, read_instances, shape};
use npuzzle_solver::{Goal, HeuristicKind, Limits, SearchOutcome, Solver};

fn easiest(count: usize) -> Vec<(crate::common::Instance, u64)> {
    let mut nodes = korf_md_nodes();
    nodes.sort_by_key(|&(_, n)| n);
    let mut instances = read_instances(KORF100);
    nodes
        .into_iter()
        .take(count)
        .map(|(id, n)| {
            let at = instances.iter().position(|i| i.id == id).unwrap();
            (instances.swap_remove(at), n)
        })
        .collect()
}

#[test]
fn korf_file_holds_100_instances() {
    assert_eq!(read_instances(KORF100).len(), 100);
    assert_eq!(korf_md_nodes().len(), 100);
}

#[test]
fn easiest_15_are_solved_optimally_with_both_heuristics() {
    let goal = Goal::blank_first(shape(4, 4));
    for kind in [HeuristicKind::Manhattan, HeuristicKind::LinearConflict] {
        let solver = Solver::new(goal, kind).unwrap();
        for (inst, _) in easiest(15) {
            let report = solver.solve(&inst.board, &Limits::default()).unwrap();
            let SearchOutcome::Solved(path) = report.outcome else {
                panic!("#{} not solved", inst.id)
            };
            assert_eq!(path.len(), inst.optimal, "#{} with {kind}", inst.id);
            assert!(
                inst.board.verify(&path, &goal).unwrap().reaches_goal,
                "#{}",
                inst.id
            );
        }
    }
}

/// With Korf's operator order, plain IDA* + Manhattan generates exactly the published number of
/// nodes (the files count the root too). A node more or less means the search changed. Skipping
/// duplicate move sequences (the default) finds the same paths with fewer nodes.
#[test]
fn manhattan_node_counts_match_the_published_ones() {
    let goal = Goal::blank_first(shape(4, 4));
    let solver = Solver::new(goal, HeuristicKind::Manhattan)
        .unwrap()
        .with_duplicate_pruning(false);
    let pruning = Solver::new(goal, HeuristicKind::Manhattan).unwrap();
    for (inst, published) in easiest(15) {
        let report = solver.solve(&inst.board, &Limits::default()).unwrap();
        assert_eq!(report.stats.generated + 1, published, "#{}", inst.id);
        let pruned = pruning.solve(&inst.board, &Limits::default()).unwrap();
        assert_eq!(pruned.outcome, report.outcome, "#{}", inst.id);
        assert!(
            pruned.stats.generated < report.stats.generated,
            "#{}: {} nodes with duplicate pruning, {} without",
            inst.id,
            pruned.stats.generated,
            report.stats.generated
        );
        let per_iteration: u64 = report.stats.iterations.iter().map(|i| i.generated).sum();
        assert_eq!(per_iteration, report.stats.generated);
        // Bounds rise in steps of 2 from the Manhattan distance of the root.
        let bounds: Vec<u32> = report.stats.iterations.iter().map(|i| i.bound).collect();
        assert!(bounds.windows(2).all(|w| w[1] == w[0] + 2), "{bounds:?}");
        assert_eq!(*bounds.last().unwrap() as usize, inst.optimal);
    }
}

#[test]
fn linear_conflict_expands_fewer_nodes_than_manhattan() {
    let goal = Goal::blank_first(shape(4, 4));
    let md = Solver::new(goal, HeuristicKind::Manhattan).unwrap();
    let lc = Solver::new(goal, HeuristicKind::LinearConflict).unwrap();
    let (mut n_md, mut n_lc) = (0, 0);
    for (inst, _) in easiest(15) {
        n_md += md
            .solve(&inst.board, &Limits::default())
            .unwrap()
            .stats
            .expanded;
        n_lc += lc
            .solve(&inst.board, &Limits::default())
            .unwrap()
            .stats
            .expanded;
    }
    assert!(n_lc * 2 < n_md, "lc {n_lc} vs md {n_md}");
}
