//! Additive disjoint pattern databases (Korf & Felner 2002, "Disjoint pattern database
//! heuristics").
//!
//! The tiles are split into disjoint *patterns*. For each pattern a table holds, for every
//! placement of that pattern's tiles, the fewest moves **of those tiles** that bring them all
//! home, the other tiles being ignored (the blank is wherever it is needed). Since each move
//! moves one tile of one pattern, the values of disjoint patterns add up to a lower bound: the
//! sum is admissible. It is not consistent: the tables know that the blank cannot cross a wall
//! of pattern tiles (see [`PatternDb::build`]), so one move can raise a value by 3 or more. On
//! square boards the board reflected about the main diagonal gives a second admissible value;
//! the heuristic is the larger of the two sums.
//!
//! The search carries each table's rank (its index into the table) from a node to its children
//! and changes it by what the move changes (see `rank_change`), so a lookup costs a few
//! additions and one memory read.
//!
//! Tables are built for the goal "blank on cell 0, tile k on cell k" (Korf's goal). Like every
//! heuristic here they see boards relabelled by their goal, so any goal whose blank belongs on
//! cell 0 uses them directly; the [`crate::Solver`] turns boards whose blank belongs on the last
//! cell by 180° to use them too.
//!
//! A placement of a pattern's `k` tiles on `n` cells is indexed densely by its rank as a
//! k-permutation of n (`n!/(n-k)!` entries). In memory an entry takes four bits: its distance
//! less the pattern tiles' Manhattan distance (which the search carries along anyway), halved,
//! capped at 15; the 7-8 tables take 289 MB instead of 577 MB, and none of the built-in
//! partitions has an entry at the cap. Files (format 3) hold the packed table as it lies in
//! memory, so loading one is a read and a checksum; format 2 files, one byte an entry, are still
//! read and packed as they come.
//!
//! # Parts
//!
//! - this file: [`PatternDb`] (one pattern's table: ranks of placements, lookups) and
//!   [`PdbError`];
//! - `build`: the breadth-first construction, on every core;
//! - `packing`: four bits an entry, the odometer over placements, [`Histogram`];
//! - `file`: the table file format ([`FORMAT`]), verified as it is read;
//! - `memory`: the tables' memory (huge pages), the only `unsafe` code of the solver;
//! - `partition`: the built-in [`Partition`]s;
//! - `sparse`: the sparse layout (a placement's cells as the digits of its index), which the
//!   heuristic reads the 5x5 tables through;
//! - `heuristic`: [`PdbHeuristic`], what the search carries from node to node;
//! - `max`: [`PdbMax`], several partitions under the max, each carried the same way;
//! - `sparse_max`: [`SparseMax`], the same for partitions of sparse tables (the 5x5 ones) in a
//!   state a third the size, which is what the search carries for them;
//! - `zero_aware`: zero-aware tables ([`TableKind::ZeroAware`]: an entry per placement and
//!   region of free cells holding the blank), built by the same search, file format
//!   [`ZERO_AWARE_FORMAT`];
//! - `regions`: [`Regions`], their index (the map of occupied cells, its regions, the tiles'
//!   order), shared by every table of as many tiles on a board;
//! - `split`: zero-aware tables in the split layout (the sparse index, two values a placement:
//!   the blank in the map's largest region or in another), as the search reads the 5x5 ones
//!   through [`SparseMax`] and as their files hold them (format [`SPLIT_FORMAT`]);
//! - `zero_max`: [`ZeroMax`], what the search carries for zero-aware tables in their own index
//!   (a table is read only when one of its tiles moves);
//! - `zero_tests`: zero-aware tables against plain searches and exact distances;
//! - `split_tests`: split tables through their files (format [`SPLIT_FORMAT`]) against the
//!   tables split as they load.
//!
//! # Example
//!
//! ```
//! use npuzzle_solver::{Partition, PdbHeuristic, Shape};
//!
//! let shape = Shape::new(3, 3)?;
//! let partition = Partition::named(shape, "4-4")?;
//! let pdb = PdbHeuristic::build(&partition, true, |_table, _done, _total| {})?;
//! let histogram = pdb.tables()[0].histogram();
//! assert_eq!(histogram.entries(), 9 * 8 * 7 * 6);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod build;
mod file;
mod heuristic;
mod max;
// The solver denies `unsafe` everywhere else (lib.rs).
#[allow(unsafe_code)]
mod memory;
mod packing;
mod partition;
mod regions;
mod sparse;
mod sparse_max;
mod split;
#[cfg(test)]
mod split_tests;
#[cfg(test)]
mod tests;
mod zero_aware;
mod zero_max;
#[cfg(test)]
mod zero_tests;

