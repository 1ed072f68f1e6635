//! The split layout of a zero-aware table: what the search reads of it, in the sparse layout's
//! index, so that a lookup is one read near its parent's as in a per-placement table.
//!
//! A zero-aware table ([`super::zero_aware`]) holds a value per placement and region of the
//! blank. Read in its own index (map, region, order) every lookup waits for a chain of small
//! tables and lands far from its parent's entry: 1.73x fewer nodes than the per-placement
//! tables on Korf & Felner's ten easiest, 2.2x the time per node. Split keeps two nibbles per
//! placement, a byte at the placement's sparse index ([`super::sparse`]): the low one the value
//! with the blank in the map's largest free region, the high one the least value over its other
//! regions (equal for a map of one region). The search reads the byte; only where the two
//! differ does it ask which region the blank is in (`Regions::in_main`, a flood of the free
//! cells by shifts: a table of each map's largest region, read there, missed the caches).
//!
//! Measured on Korf & Felner #40, #38 and #25 (serial): 42.68 M nodes against 42.41 M for the
//! exact regions and 54.0 M for the per-placement tables; the blank sat outside the largest
//! region in 14 % of the lookups, so the other regions' values matter (with the Manhattan
//! distance there instead: 49.6 M). On the ten easiest, the search is 1.3x faster than over
//! the per-placement tables (docs/performance.md).
//!
//! Split tables take a byte per sparse entry (244 MB for six tiles on 5x5, against 90.5 MB for
//! the zero-aware table in its own index and 122 MB for a sparse per-placement table).
//!
//! # Files
//!
//! The tables the search reads split (six tiles on 5x5, `sparse::worth_it`) are stored split:
//! the store makes the split bytes once, as it builds a table ([`PatternDb::into_stored`]), and
//! writes file format [`SPLIT_FORMAT`]: format 5's header, then the bytes one a placement in
//! rank order (127.5 MB for six tiles on 5x5). Loading one copies each byte to its sparse index
//! on every core, as [`PdbHeuristic`] copies a per-placement table's entries into the sparse
//! layout (`sparse::by_first_cell` deals tile 0's cells to the cores for both), a few cells'
//! bytes at a time as they are read, so that the file is never held whole beside the table
//! (one 6-6-6-6 layout: 1.0-1.2 s to load, peak 1.01 GB, against 8-10 s from format 5 and
//! 1.46 GB reading each file whole; host A, docs/performance.md); the reader also builds the
//! table's [`Regions`] (shared by every table of as many tiles), which the search asks
//! `in_main` of. The regions' own values are not in such a file: it serves the split layout
//! only. `NPUZZLE_PDB_DENSE=1`, which keeps zero-aware tables in their own index (read through
//! [`super::ZeroMax`]), reads a format 6 table split all the same (`PdbHeuristic::with_layout`;
//! the store logs a warning); the exact regions are in format 5 files only (a 5x5 one not yet
//! upgraded, or a table written by [`PatternDb::to_bytes`] before it is split).
//!
//! Zero-aware files of format 5 (every region) still load: [`PdbHeuristic`] makes their split
//! bytes as it takes them, on every core (about 1.4 s a six-tile table on two cores of host
//! B, docs/performance.md), and `npuzzle pdb upgrade` rewrites them in format 6. Zero-aware
//! tables of the other boards are stored in format 5: the search reads them in their own index.
//!
//! [`PdbHeuristic`]: super::PdbHeuristic

use std::sync::Arc;

use super::memory::table_memory;
use super::sparse::{by_first_cell, in_rank_order, weights};
use super::{PatternDb, Regions};
use crate::shape::Shape;

/// The file format of zero-aware tables in the split layout: format [`super::ZERO_AWARE_FORMAT`]'s
/// header (kind: zero-aware), then a byte per placement in rank order (the count is the
/// placements'), each the split byte of its placement. Read back, the bytes are copied to
/// their sparse indices; the regions' own values are not in the file.
pub const SPLIT_FORMAT: u32 = 6;

