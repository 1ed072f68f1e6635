//! The max over partitions of zero-aware tables ([`super::zero_aware`]) read in their own
//! index, each table's index carried from a node to its children: for the tables the split
//! layout does not take (4x4's, `NPUZZLE_PDB_DENSE=1`; [`super::split`] serves the 5x5 ones).
//!
//! A zero-aware index is (map, region of the blank, order of the tiles on the map), see
//! [`Regions`]. A move of a tile outside a pattern keeps the blank in its region: that
//! pattern's index and entry are carried unchanged, and no table is read. A move of one of
//! its tiles changes its map by two bits; the map's [`MapInfo`] (its block's offset and the
//! region of each free cell, in a 2.8 MB table shared by every six-tile table) gives the
//! blank's region, now on the cell the tile left; the order of the tiles on the map changes
//! only when the tile passes others, which a move sideways never does, so it is recomputed on
//! moves up and down only (and in the reflected board, where those are the moves sideways).
//!
//! Every partition holds the same tiles (one Manhattan sum serves all) and at most
//! four patterns. The values are those of [`PdbHeuristic`]'s evaluation of the same
//! tables from scratch (tests: `zero_tests`).
//!
//! [`MapInfo`]: super::regions::MapInfo

use std::sync::Arc;

use super::heuristic::packed_excess;
use super::sparse_max::{PATTERNS, sum};
use super::{PdbHeuristic, Regions, memory};
use crate::heuristic::Heuristic;

/// One partition as the hot loop reads it.
#[derive(Clone, Debug)]
struct Layout {
    /// `pattern[label]`: the pattern holding the label, `u8::MAX` for none.
    pattern: [u8; 32],
    /// `reflected_pattern[label]`: the pattern holding the reflection of `label`.
    reflected_pattern: [u8; 32],
    /// Each pattern's tiles (labels), in index order.
    tiles: [[u8; 8]; PATTERNS],
    /// The same reflected: `reflected_tiles[p][i]` is the label whose reflection is tile i of
    /// pattern p (the reflected board has tile `t` where the board has label `r(t)`).
    reflected_tiles: [[u8; 8]; PATTERNS],
    /// Each pattern's tile count.
    k: [u8; PATTERNS],
    /// Each pattern's maps and its entries.
    regions: Vec<Arc<Regions>>,
    tables: Vec<Arc<[u8]>>,
}

/// `N` partitions of zero-aware tables under the max: the search's heuristic for zero-aware
/// tables ([`ZeroMax::new`] says when).
#[derive(Clone, Debug)]
pub struct ZeroMax<const N: usize> {
    layouts: [Layout; N],
    /// Cell (and label) reflected about the main diagonal; unused without `reflected`.
    reflect: [u8; 32],
    reflected: bool,
    cells: usize,
    manhattan: [[u8; 32]; 32],
    /// Bit `label`: the label is in a pattern, in the board and in its reflection.
    counted: u32,
    reflected_counted: u32,
}

/// What [`ZeroMax`] carries per node: where every label is, and per table (regular and
/// reflected) its map, the order of its tiles on it and its entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZeroMaxState<const N: usize> {
    /// `position[label]`: the cell of each label (the blank is label 0).
    position: [u8; 32],
    set: [[u32; PATTERNS]; N],
    reflected_set: [[u32; PATTERNS]; N],
    order: [[u16; PATTERNS]; N],
    reflected_order: [[u16; PATTERNS]; N],
    /// Each table's entry: its value less its tiles' Manhattan distance, halved.
    excess: [[u8; PATTERNS]; N],
    reflected_excess: [[u8; PATTERNS]; N],
    manhattan: u16,
    reflected_manhattan: u16,
}