pub use file::{FORMAT, PACKED_FORMAT};
pub use heuristic::{PdbAll, PdbHeuristic, PdbState};
pub use max::PdbMax;
pub use packing::Histogram;
pub use partition::{DualTable, Partition};
pub use regions::Regions;
pub use sparse_max::{SparseMax, SparseMaxState};
pub use split::SPLIT_FORMAT;
pub use zero_aware::{TableKind, ZERO_AWARE_FORMAT};
pub use zero_max::{ZeroMax, ZeroMaxState};

use std::sync::Arc;

use thiserror::Error;

use crate::shape::Shape;
use packing::{manhattan, unpack};

/// `a! / (a-b)!`: arrangements of `b` things out of `a`.
fn arrangements(a: usize, b: usize) -> u64 {
    (a - b + 1..=a).map(|x| x as u64).product()
}

/// One pattern's table.
#[derive(Clone)]
pub struct PatternDb {
    shape: Shape,
    /// The goal cells (= labels) of the pattern's tiles, in index order.
    tiles: Vec<u8>,
    /// Where the blank belongs in the goal the values are distances to.
    blank: BlankGoal,
    /// `multiplier[i]`: the weight of the i-th tile's digit in the rank.
    multiplier: Vec<u64>,
    /// Two entries a byte, the even index's in the low half (see [`nibble`]).
    table: Arc<[u8]>,
    /// The digits' weights when the table is in the sparse layout (`sparse`: a placement's
    /// index is its cells as digits), `None` in the dense one (its index is its rank). Built
    /// and stored tables are dense; [`PdbHeuristic`] turns the ones it reads faster sparse.
    sparse: Option<[u32; 8]>,
    /// The maps of a zero-aware table (`zero_aware`: one entry per placement and region of the
    /// blank), `None` for a table of one entry per placement (the minimum over the regions).
    zero: Option<Arc<Regions>>,
}

impl std::fmt::Debug for PatternDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PatternDb({} {:?}, {} entries)",
            self.shape,
            self.tiles,
            self.table.len()
        )
    }
}

/// Where the blank belongs in a table's goal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlankGoal {
    /// On cell 0 (Korf's goal): the tables of the regular and reflected lookups.
    Home,
    /// Anywhere: every placement's value is the least over where the blank ends. Weaker, but
    /// admissible towards every goal that puts the pattern's tiles home wherever the blank
    /// is, which is what the dual lookups need (see `heuristic`).
    Free,
}

/// Why a pattern or partition was refused, or a stored table rejected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PdbError {
    #[error("invalid pattern: {0}")]
    Pattern(String),
    #[error("not a pattern database file (bad magic)")]
    BadMagic,
    #[error(
        "pattern database format version {found} is not supported (this build reads {oldest} to {newest}): rebuild it with `npuzzle pdb build`"
    )]
    Version {
        found: u32,
        oldest: u32,
        newest: u32,
    },
    #[error("pattern database file is truncated: {0}")]
    Truncated(String),
    #[error("pattern database checksum mismatch: the file is corrupt")]
    Checksum,
    #[error("pattern database is for {found}, not {expected}")]
    Mismatch { found: String, expected: String },
    #[error("pattern database could not be read: {0}")]
    Read(String),
}

