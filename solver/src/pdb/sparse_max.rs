//! The max over partitions whose tables are all in the sparse layout (the 5x5 ones), carried in
//! a state small enough to copy inline.
//!
//! [`super::PdbMax`] carries a whole [`super::PdbState`] per partition: a board and room for 8
//! patterns each, 384 bytes for three partitions, which the compiler copies with a call to
//! `memcpy` twice per child. In the sparse layout the index of a pattern changes by its moving
//! tile's weight times the cells it moves (no board is read), and every partition under the
//! max holds the same tiles, so one Manhattan sum serves them all: three partitions of up to
//! four patterns fit in 124 bytes. The values are those of [`super::PdbMax`], move for
//! move (tests: `the_compact_max_carries_the_values_of_the_max`).

use super::heuristic::{SparseTables, packed_excess};
use super::split::{SparseDigits, split_excess};
use super::{PdbHeuristic, Regions, memory};
use crate::heuristic::Heuristic;
use std::sync::Arc;

/// The most patterns a partition under [`SparseMax`] may have (6-6-6-6 has 4).
pub(super) const PATTERNS: usize = 4;

/// One partition as the hot loop reads it.
#[derive(Clone, Debug)]
struct Layout {
    /// `pattern[label]`: the pattern holding the label, `u8::MAX` for none.
    pattern: [u8; 32],
    /// `weight[label]`: its digit's weight in that pattern's index.
    weight: [u32; 32],
    /// The same for the reflected board, indexed by the label before reflection.
    reflected_pattern: [u8; 32],
    reflected_weight: [u32; 32],
    /// Each pattern's entries, two a byte, or one split byte ([`super::split`]).
    tables: Vec<Arc<[u8]>>,
    /// For split tables, each pattern's maps and how to read its cells off its index.
    split: Vec<SplitPattern>,
}

/// What [`SparseMax`] reads to find the blank's region for a split table.
#[derive(Clone, Debug)]
struct SplitPattern {
    regions: Arc<Regions>,
    digits: SparseDigits,
}

/// `N` partitions' heuristics under the max, every table sparse and every partition holding
/// the same tiles: the search's heuristic for the 5x5 tables ([`SparseMax::new`] says when).
/// `SPLIT`: the tables are zero-aware ones in the split layout (`pdb::split`), a byte an
/// entry, the blank's region asked where its two values differ; a constant, so that the
/// per-placement tables' loop is what it was.
#[derive(Clone, Debug)]
pub struct SparseMax<const N: usize, const SPLIT: bool = false> {
    layouts: [Layout; N],
    /// The partitions themselves, for evaluating a board afresh.
    parts: [PdbHeuristic; N],
    /// Cell (and label) reflected about the main diagonal; unused without `reflected`.
    reflect: [u8; 32],
    reflected: bool,
    manhattan: [[u8; 32]; 32],
    /// Bit `label`: the label is in a pattern (its Manhattan distance is counted), in the board
    /// and, for `reflected_counted`, in its reflection.
    counted: u32,
    reflected_counted: u32,
}

/// What [`SparseMax`] carries per node: each partition's pattern indices and entries, regular
/// and reflected, and the Manhattan sums all partitions share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparseMaxState<const N: usize> {
    rank: [[u32; PATTERNS]; N],
    reflected_rank: [[u32; PATTERNS]; N],
    /// Each table's entry: its value less its tiles' Manhattan distance, halved.
    excess: [[u8; PATTERNS]; N],
    reflected_excess: [[u8; PATTERNS]; N],
    manhattan: u16,
    reflected_manhattan: u16,
}

/// The sum of four entries of at most 15 each: one multiplication gathers them in the top byte.
#[inline(always)]
pub(super) fn sum(excess: &[u8; PATTERNS]) -> u32 {
    u32::from_le_bytes(*excess).wrapping_mul(0x0101_0101) >> 24
}

