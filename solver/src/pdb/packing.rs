//! Four bits an entry: each entry's distance less its tiles' Manhattan distance, halved,
//! and the odometer that walks placements in rank order with that distance carried along.

use std::sync::Arc;

use super::memory::table_memory;
use super::{BlankGoal, PatternDb};
use crate::shape::Shape;

/// The moves from `cell` to the goal cell of `label` (the label itself), ignoring every other
/// tile.
pub(super) fn manhattan(shape: Shape, label: usize, cell: usize) -> u32 {
    (shape.row(label).abs_diff(shape.row(cell)) + shape.col(label).abs_diff(shape.col(cell))) as u32
}

/// `manhattan[label][cell]`: [`manhattan`] for every label and cell, for the hot loops.
pub(super) fn manhattan_table(shape: Shape) -> [[u8; 32]; 32] {
    let mut md = [[0u8; 32]; 32];
    for (label, row) in md.iter_mut().enumerate().take(shape.cells()) {
        for (cell, d) in row.iter_mut().enumerate().take(shape.cells()) {
            *d = manhattan(shape, label, cell) as u8;
        }
    }
    md
}

/// The value of entry `rank` of a packed table (see [`nibble`]) for a placement whose pattern
/// tiles' Manhattan distances sum to `md`.
#[inline(always)]
pub(super) fn unpack(table: &[u8], rank: usize, md: u32) -> u32 {
    let byte = table.get(rank >> 1).copied().unwrap_or(0);
    md + 2 * ((byte >> ((rank & 1) * 4)) & 15) as u32
}

/// The placements of a pattern in rank order, with the pattern tiles' summed Manhattan
/// distance: stepped like an odometer (the last tile moves on to the next free cell; when it
/// runs out, the one before moves on and the rest restart from their first free cells), so
/// that a step costs a few instructions, not an unrank.
pub(super) struct Odometer<'a> {
    db: &'a PatternDb,
    manhattan: &'a [[u8; 32]; 32],
    all: u32,
    pub(super) cells: [u8; 32],
    /// `before[i]`: the cells of tiles `0..i`.
    before: [u32; 9],
    pub(super) md: u32,
}

impl<'a> Odometer<'a> {
    pub(super) fn at(db: &'a PatternDb, manhattan: &'a [[u8; 32]; 32], rank: u64) -> Odometer<'a> {
        let k = db.tiles.len();
        let all = if db.shape.cells() >= 32 {
            u32::MAX
        } else {
            (1u32 << db.shape.cells()) - 1
        };
        let mut o = Odometer {
            db,
            manhattan,
            all,
            cells: [0; 32],
            before: [0; 9],
            md: 0,
        };
        db.unrank(rank, &mut o.cells);
        for i in 0..k.min(8) {
            o.before[i + 1] = o.before[i] | 1 << o.cells[i];
            o.md += o.dist(i, o.cells[i]);
        }
        o
    }

    #[inline(always)]
    fn dist(&self, i: usize, cell: u8) -> u32 {
        self.manhattan[self.db.tiles[i] as usize & 31][cell as usize & 31] as u32
    }

    /// Moves on to the next rank (past the last one it stays put).
    #[inline(always)]
    pub(super) fn step(&mut self) {
        let k = self.db.tiles.len().min(8);
        let mut i = k - 1;
        loop {
            let higher = self.all & !self.before[i] & !((2u32 << self.cells[i]) - 1);
            if higher != 0 {
                let c = higher.trailing_zeros() as u8;
                self.md = self.md - self.dist(i, self.cells[i]) + self.dist(i, c);
                self.cells[i] = c;
                break;
            }
            if i == 0 {
                return;
            }
            i -= 1;
        }
        for j in i + 1..k {
            self.before[j] = self.before[j - 1] | 1 << self.cells[j - 1];
            let c = (self.all & !self.before[j]).trailing_zeros() as u8;
            self.md = self.md - self.dist(j, self.cells[j]) + self.dist(j, c);
            self.cells[j] = c;
        }
    }
}