impl<const N: usize> ZeroMax<N> {
    /// `pdb` and the partitions added to it, if they are `N` in all, every table zero-aware,
    /// none with more than four patterns or dual lookups, every partition holding the
    /// same tiles and all with or all without the reflected lookup. Otherwise none.
    pub fn new(pdb: &PdbHeuristic) -> Option<ZeroMax<N>> {
        let parts: [PdbHeuristic; N] = pdb.split_partitions()?;
        let shape = parts[0].shape();
        let reflection = parts[0].reflection().copied();
        let reflect = reflection.unwrap_or(std::array::from_fn(|c| c as u8));
        let (mut counted, mut reflected_counted) = (0u32, 0u32);
        let mut layouts = Vec::with_capacity(N);
        for (i, part) in parts.iter().enumerate() {
            if part.reflection().copied() != reflection
                || part.has_dual()
                || part.tables().len() > PATTERNS
            {
                return None;
            }
            let mut layout = Layout {
                pattern: [u8::MAX; 32],
                reflected_pattern: [u8::MAX; 32],
                tiles: [[0; 8]; PATTERNS],
                reflected_tiles: [[0; 8]; PATTERNS],
                k: [0; PATTERNS],
                regions: Vec::new(),
                tables: Vec::new(),
            };
            let mut mask = 0u32;
            for (p, db) in part.tables().iter().enumerate() {
                let regions = db.regions()?;
                if db.tiles().len() > 8 || regions.shape() != shape || db.is_split() {
                    return None;
                }
                layout.k[p] = db.tiles().len() as u8;
                for (j, &t) in db.tiles().iter().enumerate() {
                    layout.pattern[t as usize & 31] = p as u8;
                    layout.tiles[p][j] = t;
                    layout.reflected_tiles[p][j] = reflect[t as usize & 31];
                    mask |= 1 << t;
                }
                layout.regions.push(Arc::clone(regions));
                layout.tables.push(Arc::clone(&db.table));
            }
            let mut reflected_mask = 0u32;
            if reflection.is_some() {
                for (label, &r) in reflect.iter().enumerate().take(shape.cells()) {
                    let p = layout.pattern[r as usize & 31];
                    layout.reflected_pattern[label] = p;
                    if p != u8::MAX {
                        reflected_mask |= 1 << label;
                    }
                }
            }
            if i == 0 {
                (counted, reflected_counted) = (mask, reflected_mask);
            } else if (mask, reflected_mask) != (counted, reflected_counted) {
                return None;
            }
            layouts.push(layout);
        }
        let layouts: [Layout; N] = layouts.try_into().ok()?;
        Some(ZeroMax {
            layouts,
            reflect,
            reflected: reflection.is_some(),
            cells: shape.cells(),
            manhattan: *parts[0].manhattan_table(),
            counted,
            reflected_counted,
        })
    }

    /// Pattern `p`'s map and order for the cells `cell_of(label)` of its tiles.
    #[inline(always)]
    fn map_and_order(
        regions: &Regions,
        tiles: &[u8],
        cell_of: impl Fn(u8) -> u8 + Copy,
    ) -> (u32, u16) {
        let set = tiles.iter().fold(0u32, |m, &t| m | 1 << (cell_of(t) & 31));
        let order = regions.order_rank(set, tiles.iter().map(|&t| cell_of(t)));
        (set, order as u16)
    }

    /// The entry index of a table from its map, order and the blank's cell.
    #[inline(always)]
    fn index(regions: &Regions, set: u32, order: u16, blank: usize) -> u32 {
        regions.locate(set, blank) + u32::from(order)
    }
}

impl<const N: usize> Heuristic for ZeroMax<N> {
    type State = ZeroMaxState<N>;

    fn evaluate(&self, cells: &[u8]) -> (u32, ZeroMaxState<N>) {
        let mut state = ZeroMaxState {
            position: [0; 32],
            set: [[0; PATTERNS]; N],
            reflected_set: [[0; PATTERNS]; N],
            order: [[0; PATTERNS]; N],
            reflected_order: [[0; PATTERNS]; N],
            excess: [[0; PATTERNS]; N],
            reflected_excess: [[0; PATTERNS]; N],
            manhattan: 0,
            reflected_manhattan: 0,
        };
        for (cell, &label) in cells.iter().enumerate().take(self.cells) {
            state.position[label as usize & 31] = cell as u8;
        }
        let position = state.position;
        let r = &self.reflect;
        let (mut md, mut reflected_md) = (0u32, 0u32);
        for label in 0..self.cells {
            let cell = position[label] as usize & 31;
            if self.counted & (1 << label) != 0 {
                md += u32::from(self.manhattan[label][cell]);
            }
            if self.reflected_counted & (1 << label) != 0 {
                // Label r(l) on cell r(c) of the reflection.
                let (rl, rc) = (r[label] as usize & 31, r[cell] as usize & 31);
                reflected_md += u32::from(self.manhattan[rl][rc]);
            }
        }
        state.manhattan = md as u16;
        state.reflected_manhattan = reflected_md as u16;
        let mut h = 0;
        let blank = position[0] as usize;
        for (i, layout) in self.layouts.iter().enumerate() {
            for (p, (regions, table)) in layout.regions.iter().zip(&layout.tables).enumerate() {
                let k = layout.k[p] as usize;
                let (set, order) = Self::map_and_order(regions, &layout.tiles[p][..k], |t| {
                    position[t as usize & 31]
                });
                state.set[i][p] = set;
                state.order[i][p] = order;
                state.excess[i][p] = packed_excess(table, Self::index(regions, set, order, blank));
                if self.reflected {
                    let (set, order) =
                        Self::map_and_order(regions, &layout.reflected_tiles[p][..k], |t| {
                            r[position[t as usize & 31] as usize & 31]
                        });
                    state.reflected_set[i][p] = set;
                    state.reflected_order[i][p] = order;
                    let index = Self::index(regions, set, order, r[blank & 31] as usize);
                    state.reflected_excess[i][p] = packed_excess(table, index);
                }
            }
            h = h.max(md + 2 * sum(&state.excess[i]));
            if self.reflected {
                h = h.max(reflected_md + 2 * sum(&state.reflected_excess[i]));
            }
        }
        (h, state)
    }