impl<const N: usize, const SPLIT: bool> SparseMax<N, SPLIT> {
    /// `pdb` and the partitions added to it, if they are `N` in all, every table of every one
    /// is in the sparse layout, none has more than four patterns or dual lookups, and
    /// all hold the same tiles. Otherwise none ([`super::PdbMax`] serves those).
    pub fn new(pdb: &PdbHeuristic) -> Option<SparseMax<N, SPLIT>> {
        let parts: [PdbHeuristic; N] = pdb.split_partitions()?;
        let shape = parts[0].shape();
        let reflection = parts[0].reflection().copied();
        let reflect = reflection.unwrap_or(std::array::from_fn(|c| c as u8));
        let mut counted = 0u32;
        let mut reflected_counted = 0u32;
        let mut layouts = Vec::with_capacity(N);
        for (i, part) in parts.iter().enumerate() {
            // Every partition is of one shape (`with_also` refuses others); the reflected
            // lookup may still be on in some and off in others.
            if part.reflection().copied() != reflection {
                return None;
            }
            let SparseTables {
                split: split_tables,
                pattern,
                weight,
                tables,
            } = part.sparse_tables()?;
            if split_tables.is_some() != SPLIT {
                return None;
            }
            let split_tables = (split_tables.unwrap_or_default().into_iter())
                .map(|(regions, digits)| SplitPattern { regions, digits })
                .collect();
            let mut mask = 0u32;
            let mut reflected_mask = 0u32;
            let mut reflected_pattern = [u8::MAX; 32];
            let mut reflected_weight = [0u32; 32];
            for label in 0..shape.cells() {
                if pattern[label] != u8::MAX {
                    mask |= 1 << label;
                }
                if reflection.is_some() {
                    let r = reflect[label] as usize & 31;
                    reflected_pattern[label] = pattern[r];
                    reflected_weight[label] = weight[r];
                    if pattern[r] != u8::MAX {
                        reflected_mask |= 1 << label;
                    }
                }
            }
            // One Manhattan sum for every partition: they must count the same tiles.
            if i == 0 {
                (counted, reflected_counted) = (mask, reflected_mask);
            } else if (mask, reflected_mask) != (counted, reflected_counted) {
                return None;
            }
            layouts.push(Layout {
                pattern,
                weight,
                reflected_pattern,
                reflected_weight,
                tables,
                split: split_tables,
            });
        }
        let layouts: [Layout; N] = layouts.try_into().ok()?;
        let manhattan = *parts[0].manhattan_table();
        Some(SparseMax {
            layouts,
            parts,
            reflect,
            reflected: reflection.is_some(),
            manhattan,
            counted,
            reflected_counted,
        })
    }
}

impl<const N: usize, const SPLIT: bool> SparseMax<N, SPLIT> {
    /// Asks memory for entry `index` of `table` ahead of its read.
    #[inline(always)]
    fn prefetch(&self, table: &[u8], index: u32) {
        let byte = if SPLIT { index } else { index >> 1 };
        memory::prefetch(table, byte as usize);
    }

    /// Entry `index` of pattern `p`'s table: a nibble, or for a split table the value of the
    /// blank's region, the blank on `blank`.
    #[inline(always)]
    fn entry(&self, layout: &Layout, table: &[u8], p: usize, index: u32, blank: usize) -> u8 {
        if !SPLIT {
            return packed_excess(table, index);
        }
        match layout.split.get(p) {
            Some(split) => {
                let set = || split.digits.cells(index);
                split_excess(table, index, &split.regions, blank, set)
            }
            None => 0,
        }
    }
}

impl<const N: usize, const SPLIT: bool> Heuristic for SparseMax<N, SPLIT> {
    type State = SparseMaxState<N>;

    fn evaluate(&self, cells: &[u8]) -> (u32, SparseMaxState<N>) {
        let mut h = 0;
        let mut state = SparseMaxState {
            rank: [[0; PATTERNS]; N],
            reflected_rank: [[0; PATTERNS]; N],
            excess: [[0; PATTERNS]; N],
            reflected_excess: [[0; PATTERNS]; N],
            manhattan: 0,
            reflected_manhattan: 0,
        };
        for (i, part) in self.parts.iter().enumerate() {
            let (value, own) = part.evaluate_own::<false>(cells);
            h = h.max(value);
            state.rank[i].copy_from_slice(&own.rank[..PATTERNS]);
            state.reflected_rank[i].copy_from_slice(&own.reflected_rank[..PATTERNS]);
            state.excess[i].copy_from_slice(&own.excess[..PATTERNS]);
            state.reflected_excess[i].copy_from_slice(&own.reflected_excess[..PATTERNS]);
            // The same for every partition (they count the same tiles).
            state.manhattan = own.manhattan as u16;
            state.reflected_manhattan = own.reflected_manhattan as u16;
        }
        (h, state)
    }