/// The byte of a split table at sparse index `index`, as the excess of its placement's value
/// for a blank on `blank`; `set()` gives the placement's cells, asked only where the blank's
/// region matters.
#[inline(always)]
pub(super) fn split_excess(
    table: &[u8],
    index: u32,
    regions: &Regions,
    blank: usize,
    set: impl FnOnce() -> u32,
) -> u8 {
    let byte = table.get(index as usize).copied().unwrap_or(0);
    let (main, other) = (byte & 15, byte >> 4);
    if main == other || regions.in_main(set(), blank) {
        main
    } else {
        other
    }
}

/// How to read a placement's cells off its sparse index without dividing: each digit's
/// weight's reciprocal scaled by 2^63, exact for every index below 2^32 (index × weight <
/// 2^63).
#[derive(Clone, Copy, Debug)]
pub(super) struct SparseDigits {
    weight: [u32; 8],
    reciprocal: [u64; 8],
    k: usize,
    cells: u32,
}

impl SparseDigits {
    /// The digits of a sparse index of `k` tiles weighing `weight` on a board of `cells`.
    pub(super) fn new(weight: &[u32; 8], k: usize, cells: usize) -> SparseDigits {
        let mut reciprocal = [0u64; 8];
        for (r, &w) in reciprocal.iter_mut().zip(weight).take(k.min(8)) {
            *r = (1u128 << 63).div_ceil(u128::from(w.max(1))) as u64;
        }
        SparseDigits {
            weight: *weight,
            reciprocal,
            k: k.min(8),
            cells: cells as u32,
        }
    }

    /// `x / weight[i]`.
    #[inline(always)]
    fn quotient(&self, x: u32, i: usize) -> u32 {
        ((u128::from(x) * u128::from(self.reciprocal[i & 7])) >> 63) as u32
    }

    /// The cells of the placement at `index`, as a set. Tile 0's weight may be rounded up
    /// ([`super::sparse`]); below it every weight is `cells` times the next, so each tile's
    /// quotient is `cells` times the one before plus its own cell.
    #[inline(always)]
    pub(super) fn cells(&self, index: u32) -> u32 {
        let first = self.quotient(index, 0);
        let rest = index.wrapping_sub(first.wrapping_mul(self.weight[0]));
        let mut set = 1u32 << (first & 31);
        let mut above = 0u32;
        for i in 1..self.k {
            let q = self.quotient(rest, i);
            set |= 1u32 << (q.wrapping_sub(above.wrapping_mul(self.cells)) & 31);
            above = q;
        }
        set
    }
}

impl PatternDb {
    /// Whether the table is a zero-aware table in the split layout (this module).
    pub fn is_split(&self) -> bool {
        self.zero.is_some() && self.sparse.is_some()
    }

    /// A zero-aware table in the split layout (others unchanged): its regions' entries are
    /// freed once copied, unless another clone holds them. The split table cannot be written
    /// back ([`PatternDb::to_bytes`] is for the tables built and read).
    pub(super) fn into_split(self) -> PatternDb {
        let Some(regions) = self.zero.clone() else {
            return self;
        };
        if self.sparse.is_some() {
            return self;
        }
        let weight = weights(self.shape, self.tiles.len());
        let table = self.make_split(&regions, &weight);
        PatternDb {
            table,
            sparse: Some(weight),
            ..self
        }
    }

    /// The split bytes, on every core: the placements with tile 0 on cell c (sparse indices
    /// from `c * weight[0]`) are written by one thread, map after map.
    fn make_split(&self, regions: &Regions, weight: &[u32; 8]) -> Arc<[u8]> {
        let (k, n) = (self.tiles.len(), self.shape.cells());
        let part = weight[0] as usize;
        let mut table = table_memory(part * n);
        let Some(bytes) = Arc::get_mut(&mut table) else {
            return table;
        };
        let zero = &self.table;
        by_first_cell(bytes, part, n, |c, chunk| {
            fill_split_part(zero, regions, weight, n, k, c, chunk);
        });
        table
    }

