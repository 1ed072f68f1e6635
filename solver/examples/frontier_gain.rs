//! What a deduplicated frontier saves IDA* here: each instance is cut breadth-first (states
//! already seen dropped, as `Solver::frontier` does) into at least N units, which are then
//! searched bound after bound in order, as one serial search would (the A*+IDA* idea of Bu &
//! Korf 2019, with a breadth-first frontier); N = 1 is plain IDA*. Prints the units, the depth,
//! the nodes and the time for each N (docs/benchmarks/2026-12-24-puzzle-max-layouts.md, issue 21).
//!
//! ```sh
//! grep -E '^(38|40|44) ' data/korf24_50.txt | cargo run --release -p npuzzle-solver \
//!     --features store --example frontier_gain -- PDB_DIR 1,1000,30000,300000
//! ```
use npuzzle_solver::*;
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(&args[1]);
    let sizes: Vec<usize> = args[2].split(',').map(|s| s.parse().unwrap()).collect();
    let lines: Vec<String> = std::io::stdin().lines().map(|l| l.unwrap()).collect();
    let store = npuzzle_solver::store::TableStore::new(Some(dir));
    let shape: Shape = "5x5".parse().unwrap();
    let (_, pdb) = store.best(shape).unwrap();
    let goal = GoalSpec::BlankFirst.resolve(shape).unwrap();
    let solver = Solver::with_pdb(goal, pdb).unwrap();
    for line in lines {
        let f: Vec<&str> = line.split_whitespace().collect();
        let id = f[0];
        let len: usize = f[1].parse().unwrap();
        let tiles: Vec<u8> = f[2..].iter().map(|t| t.parse().unwrap()).collect();
        let board = Board::new(shape, &tiles).unwrap();
        for &n in &sizes {
            let t = Instant::now();
            let fr = solver.frontier(&board, n).unwrap();
            let tf = t.elapsed().as_secs_f64();
            let mut bound = fr
                .units
                .iter()
                .map(|u| solver.unit_lower_bound(u).unwrap())
                .min()
                .unwrap();
            let mut total = 0u64;
            let mut found = None;
            while found.is_none() {
                let mut next = u32::MAX;
                for u in &fr.units {
                    let r = solver.search_unit(u, bound, &Limits::default()).unwrap();
                    total += r.expanded;
                    match r.outcome {
                        UnitOutcome::Found(p) => {
                            found = Some(p);
                            break;
                        }
                        UnitOutcome::Exhausted { next_bound } => next = next.min(next_bound),
                        o => panic!("{o:?}"),
                    }
                }
                bound = next;
            }
            let p = found.unwrap();
            println!(
                "#{id} len {len} units {:>8} depth {:>2} frontier {:.2}s nodes {:>12} time {:.2}s found {}",
                fr.units.len(),
                fr.depth,
                tf,
                total,
                t.elapsed().as_secs_f64(),
                p.len()
            );
        }
    }
}
