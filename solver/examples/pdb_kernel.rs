//! The pattern-database search kernel alone, one thread: loads a partition's tables from a
//! directory, solves every board of a benchmark file, and prints nodes, time and rate per
//! board and in all, and the process's peak resident memory. Every answer is replayed to the
//! goal and checked against the file's optimal length.
//!
//! ```sh
//! cargo run --release -p npuzzle-solver --features store --example pdb_kernel -- \
//!     DIR 4x4 7-8 data/korf100.txt [IDS]
//! ```
//!
//! DIR holds the tables (`npuzzle pdb build`); the file has lines `id optimal t0 t1 ...` for
//! the blank-first goal (Korf's), as in `data/`; IDS (e.g. `1,5,9`) picks some of them.
//! `PDB_KERNEL_PLAIN=1` turns duplicate pruning off (plain IDA*: only the previous move is never
//! undone), for before/after figures from one binary.

use std::path::PathBuf;
use std::time::Instant;

use npuzzle_solver::Partition;
use npuzzle_solver::store::TableStore;
use npuzzle_solver::{Board, Goal, Limits, SearchOutcome, Shape, Solver};

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, shape, partition, file, rest @ ..] = args.as_slice() else {
        return Err("usage: pdb_kernel DIR SHAPE PARTITION FILE [IDS]".into());
    };
    let ids: Option<Vec<u32>> = rest
        .first()
        .map(|s| s.split(',').map(str::parse).collect())
        .transpose()?;
    let shape: Shape = shape.parse()?;
    let partition = Partition::named(shape, partition)?;
    let started = Instant::now();
    let pdb =
        TableStore::new(Some(PathBuf::from(dir))).load(&partition, true, false, |_, _, _| {})?;
    let loaded = started.elapsed();
    // Entries packed at the cap (15: 30 or more above their Manhattan distance), per table.
    let at_cap: Vec<usize> = pdb
        .tables()
        .iter()
        .map(|db| {
            db.table()
                .iter()
                .map(|&b| usize::from(b & 15 == 15) + usize::from(b >> 4 == 15))
                .sum()
        })
        .collect();
    println!("entries at the packing cap, per table: {at_cap:?}");
    let plain = std::env::var_os("PDB_KERNEL_PLAIN").is_some_and(|v| v == "1");
    let solver = Solver::with_pdb(Goal::blank_first(shape), pdb)?.with_duplicate_pruning(!plain);
    if plain {
        println!("duplicate pruning off (plain IDA*)");
    }
    println!(
        "loaded {shape} {} in {:.2} s, peak RSS {:.0} MB",
        partition.name,
        loaded.as_secs_f64(),
        peak_rss_mb()
    );
    let (mut expanded, mut generated, mut seconds, mut boards) = (0u64, 0u64, 0f64, 0);
    for line in std::fs::read_to_string(file)?.lines() {
        let mut fields = line.split_whitespace();
        let (Some(id), Some(optimal)) = (fields.next(), fields.next()) else {
            continue;
        };
        let (Ok(id), Ok(optimal)) = (id.parse::<u32>(), optimal.parse::<usize>()) else {
            continue;
        };
        if ids.as_ref().is_some_and(|ids| !ids.contains(&id)) {
            continue;
        }
        let tiles: Vec<&str> = fields.collect();
        let board = Board::parse(&tiles.join(" "), Some(shape))?;
        let report = solver.solve(&board, &Limits::default())?;
        let SearchOutcome::Solved(path) = &report.outcome else {
            return Err(format!("#{id}: not solved: {:?}", report.outcome).into());
        };
        let end = path
            .iter()
            .try_fold(board, |b, &m| b.after(m))
            .ok_or_else(|| format!("#{id}: the path leaves the board"))?;
        if &end != Goal::blank_first(shape).board() || path.len() != optimal {
            return Err(format!(
                "#{id}: {} moves, not an optimal path of {optimal}",
                path.len()
            )
            .into());
        }
        let s = report.stats.elapsed.as_secs_f64();
        println!(
            "#{id} {optimal} moves: {} expanded, {} generated, {s:.3} s",
            report.stats.expanded, report.stats.generated
        );
        expanded += report.stats.expanded;
        generated += report.stats.generated;
        seconds += s;
        boards += 1;
    }
    println!(
        "total: {boards} boards, {expanded} expanded, {generated} generated, {seconds:.3} s search, {:.2} M expanded/s, peak RSS {:.0} MB",
        expanded as f64 / seconds / 1e6,
        peak_rss_mb()
    );
    Ok(())
}
