//! Helpers shared by the solver's integration tests.
#![allow(dead_code)]

use std::collections::HashMap;

use npuzzle_solver::{Board, Goal, Move, Shape};

/// Every state reachable from `goal`, with its distance (breadth-first search).
pub fn bfs_distances(goal: &Goal) -> HashMap<Board, u32> {
    let mut dist = HashMap::from([(*goal.board(), 0u32)]);
    let mut layer = vec![*goal.board()];
    let mut d = 0;
    while !layer.is_empty() {
        d += 1;
        let mut next = Vec::new();
        for b in &layer {
            for mv in Move::ALL {
                if let Some(c) = b.after(mv)
                    && !dist.contains_key(&c)
                {
                    dist.insert(c, d);
                    next.push(c);
                }
            }
        }
        layer = next;
    }
    dist
}

/// Every permutation of `0..n`, in lexicographic order.
pub fn permutations(n: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut p: Vec<u8> = (0..n as u8).collect();
    loop {
        out.push(p.clone());
        // Next lexicographic permutation.
        let Some(i) = (0..n.saturating_sub(1)).rev().find(|&i| p[i] < p[i + 1]) else {
            return out;
        };
        let j = (i + 1..n).rev().find(|&j| p[j] > p[i]).unwrap();
        p.swap(i, j);
        p[i + 1..].reverse();
    }
}

/// A Korf-file instance: id, optimal length, board.
pub struct Instance {
    pub id: usize,
    pub optimal: usize,
    pub board: Board,
}

/// Reads `id optimal tiles…` lines (Korf's files), skipping `#` comments.
pub fn read_instances(text: &str) -> Vec<Instance> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Instance {
                id: f[0].parse().unwrap(),
                optimal: f[1].parse().unwrap(),
                board: Board::parse(&f[2..].join(" "), None).unwrap(),
            }
        })
        .collect()
}

pub const KORF100: &str = include_str!("../../../../data/korf100.txt");
pub const KORF24_50: &str = include_str!("../../../../data/korf24_50.txt");
pub const KORF100_MD_NODES: &str = include_str!("../../../../data/korf100_md_nodes.txt");

/// (id, reproduced IDA*+Manhattan node count = generated + 1) for Korf's 100.
pub fn korf_md_nodes() -> Vec<(usize, u64)> {
    KORF100_MD_NODES
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].parse().unwrap(), f[4].parse().unwrap())
        })
        .collect()
}

pub fn shape(w: usize, h: usize) -> Shape {
    Shape::new(w, h).unwrap()
}
