//! Zero-aware tables (Clausecker & Reinefeld, "Zero-Aware Pattern Databases with 1-Bit
//! Compression for Sliding Tile Puzzles", SoCS 2019): one entry per placement of the pattern's
//! tiles **and region of free cells holding the blank**, instead of the minimum over the
//! regions that a table of one entry per placement keeps.
//!
//! The breadth-first search that builds either kind is the same ([`PatternDb::build`]: its
//! states are already (placement, region)); a zero-aware build writes each region's value as
//! the region is expanded. The values stay additive over disjoint patterns (only a pattern
//! tile's move costs), and a move of a tile outside the pattern keeps the blank in its region,
//! so it changes neither the index nor the value: the search reads a table only when one of its
//! own tiles moves ([`super::ZeroMax`]). Each entry is at least the per-placement table's entry
//! for its placement (that one is their minimum).
//!
//! Entries are packed as the per-placement tables' are: four bits, the value less the pattern
//! tiles' Manhattan distance, halved (capped at 15). The index is [`Regions`]'s: six tiles on
//! 5x5 make 181,008,000 entries, 90.5 MB, against 63.8 MB dense (122 MB sparse) per placement.
//! Files are format [`ZERO_AWARE_FORMAT`], whose header says the table's kind; the tables the
//! search reads in the split layout (six tiles on 5x5) are stored in it, format
//! [`super::SPLIT_FORMAT`] (`split`).

use std::sync::Arc;

use super::packing::{manhattan_table, unpack};
use super::{BlankGoal, PatternDb, PdbError, Regions};
use crate::shape::Shape;

/// The file format of zero-aware tables: format 4's header, then a byte naming the table's
/// [`TableKind`]. Per-placement tables are still written in format 4, which older builds read.
pub const ZERO_AWARE_FORMAT: u32 = 5;

/// What a table's entries are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TableKind {
    /// One entry per placement: the least over the regions the blank may be in.
    PerPlacement,
    /// One entry per placement and region of the blank ([`Regions`]).
    ZeroAware,
}

impl TableKind {
    /// The byte format 5 stores.
    pub(super) fn byte(self) -> u8 {
        match self {
            TableKind::PerPlacement => 0,
            TableKind::ZeroAware => 1,
        }
    }

    pub(super) fn from_byte(b: u8) -> Option<TableKind> {
        match b {
            0 => Some(TableKind::PerPlacement),
            1 => Some(TableKind::ZeroAware),
            _ => None,
        }
    }

    /// Entries of a table of this kind for `k` tiles on `shape`.
    pub fn entries(self, shape: Shape, k: usize) -> Result<u64, PdbError> {
        match self {
            TableKind::PerPlacement => Ok(PatternDb::entries(shape, k)),
            TableKind::ZeroAware => Ok(Regions::shared(shape, k)?.entries()),
        }
    }
}

impl PatternDb {
    /// Builds the zero-aware table of `tiles` (blank home on cell 0): the search of
    /// [`PatternDb::build`], each region's value kept. `progress(done, total)` counts entries.
    pub fn build_zero_aware(
        shape: Shape,
        tiles: &[u8],
        progress: impl FnMut(u64, u64),
    ) -> Result<PatternDb, PdbError> {
        Self::check_pattern(shape, tiles)?;
        let regions = Regions::shared(shape, tiles.len())?;
        Self::build_kind(shape, tiles, BlankGoal::Home, Some(&regions), progress)
    }

    /// What the table's entries are.
    pub fn kind(&self) -> TableKind {
        match self.zero {
            Some(_) => TableKind::ZeroAware,
            None => TableKind::PerPlacement,
        }
    }

    /// The maps of a zero-aware table (its index), `None` for a per-placement one.
    pub fn regions(&self) -> Option<&Arc<Regions>> {
        self.zero.as_ref()
    }

    /// The number of entries the table holds (a split table's: one a placement, each two
    /// values, see `split`).
    pub fn len(&self) -> u64 {
        match &self.zero {
            Some(regions) if !self.is_split() => regions.entries(),
            _ => Self::entries(self.shape, self.tiles.len()),
        }
    }

    /// Whether the table has no entries (never: every pattern has a placement).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A zero-aware table over `table` (packed entries in [`Regions`]' order).
    pub(super) fn zero_aware(
        shape: Shape,
        tiles: &[u8],
        regions: Arc<Regions>,
        table: Arc<[u8]>,
    ) -> PatternDb {
        let mut db = PatternDb::new(shape, tiles, BlankGoal::Home, table);
        db.zero = Some(regions);
        db
    }

    /// A zero-aware table's value for `position[label]` (the blank is label 0); in the split
    /// layout, what that layout keeps of it.
    pub(super) fn zero_lookup(&self, regions: &Regions, position: &[u8]) -> u8 {
        let mut cells = [0u8; 8];
        let mut md = 0;
        let manhattan = manhattan_table(self.shape);
        for (slot, &t) in cells.iter_mut().zip(&self.tiles) {
            *slot = position[t as usize & 31];
            md += u32::from(manhattan[t as usize & 31][*slot as usize & 31]);
        }
        let k = self.tiles.len();
        if self.is_split() {
            let index = self.index(cells[..k].iter().copied()) as u32;
            let set = cells[..k].iter().fold(0u32, |m, &c| m | 1 << (c & 31));
            let blank = position[0] as usize;
            let excess = super::split::split_excess(&self.table, index, regions, blank, || set);
            return (md + 2 * u32::from(excess)) as u8;
        }
        let index = regions.index(&cells[..k], position[0] as usize);
        unpack(&self.table, index as usize, md) as u8
    }

    /// Calls `f(value)` for every entry of a zero-aware table: placement after placement in
    /// rank order, each of its regions in order; in the split layout, each placement's value
    /// with the blank in its map's largest region, then, for a map of several regions, the
    /// least of the others'.
    pub(super) fn for_each_zero_value(&self, regions: &Regions, mut f: impl FnMut(u8)) {
        let k = self.tiles.len();
        let manhattan = manhattan_table(self.shape);
        let total = Self::entries(self.shape, k);
        let mut odometer = super::packing::Odometer::at(self, &manhattan, 0);
        for _ in 0..total {
            let cells = &odometer.cells[..k];
            let set = cells.iter().fold(0u32, |m, &c| m | 1 << (c & 31));
            let info = regions.info(set);
            if self.is_split() {
                let index = self.index(cells.iter().copied());
                let byte = self.table.get(index).copied().unwrap_or(0);
                f((odometer.md + 2 * u32::from(byte & 15)) as u8);
                if info.count() > 1 {
                    f((odometer.md + 2 * u32::from(byte >> 4)) as u8);
                }
                odometer.step();
                continue;
            }
            let order = regions.order_rank(set, cells.iter().copied());
            for region in 0..info.count() {
                let index = info.offset() + region * regions.orders() + order;
                f(unpack(&self.table, index as usize, odometer.md) as u8);
            }
            odometer.step();
        }
    }
}