/// An entry's nibble: its distance less the Manhattan distance (always even and not negative
/// for a table built here, since every move of a pattern tile changes that tile's Manhattan
/// distance by one), halved, and capped at 15 (a capped entry still gives a lower bound).
#[inline(always)]
pub(super) fn nibble(value: u8, md: u32) -> u8 {
    ((value as u32).saturating_sub(md) / 2).min(15) as u8
}

impl PatternDb {
    /// A table from its exact values (one byte a placement, in rank order), packed two
    /// entries a byte (see [`nibble`]), on every core.
    pub(super) fn from_values(
        shape: Shape,
        tiles: &[u8],
        blank: BlankGoal,
        values: &[u8],
    ) -> PatternDb {
        let mut db = PatternDb::new(shape, tiles, blank, Arc::from(Vec::new()));
        let manhattan = manhattan_table(shape);
        let total = values.len() as u64;
        let mut table = table_memory(total.div_ceil(2) as usize);
        let Some(packed) = Arc::get_mut(&mut table) else {
            return db;
        };
        let threads = std::thread::available_parallelism().map_or(1, |t| t.get()) as u64;
        // Each thread packs whole bytes: an even number of ranks.
        let per_thread = ((total.div_ceil(threads) + 1) & !1).max(2);
        std::thread::scope(|scope| {
            for (t, chunk) in packed.chunks_mut((per_thread / 2) as usize).enumerate() {
                let (db, manhattan) = (&db, &manhattan);
                scope.spawn(move || {
                    let start = t as u64 * per_thread;
                    let mut odometer = Odometer::at(db, manhattan, start);
                    let end = (start + per_thread).min(total);
                    for rank in start..end {
                        let n = nibble(values[rank as usize], odometer.md);
                        chunk[((rank - start) / 2) as usize] |= n << ((rank & 1) * 4);
                        odometer.step();
                    }
                });
            }
        });
        db.table = table;
        db
    }

    /// How many entries hold each value, walked in rank order without materialising them
    /// (what `npuzzle pdb build` prints: the mean and the largest value).
    pub fn histogram(&self) -> Histogram {
        let mut counts = [0u64; 256];
        self.for_each_value(|v| counts[v as usize] += 1);
        Histogram { counts }
    }

    /// Every entry's value, in rank order (what a format 2 file holds): a byte an entry, for
    /// the tests that compare whole tables.
    #[cfg(test)]
    pub(crate) fn values(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len() as usize);
        self.for_each_value(|v| out.push(v));
        out
    }

    /// Calls `f` with every entry's value, in rank order (a zero-aware table's: see
    /// `for_each_zero_value`).
    pub(super) fn for_each_value(&self, mut f: impl FnMut(u8)) {
        if let Some(regions) = &self.zero {
            return self.for_each_zero_value(regions, f);
        }
        let manhattan = manhattan_table(self.shape);
        let total = Self::entries(self.shape, self.tiles.len());
        let mut odometer = Odometer::at(self, &manhattan, 0);
        for rank in 0..total as usize {
            let index = match &self.sparse {
                Some(_) => self.index(odometer.cells[..self.tiles.len()].iter().copied()),
                None => rank,
            };
            f(unpack(&self.table, index, odometer.md) as u8);
            odometer.step();
        }
    }
}

/// The distribution of a table's values ([`PatternDb::histogram`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    /// `counts[v]`: the entries whose value is `v`.
    pub counts: [u64; 256],
}

impl Histogram {
    /// The number of entries.
    pub fn entries(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The mean value (0 for an empty table).
    pub fn mean(&self) -> f64 {
        let sum: f64 = (self.counts.iter().enumerate())
            .map(|(v, &c)| v as f64 * c as f64)
            .sum();
        sum / self.entries().max(1) as f64
    }

    /// The largest value held.
    pub fn max(&self) -> u8 {
        self.counts.iter().rposition(|&c| c > 0).unwrap_or(0) as u8
    }
}