    #[inline(always)]
    fn after_move(
        &self,
        h: u32,
        state: &SparseMaxState<N>,
        label: u8,
        from: usize,
        to: usize,
        vertical: bool,
    ) -> (u32, SparseMaxState<N>) {
        self.after_move_within(h, state, label, from, to, vertical, u32::MAX)
    }

    #[inline(always)]
    fn after_move_within(
        &self,
        _: u32,
        state: &SparseMaxState<N>,
        label: u8,
        from: usize,
        to: usize,
        _: bool,
        limit: u32,
    ) -> (u32, SparseMaxState<N>) {
        let mut next = *state;
        let (l, from, to) = (label as usize & 31, from & 31, to & 31);
        let dm = u16::from(self.manhattan[l][to]).wrapping_sub(u16::from(self.manhattan[l][from]));
        if self.counted & (1 << l) != 0 {
            next.manhattan = next.manhattan.wrapping_add(dm);
        }
        if self.reflected_counted & (1 << l) != 0 {
            // A reflection keeps distances: the tile's changes by the same.
            next.reflected_manhattan = next.reflected_manhattan.wrapping_add(dm);
        }
        // A tile's digit is its cell: the index changes by its weight times the cells moved.
        let step = (to as u32).wrapping_sub(from as u32);
        let reflected_step =
            u32::from(self.reflect[to]).wrapping_sub(u32::from(self.reflect[from]));
        // Every changed index first, each entry asked of memory, so that the misses overlap.
        for (layout, (rank, reflected_rank)) in self
            .layouts
            .iter()
            .zip(next.rank.iter_mut().zip(&mut next.reflected_rank))
        {
            let p = layout.pattern[l] as usize;
            if let Some(table) = layout.tables.get(p) {
                let r = &mut rank[p & (PATTERNS - 1)];
                *r = r.wrapping_add(layout.weight[l].wrapping_mul(step));
                self.prefetch(table, *r);
            }
            if self.reflected {
                let rp = layout.reflected_pattern[l] as usize;
                if let Some(table) = layout.tables.get(rp) {
                    let r = &mut reflected_rank[rp & (PATTERNS - 1)];
                    *r = r.wrapping_add(layout.reflected_weight[l].wrapping_mul(reflected_step));
                    self.prefetch(table, *r);
                }
            }
        }
        let (manhattan, reflected_manhattan) = (
            u32::from(next.manhattan),
            u32::from(next.reflected_manhattan),
        );
        let mut value = 0;
        for (i, layout) in self.layouts.iter().enumerate() {
            let p = layout.pattern[l] as usize;
            if let Some(table) = layout.tables.get(p) {
                let at = next.rank[i][p & (PATTERNS - 1)];
                let e = self.entry(layout, table, p, at, from);
                next.excess[i][p & (PATTERNS - 1)] = e;
            }
            value = value.max(manhattan + 2 * sum(&next.excess[i]));
            if value > limit {
                // Pruned: the other entries are never read.
                return (value, next);
            }
            if self.reflected {
                let rp = layout.reflected_pattern[l] as usize;
                if let Some(table) = layout.tables.get(rp) {
                    let at = next.reflected_rank[i][rp & (PATTERNS - 1)];
                    let e = self.entry(layout, table, rp, at, self.reflect[from] as usize);
                    next.reflected_excess[i][rp & (PATTERNS - 1)] = e;
                }
                value = value.max(reflected_manhattan + 2 * sum(&next.reflected_excess[i]));
                if value > limit {
                    return (value, next);
                }
            }
        }
        (value, next)
    }
}
