//! Korf's 100 instances (`data/korf100.txt`, blank-first goal) and requests for them; their
//! answers are checked with [`assert_optimal`](super::assert_optimal) and
//! `GoalSpec::BlankFirst`.

use npuzzle_proto::v1;

/// Korf's instances: (id, optimal length, tiles) for the blank-first goal.
pub fn korf(ids: &[usize]) -> Vec<(usize, usize, String)> {
    include_str!("../../../data/korf100.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let id: usize = f[0].parse().ok()?;
            ids.contains(&id)
                .then(|| (id, f[1].parse().unwrap(), f[2..].join(" ")))
        })
        .collect()
}

/// Korf's instances with the fewest nodes (Manhattan IDA*, `data/korf100_md_nodes.txt`).
pub const EASIEST_KORF: [usize; 5] = [79, 12, 42, 55, 97];

/// A request for `tiles` (row-major, square) towards `goal`.
pub fn request(tiles: &str, goal: v1::GoalKind) -> v1::SolveRequest {
    let tiles: Vec<u32> = tiles
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect();
    let side = (tiles.len() as f64).sqrt() as u32;
    v1::SolveRequest {
        board: Some(v1::Board {
            width: side,
            height: side,
            tiles,
        }),
        goal: Some(v1::Goal {
            kind: goal as i32,
            tiles: vec![],
        }),
        ..Default::default()
    }
}