    /// A split table's bytes as its file holds them ([`super::SPLIT_FORMAT`]): one a
    /// placement, in rank order (the dense layout's: 127.5 MB for six tiles on 5x5 against
    /// 244 MB sparse), copied on every core.
    pub(super) fn split_file_bytes(&self) -> Vec<u8> {
        let Some(weight) = self.sparse.filter(|_| self.zero.is_some()) else {
            return Vec::new();
        };
        let (k, n) = (self.tiles.len(), self.shape.cells());
        let per_part = self.multiplier[0] as usize;
        let mut dense = vec![0u8; Self::entries(self.shape, k) as usize];
        let split = &self.table;
        by_first_cell(&mut dense, per_part, n, |c, part| {
            let mut rank = 0;
            in_rank_order(
                n,
                k,
                &weight,
                1,
                1 << c,
                c * weight[0] as usize,
                &mut |index| {
                    if let (Some(to), Some(&from)) = (part.get_mut(rank), split.get(index)) {
                        *to = from;
                    }
                    rank += 1;
                },
            );
        });
        dense
    }
}

/// Copies a split table's file bytes for the placements with tile 0 on the `m` cells from
/// `first` (`dense`: their bytes in rank order, `per_part` a cell) to their sparse indices in
/// `out` (those cells' parts of the sparse table, `weight[0]` bytes each), on every core: as
/// [`PatternDb::into_sparse`] copies a per-placement table's entries, the reader handing over
/// a few cells at a time so that the file's bytes are never all held beside the table.
pub(super) fn expand_split_parts(
    shape: Shape,
    k: usize,
    weight: &[u32; 8],
    first: usize,
    dense: &[u8],
    out: &mut [u8],
) {
    let n = shape.cells();
    let m = out.len() / (weight[0] as usize).max(1);
    let per_part = dense.len() / m.max(1);
    by_first_cell(out, weight[0] as usize, m, |i, part| {
        let c = first + i;
        let mut rank = i * per_part;
        in_rank_order(n, k, weight, 1, 1 << c, 0, &mut |index| {
            if let (Some(to), Some(&from)) = (part.get_mut(index), dense.get(rank)) {
                *to = from;
            }
            rank += 1;
        });
    });
}

/// Writes the split bytes of every placement with tile 0 on cell `c` into `chunk` (sparse
/// indices from `c * weight[0]`), reading the zero-aware entries `zero`. Window after window:
/// with tile 1 on cell `c1` too, the placements' bytes lie within `weight[1]` bytes (391 KB
/// for six tiles on 5x5), which stay in a core's cache while every map holding both cells is
/// copied; written across the whole chunk, each byte missed the caches.
fn fill_split_part(
    zero: &[u8],
    regions: &Regions,
    weight: &[u32; 8],
    n: usize,
    k: usize,
    c: usize,
    chunk: &mut [u8],
) {
    let k = k.min(8);
    let mut factorial = [1u32; 9];
    for i in 1..9 {
        factorial[i] = factorial[i - 1] * i as u32;
    }
    let map = |set: u32| {
        let info = regions.info(set);
        let main = regions.main_cells(regions.map_rank(set));
        let mut sorted = [0u8; 8];
        let mut rest = set;
        for slot in sorted.iter_mut().take(k) {
            *slot = rest.trailing_zeros() as u8;
            rest &= rest - 1;
        }
        Map {
            zero,
            orders: regions.orders(),
            offset: info.offset(),
            count: info.count(),
            main: info.region(set, main.trailing_zeros() as usize),
            sorted,
            weight,
            factorial: &factorial,
            k,
        }
    };
    // A cell's position among the map's cells (tile 0's digit of the order: nothing before
    // it is used).
    let position = |set: u32, cell: usize| (set & ((1u32 << cell) - 1)).count_ones();
    if k == 1 {
        map(1 << c).fill(chunk, 1, 1, 0, 0);
        return;
    }
    for (c1, window) in chunk.chunks_mut(weight[1] as usize).enumerate().take(n) {
        if c1 == c {
            continue;
        }
        let (low, high) = (c.min(c1), c.max(c1));
        let others = k - 2;
        // The other cells of the map, as a set of the n - 2 cells left, spread around c, c1.
        let mut rest: u32 = (1u32 << others) - 1;
        // One map ahead: its entries are asked of memory while the one before is copied.
        let mut pending: Option<(Map, u32, u32)> = None;
        loop {
            let spread = insert_zero(insert_zero(rest, low), high);
            let set = spread | 1 << c | 1 << c1;
            let (p0, p1) = (position(set, c), position(set, c1));
            // Tile 1's digit counts the free positions below its own: p0 is taken.
            let d1 = p1 - u32::from(p0 < p1);
            let order = p0 * factorial[k - 1] + d1 * factorial[k - 2];
            let next = map(set);
            for region in 0..next.count {
                let at = next.offset + region * next.orders + order;
                super::memory::prefetch(zero, at as usize >> 1);
            }
            if let Some((map, used, order)) = pending.replace((next, 1 << p0 | 1 << p1, order)) {
                map.fill(window, 2, used, order, 0);
            }
            if others == 0 {
                break;
            }
            let lowest = rest & rest.wrapping_neg();
            let r = rest + lowest;
            rest = (((r ^ rest) >> 2) / lowest) | r;
            if u64::from(rest) >= 1u64 << (n - 2) {
                break;
            }
        }
        if let Some((map, used, order)) = pending {
            map.fill(window, 2, used, order, 0);
        }
    }
}