    #[inline(always)]
    fn after_move(
        &self,
        h: u32,
        state: &ZeroMaxState<N>,
        label: u8,
        from: usize,
        to: usize,
        vertical: bool,
    ) -> (u32, ZeroMaxState<N>) {
        self.after_move_within(h, state, label, from, to, vertical, u32::MAX)
    }

    #[inline(always)]
    fn after_move_within(
        &self,
        _: u32,
        state: &ZeroMaxState<N>,
        label: u8,
        from: usize,
        to: usize,
        _: bool,
        limit: u32,
    ) -> (u32, ZeroMaxState<N>) {
        let mut next = *state;
        let (l, from, to) = (label as usize & 31, from & 31, to & 31);
        next.position[l] = to as u8;
        // The blank takes the tile's old cell.
        next.position[0] = from as u8;
        let dm = u16::from(self.manhattan[l][to]).wrapping_sub(u16::from(self.manhattan[l][from]));
        if self.counted & (1 << l) != 0 {
            next.manhattan = next.manhattan.wrapping_add(dm);
        }
        let r = &self.reflect;
        let (rfrom, rto) = (r[from] as usize & 31, r[to] as usize & 31);
        if self.reflected_counted & (1 << l) != 0 {
            // A reflection keeps distances: the reflected tile's changes by the same.
            next.reflected_manhattan = next.reflected_manhattan.wrapping_add(dm);
        }
        let moved = (1u32 << from) | (1u32 << to);
        let reflected_moved = (1u32 << rfrom) | (1u32 << rto);
        // Sideways moves keep the order of the tiles on their map; in the reflection, moves
        // up and down do.
        let sideways = from.abs_diff(to) == 1;
        let position = next.position;
        let mut index = [u32::MAX; N];
        let mut reflected_index = [u32::MAX; N];
        // Every changed index first, each entry asked of memory, so that the misses overlap.
        for (i, layout) in self.layouts.iter().enumerate() {
            let p = layout.pattern[l] as usize;
            if let (Some(regions), Some(table)) = (layout.regions.get(p), layout.tables.get(p)) {
                let p = p & (PATTERNS - 1);
                let set = next.set[i][p] ^ moved;
                next.set[i][p] = set;
                if !sideways {
                    let k = layout.k[p] as usize & 15;
                    let tiles = &layout.tiles[p][..k.min(8)];
                    next.order[i][p] = regions
                        .order_rank(set, tiles.iter().map(|&t| position[t as usize & 31]))
                        as u16;
                }
                let at = Self::index(regions, set, next.order[i][p], from);
                memory::prefetch(table, at as usize >> 1);
                index[i] = at;
            }
            if self.reflected {
                let rp = layout.reflected_pattern[l] as usize;
                if let (Some(regions), Some(table)) =
                    (layout.regions.get(rp), layout.tables.get(rp))
                {
                    let rp = rp & (PATTERNS - 1);
                    let set = next.reflected_set[i][rp] ^ reflected_moved;
                    next.reflected_set[i][rp] = set;
                    if sideways {
                        let k = layout.k[rp] as usize & 15;
                        let tiles = &layout.reflected_tiles[rp][..k.min(8)];
                        next.reflected_order[i][rp] = regions.order_rank(
                            set,
                            tiles
                                .iter()
                                .map(|&t| r[position[t as usize & 31] as usize & 31]),
                        ) as u16;
                    }
                    let at = Self::index(regions, set, next.reflected_order[i][rp], rfrom);
                    memory::prefetch(table, at as usize >> 1);
                    reflected_index[i] = at;
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
                next.excess[i][p & (PATTERNS - 1)] = packed_excess(table, index[i]);
            }
            value = value.max(manhattan + 2 * sum(&next.excess[i]));
            if value > limit {
                // Pruned: the other entries are never read.
                return (value, next);
            }
            if self.reflected {
                let rp = layout.reflected_pattern[l] as usize;
                if let Some(table) = layout.tables.get(rp) {
                    next.reflected_excess[i][rp & (PATTERNS - 1)] =
                        packed_excess(table, reflected_index[i]);
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
