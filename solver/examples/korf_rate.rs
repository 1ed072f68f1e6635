//! Quick node-rate probe: `cargo run --release -p npuzzle-solver --example korf_rate -- md 1 5`
use npuzzle_solver::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind: HeuristicKind = args[1].parse().unwrap();
    let from: usize = args[2].parse().unwrap();
    let to: usize = args[3].parse().unwrap();
    let text = std::fs::read_to_string("data/korf100.txt").unwrap();
    let shape = Shape::new(4, 4).unwrap();
    let solver = Solver::new(Goal::blank_first(shape), kind);
    let (mut te, mut tg, mut tt) = (0u64, 0u64, 0f64);
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let id: usize = f[0].parse().unwrap();
        if id < from || id > to {
            continue;
        }
        let opt: usize = f[1].parse().unwrap();
        let board = Board::parse(&f[2..].join(" "), None).unwrap();
        let r = solver.solve(&board, &Limits::default()).unwrap();
        let SearchOutcome::Solved(p) = r.outcome else {
            panic!()
        };
        assert_eq!(p.len(), opt);
        let s = r.stats.elapsed.as_secs_f64();
        println!(
            "{id} len {opt} exp {} gen {} {:.2}s {:.1} Mexp/s",
            r.stats.expanded,
            r.stats.generated,
            s,
            r.stats.expanded as f64 / s / 1e6
        );
        te += r.stats.expanded;
        tg += r.stats.generated;
        tt += s;
    }
    println!(
        "total exp {te} gen {tg} {tt:.2}s {:.1} Mexp/s {:.1} Mgen/s",
        te as f64 / tt / 1e6,
        tg as f64 / tt / 1e6
    );
}