/// `x` with a zero bit inserted at `at` (the bits from `at` up move up one).
fn insert_zero(x: u32, at: usize) -> u32 {
    let at = at & 31;
    let below = x & ((1u32 << at) - 1);
    (x >> at).checked_shl(at as u32 + 1).unwrap_or(0) | below
}

/// One map of a zero-aware table as [`fill_split_part`] copies it.
struct Map<'a> {
    zero: &'a [u8],
    orders: u32,
    offset: u32,
    count: u32,
    /// The region id of the largest region.
    main: u32,
    /// The map's cells in increasing order.
    sorted: [u8; 8],
    weight: &'a [u32; 8],
    factorial: &'a [u32; 9],
    k: usize,
}

impl Map<'_> {
    /// Places tiles `i..k` on the map's cells whose positions `used` leaves free, in the order
    /// of `Regions::order_rank`'s Lehmer code (tile i takes the digit-th free position),
    /// `order` and `index` being what the earlier tiles make of the order's rank and of the
    /// sparse index (less tile 0's part).
    fn fill(&self, chunk: &mut [u8], i: usize, used: u32, order: u32, index: usize) {
        if i >= self.k {
            let entry = |region: u32| {
                let at = self.offset + region * self.orders + order;
                super::heuristic::packed_excess(self.zero, at)
            };
            let value = entry(self.main);
            let other = (0..self.count)
                .filter(|&r| r != self.main)
                .map(entry)
                .min()
                .unwrap_or(value);
            if let Some(byte) = chunk.get_mut(index) {
                *byte = value | other << 4;
            }
            return;
        }
        let step = self.factorial[(self.k - 1 - i) & 7];
        let mut free = !used & ((1u32 << self.k) - 1);
        let mut digit = 0;
        while free != 0 {
            let position = free.trailing_zeros();
            free &= free - 1;
            let cell = self.sorted[position as usize & 7] as usize;
            let at = index + cell * self.weight[i & 7] as usize;
            self.fill(chunk, i + 1, used | 1 << position, order + digit * step, at);
            digit += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Shape;

    /// The cells read off a sparse index are the placement's, on every placement of three
    /// tiles on 3x3 and of a sample of six on 5x5.
    #[test]
    fn sparse_digits_give_back_the_cells() {
        for (w, h, k, stride) in [(3, 3, 3, 1usize), (5, 5, 6, 9973), (4, 4, 7, 7919)] {
            let shape = Shape::new(w, h).unwrap();
            let n = shape.cells();
            let weight = weights(shape, k);
            let digits = SparseDigits::new(&weight, k, n);
            let total = (n as u64).pow(k as u32);
            let mut checked = 0;
            for code in (0..total).step_by(stride) {
                let (mut rest, mut cells, mut set) = (code, [0usize; 8], 0u32);
                for cell in cells.iter_mut().take(k).rev() {
                    *cell = (rest % n as u64) as usize;
                    rest /= n as u64;
                }
                let index: u64 = (0..k).map(|i| cells[i] as u64 * u64::from(weight[i])).sum();
                if index >= u64::from(u32::MAX) {
                    continue;
                }
                for &c in &cells[..k] {
                    set |= 1 << c;
                }
                assert_eq!(digits.cells(index as u32), set, "{shape} {:?}", &cells[..k]);
                checked += 1;
            }
            assert!(checked > 100, "{shape}: {checked}");
        }
    }
}
