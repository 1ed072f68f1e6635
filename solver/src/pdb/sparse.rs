//! The sparse layout of a table: a placement's index is its tiles' cells as the digits of a
//! number in base `cells` (Korf & Felner's), instead of its rank among placements.
//!
//! A dense rank counts, for each tile, the free cells below its own among those its earlier
//! tiles leave: a move up or down changes the digits of every tile it passes, so the search
//! reads the cells in between to change a rank (`rank_change`). A sparse index changes by the
//! moved tile's weight times the cells it moved (±1 or ±width): one multiply-add, no board.
//! The cost is memory: on 5x5, 6 tiles take 25^6 = 244 M entries instead of 127.5 M (122 MB
//! instead of 64 MB at four bits), every index with two tiles on one cell unused. With three
//! 6-6-6-6 layouts, the search's work per child is mostly those rank changes (twelve tables
//! read in the board and in its reflection), so the heuristic of [`PdbHeuristic`] uses this
//! layout for a partition whose every table it costs at most twice the memory ([`worth_it`]):
//! of the built-in partitions, the three 5x5 6-6-6-6 layouts, none of 4x4's (all of a
//! partition's tables or none, so that the search's test of the layout always goes the same
//! way).
//!
//! [`PdbHeuristic::new`] copies each such table into the sparse layout as it takes it, on every
//! core, and frees the dense entries; files stay dense (a sparse table is written back dense).
//! Entries are the same nibbles. `NPUZZLE_PDB_DENSE=1` keeps every table dense, to compare
//! the layouts with one binary.
//!
//! [`PdbHeuristic`]: super::PdbHeuristic
//! [`PdbHeuristic::new`]: super::PdbHeuristic::new

use std::sync::Arc;

use super::PatternDb;
use super::memory::table_memory;
use super::packing::{Odometer, manhattan_table};
use crate::shape::Shape;

/// Whether a table of `k` tiles on `shape` is read through the sparse layout: at most twice the
/// dense layout's entries, and indices within `u32`.
pub(super) fn worth_it(shape: Shape, k: usize) -> bool {
    let sparse = sparse_entries(shape, k);
    sparse < u64::from(u32::MAX) && sparse <= 2 * PatternDb::entries(shape, k)
}

/// The digits' weights: `weight[i]` for tile i. The first is even, so that the part of the table
/// under each cell of tile 0 starts on a byte of its own (the parts are filled in parallel).
pub(super) fn weights(shape: Shape, k: usize) -> [u32; 8] {
    let n = shape.cells() as u64;
    let mut weight = [0u32; 8];
    let mut w = 1u64;
    for i in (0..k.min(8)).rev() {
        if i == 0 {
            w += w & 1;
        }
        weight[i] = w.min(u64::from(u32::MAX)) as u32;
        w *= n;
    }
    weight
}

/// Entries (nibbles) of the sparse table, unused ones included.
fn sparse_entries(shape: Shape, k: usize) -> u64 {
    u64::from(weights(shape, k)[0]) * shape.cells() as u64
}

impl PatternDb {
    /// The same table in the sparse layout (unchanged if it is already): its dense entries
    /// are freed once copied, unless another clone holds them.
    pub(super) fn into_sparse(self) -> PatternDb {
        if self.sparse.is_some() {
            return self;
        }
        let weight = weights(self.shape, self.tiles.len());
        let table = self.make_sparse(&weight);
        PatternDb {
            table,
            sparse: Some(weight),
            ..self
        }
    }

    /// A sparse table's entries in the dense layout, as files hold them.
    pub(super) fn dense_table(&self) -> Vec<u8> {
        let total = Self::entries(self.shape, self.tiles.len());
        let mut dense = vec![0u8; total.div_ceil(2) as usize];
        let manhattan = manhattan_table(self.shape);
        let mut odometer = Odometer::at(self, &manhattan, 0);
        for rank in 0..total as usize {
            let index = self.index(odometer.cells[..self.tiles.len()].iter().copied());
            let nibble =
                (self.table.get(index >> 1).copied().unwrap_or(0) >> ((index & 1) * 4)) & 15;
            if let Some(b) = dense.get_mut(rank >> 1) {
                *b |= nibble << ((rank & 1) * 4);
            }
            odometer.step();
        }
        dense
    }

    /// The dense table copied into the sparse layout, on every core: tile 0's digit is its
    /// cell in both layouts, so the placements with tile 0 on cell c (dense ranks from
    /// `c * multiplier[0]`, sparse indices from `c * weight[0]`) are copied by one thread.
    fn make_sparse(&self, weight: &[u32; 8]) -> Arc<[u8]> {
        let k = self.tiles.len();
        let n = self.shape.cells();
        let part_nibbles = weight[0] as usize;
        let mut table = table_memory(sparse_entries(self.shape, k).div_ceil(2) as usize);
        let Some(bytes) = Arc::get_mut(&mut table) else {
            return table;
        };
        let per_part = self.multiplier[0];
        let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
        let mut parts: Vec<Vec<(usize, &mut [u8])>> = (0..threads).map(|_| Vec::new()).collect();
        for (c, part) in bytes.chunks_mut(part_nibbles / 2).enumerate().take(n) {
            parts[c % threads].push((c, part));
        }
        let dense = &self.table;
        std::thread::scope(|scope| {
            for mine in parts {
                scope.spawn(move || {
                    for (c, part) in mine {
                        let mut copy = Copy {
                            dense,
                            part,
                            weight,
                            k,
                            n,
                            rank: c as u64 * per_part,
                        };
                        copy.placements(1, 1 << c, 0);
                    }
                });
            }
        });
        table
    }
}

/// The copy of the placements with tile 0 on one cell into their part of the sparse table:
/// tiles 1 to k-1 placed on the free cells in increasing order, which is the dense rank order
/// (a tile's digit counts the free cells below its own), so the dense entries are read in
/// sequence and no rank is computed.
struct Copy<'a> {
    dense: &'a [u8],
    part: &'a mut [u8],
    weight: &'a [u32; 8],
    k: usize,
    n: usize,
    /// The dense rank of the next placement.
    rank: u64,
}

impl Copy<'_> {
    /// Places tiles `i..k` on the cells outside `used`; `index`: the sparse index (within the
    /// part) of the tiles placed so far.
    fn placements(&mut self, i: usize, used: u32, index: usize) {
        if i >= self.k {
            self.entry(index);
            return;
        }
        let w = self.weight[i & 7] as usize;
        let all = if self.n >= 32 {
            u32::MAX
        } else {
            (1u32 << self.n) - 1
        };
        let mut free = all & !used;
        while free != 0 {
            let q = free.trailing_zeros() as usize;
            free &= free - 1;
            if i + 1 == self.k {
                self.entry(index + q * w);
            } else {
                self.placements(i + 1, used | 1 << q, index + q * w);
            }
        }
    }

    #[inline(always)]
    fn entry(&mut self, index: usize) {
        let rank = self.rank;
        self.rank += 1;
        let byte = self.dense.get((rank >> 1) as usize).copied().unwrap_or(0);
        let nibble = (byte >> ((rank & 1) * 4)) & 15;
        if let Some(b) = self.part.get_mut(index >> 1) {
            *b |= nibble << ((index & 1) * 4);
        }
    }
}
