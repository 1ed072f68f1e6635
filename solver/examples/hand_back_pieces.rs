//! What a unit hands back when it is asked for its rest after a few thousand nodes, measured
//! against the simulator's model of the subtrees below a trace's depth (`coordinator/src/sim.rs`,
//! `stop_inside`: each node's nodes shared evenly among the blank's moves other than back; then
//! the smallest first pieces searched rather than handed back, as `Solver::search_unit` does).
//! An instance is cut breadth-first into at least N units; every K-th unit of at least
//! 10 × BUDGET nodes under BOUND is searched whole, then again stopped after BUDGET nodes, and
//! each piece it hands back is searched whole. Prints, per unit and in all, the pieces and their
//! sizes, real and modelled (docs/benchmarks/2026-12-simulation-model.md, issue 23).
//!
//! ```sh
//! grep -E '^29 ' data/korf24_50.txt | cargo run --release -p npuzzle-solver \
//!     --features store --example hand_back_pieces -- PDB_DIR 84 4000 2000 40
//! ```
use npuzzle_solver::*;

fn limits(budget: Option<u64>) -> Limits<'static> {
    Limits {
        cancel: None,
        hand_back: None,
        node_budget: budget,
        max_bound: None,
    }
}

/// The simulator's model: pieces handed back by a search of `nodes` nodes below `board`
/// stopped after `budget`.
fn model(board: Board, last: Option<Move>, nodes: u64, budget: u64) -> Vec<u64> {
    let (mut board, mut last, mut left, mut budget) = (board, last, nodes, budget);
    let mut levels: Vec<Vec<u64>> = Vec::new();
    loop {
        let kids: Vec<Move> = Move::SEARCH_ORDER
            .into_iter()
            .filter(|&m| Some(m.opposite()) != last && board.after(m).is_some())
            .collect();
        if left <= budget + 1 || kids.is_empty() {
            break;
        }
        let child = (left - 1) / kids.len() as u64;
        budget -= 1;
        let mut next = 0;
        while next + 1 < kids.len() && budget >= child {
            budget -= child;
            next += 1;
        }
        levels.push(vec![child; kids.len() - next - 1]);
        board = board.after(kids[next]).unwrap_or(board);
        last = Some(kids[next]);
        left = child;
    }
    let mut pieces: Vec<u64> = levels.into_iter().rev().flatten().collect();
    // The smallest first pieces are searched rather than handed back, as `search_unit` does.
    let (mut spent, mut absorbed) = (0, 0);
    for &n in &pieces {
        if spent + ABSORB_PIECE_NODES > ABSORB_NODES || n > ABSORB_PIECE_NODES {
            break;
        }
        spent += n;
        absorbed += 1;
    }
    pieces.drain(..absorbed);
    pieces
}

fn summary(name: &str, sizes: &[u64], asks: usize, budget: u64) {
    let small = sizes.iter().filter(|&&s| s < budget).count();
    let tiny = sizes.iter().filter(|&&s| s <= 10).count();
    println!(
        "{name}: {} pieces for {asks} asks ({:.1} per ask), {small} under the budget, {tiny} of 10 nodes or fewer, {} nodes in all",
        sizes.len(),
        sizes.len() as f64 / asks.max(1) as f64,
        sizes.iter().sum::<u64>()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(&args[1]);
    let bound: u32 = args[2].parse().expect("BOUND");
    let min_units: usize = args[3].parse().expect("N");
    let budget: u64 = args[4].parse().expect("BUDGET");
    let every: usize = args[5].parse().expect("K");
    let store = npuzzle_solver::store::TableStore::new(Some(dir));
    let shape: Shape = "5x5".parse().expect("shape");
    let (_, pdb) = store.best(shape).expect("tables");
    let goal = GoalSpec::BlankFirst.resolve(shape).expect("goal");
    let solver = Solver::with_pdb(goal, pdb).expect("solver");
    let (mut real, mut modelled, mut asks) = (Vec::new(), Vec::new(), 0usize);
    for line in std::io::stdin().lines() {
        let line = line.expect("stdin");
        let f: Vec<&str> = line.split_whitespace().collect();
        let tiles: Vec<u8> = f[2..].iter().map(|t| t.parse().expect("tile")).collect();
        let board = Board::new(shape, &tiles).expect("board");
        let frontier = solver.frontier(&board, min_units).expect("frontier");
        println!(
            "#{}: {} units at depth {}",
            f[0],
            frontier.units.len(),
            frontier.depth
        );
        for unit in frontier.units.iter().step_by(every) {
            let whole = solver
                .search_unit(unit, bound, &limits(None))
                .expect("search");
            if whole.expanded < 10 * budget {
                continue;
            }
            let stopped = solver
                .search_unit(unit, bound, &limits(Some(budget)))
                .expect("search");
            let UnitOutcome::Split(split) = stopped.outcome else {
                continue;
            };
            asks += 1;
            let sizes: Vec<u64> = split
                .pieces
                .iter()
                .map(|p| {
                    solver
                        .search_unit(&p.unit, bound, &limits(None))
                        .map_or(0, |r| r.expanded)
                })
                .collect();
            let m = model(
                unit.board,
                unit.last,
                whole.expanded,
                stopped.expanded - stopped.absorbed,
            );
            println!(
                "unit {:>10} nodes, stopped after {:>6} (+{} searched after the stop): real {:>2} pieces {:?}; model {:>2} pieces {:?}",
                whole.expanded,
                stopped.expanded - stopped.absorbed,
                stopped.absorbed,
                sizes.len(),
                sizes,
                m.len(),
                m
            );
            real.extend(sizes);
            modelled.extend(m);
        }
    }
    summary("real", &real, asks, budget);
    summary("model", &modelled, asks, budget);
}