impl PatternDb {
    fn check_pattern(shape: Shape, tiles: &[u8]) -> Result<(), PdbError> {
        let n = shape.cells();
        if tiles.is_empty() || tiles.len() >= n {
            return Err(PdbError::Pattern(format!(
                "a pattern needs 1 to {} tiles, got {}",
                n - 2,
                tiles.len()
            )));
        }
        let mut seen = 0u32;
        for &t in tiles {
            if t == 0 || t as usize >= n {
                return Err(PdbError::Pattern(format!(
                    "tile {t} is not a tile of a {shape} board (1 to {})",
                    n - 1
                )));
            }
            if seen & (1 << t) != 0 {
                return Err(PdbError::Pattern(format!("tile {t} appears twice")));
            }
            seen |= 1 << t;
        }
        Ok(())
    }

    fn new(shape: Shape, tiles: &[u8], blank: BlankGoal, table: Arc<[u8]>) -> PatternDb {
        let n = shape.cells();
        let k = tiles.len();
        let multiplier = (0..k).map(|i| arrangements(n - 1 - i, k - 1 - i)).collect();
        PatternDb {
            shape,
            tiles: tiles.to_vec(),
            blank,
            multiplier,
            table,
            sparse: None,
            zero: None,
        }
    }

    /// Entries of a table for `k` tiles on `shape`.
    pub fn entries(shape: Shape, k: usize) -> u64 {
        arrangements(shape.cells(), k)
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// Where the blank belongs in the table's goal.
    pub fn blank_goal(&self) -> BlankGoal {
        self.blank
    }

    /// The pattern's tiles (their goal cells), in index order.
    pub fn tiles(&self) -> &[u8] {
        &self.tiles
    }

    /// The packed table: two entries a byte (each entry's distance less the pattern tiles'
    /// Manhattan distance, halved, capped at 15), the even index's in the low half, in the
    /// table's layout ([`PatternDb::is_sparse`]).
    pub fn table(&self) -> &[u8] {
        &self.table
    }

    /// Whether the table is in the sparse layout (a placement's index is its tiles' cells as
    /// the digits of a number, see [`PdbHeuristic`]) rather than the dense one (its rank).
    pub fn is_sparse(&self) -> bool {
        self.sparse.is_some()
    }

    /// The index of a placement in the table's layout: `cells[i]` is the cell of the i-th
    /// pattern tile.
    #[inline(always)]
    fn index(&self, cells: impl Iterator<Item = u8>) -> usize {
        match &self.sparse {
            Some(weight) => (cells.zip(weight))
                .map(|(c, &w)| c as usize * w as usize)
                .sum(),
            None => self.rank(cells),
        }
    }

    /// The rank of a placement: `cells[i]` is the cell of the i-th pattern tile.
    #[inline(always)]
    fn rank(&self, cells: impl Iterator<Item = u8>) -> usize {
        let mut used = 0u32;
        let mut rank = 0u64;
        for (i, q) in cells.enumerate() {
            let q = q as u32 & 31;
            let smaller = (used & ((1u32 << q) - 1)).count_ones();
            rank += (q - smaller) as u64 * self.multiplier[i];
            used |= 1 << q;
        }
        rank as usize
    }

    /// The placement of a rank (inverse of [`PatternDb::rank`]).
    fn unrank(&self, mut rank: u64, out: &mut [u8]) {
        let mut used = 0u32;
        for (i, slot) in out.iter_mut().enumerate().take(self.tiles.len()) {
            let m = self.multiplier[i];
            let d = (rank / m) as u32;
            rank %= m;
            // The d-th free cell.
            let mut free = !used;
            for _ in 0..d {
                free &= free - 1;
            }
            let q = free.trailing_zeros();
            *slot = q as u8;
            used |= 1 << q;
        }
    }

    /// The value for a board given as `position[label]` (the cell of each label; the blank,
    /// label 0, is read by zero-aware tables only).
    #[inline(always)]
    pub fn lookup(&self, position: &[u8]) -> u8 {
        if let Some(regions) = &self.zero {
            return self.zero_lookup(regions, position);
        }
        let r = self.index(self.tiles.iter().map(|&t| position[t as usize & 31]));
        let md: u32 = self
            .tiles
            .iter()
            .map(|&t| manhattan(self.shape, t as usize, position[t as usize & 31] as usize))
            .sum();
        unpack(&self.table, r, md) as u8
    }
}
