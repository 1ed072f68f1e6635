//! Exact distances for boards of at most 9 cells (the 8-puzzle and smaller): a breadth-first
//! search from the goal fills a table with every state's distance, which is then the perfect
//! heuristic. IDA* with it expands little more than the solution path, so every 8-puzzle is
//! answered in microseconds. Tables are built once per process per (shape, blank goal cell) and
//! shared.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::board::step;
use crate::heuristic::Heuristic;
use crate::moves::Move;
use crate::shape::Shape;

/// The most cells [`ExactDistance`] handles: 9! = 362,880 table entries.
pub const EXACT_MAX_CELLS: usize = 9;

const UNREACHED: u8 = u8::MAX;

/// The exact distance to the goal, looked up by the rank of the whole (relabelled) board.
#[derive(Clone, Debug)]
pub struct ExactDistance {
    /// Distance by permutation rank; [`UNREACHED`] for the other parity.
    table: Arc<[u8]>,
    cells: usize,
    blank_label: u8,
}

/// Lehmer rank of a permutation of `0..n` packed 4 bits a cell.
fn rank(packed: u64, n: usize) -> usize {
    let mut rank = 0usize;
    let mut seen = 0u32;
    for i in 0..n {
        let v = ((packed >> (4 * i)) & 0xF) as u32;
        // Values not yet seen that are smaller than v.
        let smaller = v - (seen & ((1 << v) - 1)).count_ones();
        rank = rank * (n - i) + smaller as usize;
        seen |= 1 << v;
    }
    rank
}

fn pack(cells: &[u8]) -> u64 {
    cells
        .iter()
        .enumerate()
        .fold(0, |acc, (i, &l)| acc | (l as u64) << (4 * i))
}

fn build(shape: Shape, blank_label: usize) -> Arc<[u8]> {
    let n = shape.cells();
    let size: usize = (1..=n).product();
    let mut table = vec![UNREACHED; size];
    let goal: Vec<u8> = (0..n as u8).collect();
    let start = pack(&goal);
    table[rank(start, n)] = 0;
    let mut layer = vec![(start, blank_label)];
    let mut d = 0u8;
    while !layer.is_empty() {
        d += 1;
        let mut next = Vec::with_capacity(layer.len() * 2);
        for &(packed, blank) in &layer {
            for mv in Move::ALL {
                let Some(to) = step(shape, blank, mv) else {
                    continue;
                };
                let label = (packed >> (4 * to)) & 0xF;
                let child = (packed & !(0xF << (4 * to)) & !(0xF << (4 * blank)))
                    | label << (4 * blank)
                    | (blank_label as u64) << (4 * to);
                let r = rank(child, n);
                if table[r] == UNREACHED {
                    table[r] = d;
                    next.push((child, to));
                }
            }
        }
        layer = next;
    }
    table.into()
}

impl ExactDistance {
    /// The table for `shape` with the blank's goal on cell `blank_label`, or `None` when the
    /// board has more than [`EXACT_MAX_CELLS`] cells.
    pub fn new(shape: Shape, blank_label: usize) -> Option<ExactDistance> {
        if shape.cells() > EXACT_MAX_CELLS {
            return None;
        }
        type Tables = Mutex<HashMap<(Shape, usize), Arc<[u8]>>>;
        static TABLES: OnceLock<Tables> = OnceLock::new();
        let tables = TABLES.get_or_init(Default::default);
        // A poisoned lock only means another thread panicked mid-build; the map is still sound.
        let mut map = tables.lock().unwrap_or_else(|e| e.into_inner());
        let table = map
            .entry((shape, blank_label))
            .or_insert_with(|| build(shape, blank_label))
            .clone();
        Some(ExactDistance {
            table,
            cells: shape.cells(),
            blank_label: blank_label as u8,
        })
    }

    fn lookup(&self, packed: u64) -> u32 {
        self.table
            .get(rank(packed, self.cells))
            .map_or(0, |&d| d as u32)
    }
}

impl Heuristic for ExactDistance {
    /// The board, packed 4 bits a cell.
    type State = u64;

    fn evaluate(&self, cells: &[u8]) -> (u32, u64) {
        let packed = pack(&cells[..self.cells]);
        (self.lookup(packed), packed)
    }

    #[inline]
    fn after_move(
        &self,
        _: u32,
        packed: &u64,
        label: u8,
        from: usize,
        to: usize,
        _: bool,
    ) -> (u32, u64) {
        let (from, to) = (from & 15, to & 15);
        let next = (packed & !(0xF << (4 * to)) & !(0xF << (4 * from)))
            | (label as u64) << (4 * to)
            | (self.blank_label as u64) << (4 * from);
        (self.lookup(next), next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_a_bijection() {
        let mut seen = [false; 24];
        for a in 0..4u8 {
            for b in 0..4u8 {
                for c in 0..4u8 {
                    for d in 0..4u8 {
                        let p = [a, b, c, d];
                        let mut s = p.to_vec();
                        s.sort();
                        if s == [0, 1, 2, 3] {
                            let r = rank(pack(&p), 4);
                            assert!(!seen[r]);
                            seen[r] = true;
                        }
                    }
                }
            }
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn the_8_puzzle_table_has_half_the_permutations_and_diameter_31() {
        let shape = Shape::new(3, 3).unwrap();
        let t = build(shape, 8);
        let reached: Vec<u8> = t.iter().copied().filter(|&d| d != UNREACHED).collect();
        assert_eq!(reached.len(), 181_440);
        assert_eq!(reached.iter().max(), Some(&31));
        assert!(ExactDistance::new(Shape::new(4, 3).unwrap(), 11).is_none());
    }
}
