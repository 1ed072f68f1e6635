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
//! the layouts with one binary (not a zero-aware table read split from its file: `split`).
//!
//! [`PdbHeuristic`]: super::PdbHeuristic
//! [`PdbHeuristic::new`]: super::PdbHeuristic::new

use std::sync::Arc;

use super::PatternDb;
use super::memory::table_memory;
use crate::shape::Shape;

/// Whether a table of `k` tiles on `shape` is read through the sparse layout: at most twice the
/// dense layout's entries, and indices within `u32`.
pub(super) fn worth_it(shape: Shape, k: usize) -> bool {
    fits(shape, k) && sparse_entries(shape, k) <= 2 * PatternDb::entries(shape, k)
}

/// Whether every sparse index of `k` tiles on `shape` fits in `u32` (what the search carries).
pub(super) fn fits(shape: Shape, k: usize) -> bool {
    sparse_entries(shape, k) < u64::from(u32::MAX)
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
        if self.sparse.is_some() || self.zero.is_some() {
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

    /// The same table in the dense layout (unchanged if it is already, or split: a split
    /// table has no dense layout, see `PdbHeuristic::with_layout`).
    pub(super) fn into_dense(self) -> PatternDb {
        if self.sparse.is_none() || self.zero.is_some() {
            return self;
        }
        let table = self.dense_table().into();
        PatternDb {
            table,
            sparse: None,
            ..self
        }
    }

    /// The table's entries in the dense layout, as files hold them.
    pub(super) fn dense_table(&self) -> Vec<u8> {
        let Some(weight) = self.sparse else {
            return self.table.to_vec();
        };
        let (k, n) = (self.tiles.len(), self.shape.cells());
        let mut dense = vec![0u8; Self::entries(self.shape, k).div_ceil(2) as usize];
        let mut rank = 0;
        for c in 0..n {
            in_rank_order(
                n,
                k,
                &weight,
                1,
                1 << c,
                c * weight[0] as usize,
                &mut |index| {
                    copy_nibble(&self.table, index, &mut dense, rank);
                    rank += 1;
                },
            );
        }
        dense
    }

    /// The dense table copied into the sparse layout, on every core: tile 0's digit is its
    /// cell in both layouts, so the placements with tile 0 on cell c (dense ranks from
    /// `c * multiplier[0]`, sparse indices from `c * weight[0]`) are copied by one thread.
    fn make_sparse(&self, weight: &[u32; 8]) -> Arc<[u8]> {
        let k = self.tiles.len();
        let n = self.shape.cells();
        let mut table = table_memory(sparse_entries(self.shape, k).div_ceil(2) as usize);
        let Some(bytes) = Arc::get_mut(&mut table) else {
            return table;
        };
        let per_part = self.multiplier[0] as usize;
        let dense = &self.table;
        by_first_cell(bytes, weight[0] as usize / 2, n, |c, part| {
            let mut rank = c * per_part;
            in_rank_order(n, k, weight, 1, 1 << c, 0, &mut |index| {
                copy_nibble(dense, rank, part, index);
                rank += 1;
            });
        });
        table
    }
}

/// Cuts `bytes` into its first `n` parts of `part` bytes, one per cell of tile 0 (in both
/// layouts the placements with tile 0 on cell c lie together: dense ranks from
/// `c * multiplier[0]`, sparse indices from `c * weight[0]`), and calls `fill(c, part)` for
/// each on every core, the cells dealt round-robin to one thread a core: how a table is copied
/// from one layout into another (`make_sparse`, the split layout's `make_split` and its file's
/// bytes both ways).
pub(super) fn by_first_cell(
    bytes: &mut [u8],
    part: usize,
    n: usize,
    fill: impl Fn(usize, &mut [u8]) + Sync,
) {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let mut parts: Vec<Vec<(usize, &mut [u8])>> = (0..threads).map(|_| Vec::new()).collect();
    for (c, chunk) in bytes.chunks_mut(part.max(1)).enumerate().take(n) {
        parts[c % threads].push((c, chunk));
    }
    let fill = &fill;
    std::thread::scope(|scope| {
        for mine in parts {
            scope.spawn(move || {
                for (c, chunk) in mine {
                    fill(c, chunk);
                }
            });
        }
    });
}

/// Calls `f` with the sparse index of each placement of tiles `i..k` on the cells outside
/// `used` (`index`: the part of the index the tiles before `i` make), in dense rank order: each
/// tile on the free cells in increasing order, as its rank digit counts the free cells below
/// its own. So the two layouts are copied into each other with the dense side in sequence and
/// no rank computed.
pub(super) fn in_rank_order(
    n: usize,
    k: usize,
    weight: &[u32; 8],
    i: usize,
    used: u32,
    index: usize,
    f: &mut impl FnMut(usize),
) {
    if i >= k {
        f(index);
        return;
    }
    let w = weight[i & 7] as usize;
    let all = if n >= 32 { u32::MAX } else { (1u32 << n) - 1 };
    let mut free = all & !used;
    while free != 0 {
        let q = free.trailing_zeros() as usize;
        free &= free - 1;
        if i + 1 == k {
            f(index + q * w);
        } else {
            in_rank_order(n, k, weight, i + 1, used | 1 << q, index + q * w, f);
        }
    }
}

/// Copies entry `from` of `source` to entry `to` of `target` (two entries a byte, `target`'s
/// entry still zero).
#[inline(always)]
fn copy_nibble(source: &[u8], from: usize, target: &mut [u8], to: usize) {
    let byte = source.get(from >> 1).copied().unwrap_or(0);
    let nibble = (byte >> ((from & 1) * 4)) & 15;
    if let Some(b) = target.get_mut(to >> 1) {
        *b |= nibble << ((to & 1) * 4);
    }
}
