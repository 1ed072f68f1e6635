//! The built-in partitions of a board's tiles into patterns.

use super::build::Geometry;
use super::{BlankGoal, PdbError};
use crate::shape::Shape;

/// A named split of a board's tiles into patterns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    pub name: String,
    pub shape: Shape,
    pub patterns: Vec<Vec<u8>>,
}

impl Partition {
    /// The built-in partitions: `4x4` `5-5-5`, `6-6-3` and `7-8`, `5x5` `6-6-6-6`, `6-6-6-6-kf`
    /// and `6-6-6-6-c`, and small ones for tests (`3x3` `4-4`, `2x4` / `4x2` `3-4`). All for the
    /// blank on cell 0.
    pub fn named(shape: Shape, name: &str) -> Result<Partition, PdbError> {
        let (w, h) = (shape.width(), shape.height());
        let patterns: Vec<Vec<u8>> = match ((w, h), name) {
            ((4, 4), "7-8") => vec![(1..=7).collect(), (8..=15).collect()],
            // Column-major groups. Of the layouts tried (row-major groups, blocks), these
            // generate the fewest nodes on Korf's 100 with the reflected lookup:
            // 6-6-3 406 k per instance (row-major: 898 k), 5-5-5 1.12 M (blocks: 3.73 M).
            ((4, 4), "6-6-3") => vec![
                vec![1, 4, 5, 8, 9, 12],
                vec![2, 3, 6, 7, 10, 11],
                vec![13, 14, 15],
            ],
            ((4, 4), "5-5-5") => vec![
                vec![1, 4, 5, 8, 9],
                vec![2, 3, 6, 7, 11],
                vec![10, 12, 13, 14, 15],
            ],
            ((5, 5), "6-6-6-6") => vec![
                vec![1, 2, 5, 6, 7, 10],
                vec![3, 4, 8, 9, 13, 14],
                vec![11, 12, 15, 16, 17, 20],
                vec![18, 19, 21, 22, 23, 24],
            ],
            // Korf & Felner's (2002) layout, whose published node counts data/ holds: two
            // irregular patterns round the blank's home corner, three 2x3 blocks.
            ((5, 5), "6-6-6-6-kf") => vec![
                vec![1, 2, 5, 6, 7, 12],
                vec![3, 4, 8, 9, 13, 14],
                vec![10, 11, 15, 16, 20, 21],
                vec![17, 18, 19, 22, 23, 24],
            ],
            // A third layout for the max (docs/performance.md): blocks shifted against the two
            // above, so that few of its patterns coincide with theirs.
            ((5, 5), "6-6-6-6-c") => vec![
                vec![1, 2, 3, 6, 7, 8],
                vec![4, 9, 13, 14, 19, 24],
                vec![5, 10, 11, 15, 16, 20],
                vec![12, 17, 18, 21, 22, 23],
            ],
            ((3, 3), "4-4") => vec![vec![1, 2, 3, 4], vec![5, 6, 7, 8]],
            ((2, 4), "3-4") | ((4, 2), "3-4") => vec![vec![1, 2, 3], vec![4, 5, 6, 7]],
            _ => {
                return Err(PdbError::Pattern(format!(
                    "no partition {name:?} for {shape} (known: 4x4 5-5-5, 6-6-3 and 7-8, 5x5 6-6-6-6, 6-6-6-6-kf and 6-6-6-6-c, 3x3 4-4, 2x4 and 4x2 3-4)"
                )));
            }
        };
        Ok(Partition {
            name: name.to_string(),
            shape,
            patterns,
        })
    }
}

/// A table the dual lookups need beyond a partition's own ([`Partition::dual_tables`]): always
/// towards a goal with the blank anywhere ([`BlankGoal::Free`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DualTable {
    pub tiles: Vec<u8>,
    /// What it stands for: the whole pattern `pattern` (`without: None`), or that pattern less
    /// the tile `without`.
    pub pattern: usize,
    pub without: Option<u8>,
}

impl DualTable {
    /// Where the blank belongs in the table's goal: anywhere.
    pub fn blank(&self) -> BlankGoal {
        BlankGoal::Free
    }
}

impl Partition {
    /// The tables the dual lookups need besides the partition's own, in the order
    /// [`crate::PdbHeuristic::with_dual`] takes them:
    /// - each pattern towards a goal with the blank anywhere, unless its table for the blank on
    ///   cell 0 already is that one (when the cells its tiles leave free at the goal are one
    ///   region, the blank's start makes no difference);
    /// - each pattern less each of its tiles, blank anywhere (the dual of a board whose blank is
    ///   on cell `b` is measured towards a goal with tile `b` on cell 0: `b`'s pattern is looked
    ///   up without it, and `b` counted by its Manhattan distance).
    pub fn dual_tables(&self) -> Vec<DualTable> {
        let mut out = Vec::new();
        for (p, tiles) in self.patterns.iter().enumerate() {
            if !free_cells_are_one_region(self.shape, tiles) {
                out.push(DualTable {
                    tiles: tiles.clone(),
                    pattern: p,
                    without: None,
                });
            }
        }
        for (p, tiles) in self.patterns.iter().enumerate() {
            if tiles.len() < 2 {
                continue;
            }
            for &b in tiles {
                out.push(DualTable {
                    tiles: tiles.iter().copied().filter(|&t| t != b).collect(),
                    pattern: p,
                    without: Some(b),
                });
            }
        }
        out
    }
}

/// Whether the cells that `tiles` leave free when they are home form one connected region.
fn free_cells_are_one_region(shape: Shape, tiles: &[u8]) -> bool {
    let geometry = Geometry::new(shape);
    let free = geometry.all & !tiles.iter().fold(0u32, |m, &t| m | 1 << t);
    geometry.flood(free & free.wrapping_neg(), free) == free
}
