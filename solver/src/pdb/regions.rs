//! The index of a zero-aware table ([`super::zero_aware`]): a placement of `k` pattern tiles
//! with the region of free cells that holds the blank, ranked densely.
//!
//! A placement is split into its *map* (the set of cells the pattern's tiles occupy) and the
//! order of the tiles on those cells (a permutation of `k`). The cells the map leaves free fall
//! into one or more connected *regions*; every map has its own count of them. The entries of
//! a table lie map after map (maps in colexicographic order of their cell sets), each map's
//! block holding `regions × k!` entries, region-major:
//!
//! ```text
//! index = offset[map] + region × k! + order
//! ```
//!
//! One [`MapInfo`] per map (16 bytes: 2.8 MB for six tiles on 5x5, shared by every table of
//! `k` tiles on the board) gives the block's offset and the region of each free cell, three bits
//! a free cell, numbered by the lowest free cell of each region. The map's rank is two reads
//! of small tables (its low and high cells); the order's rank is recomputed only when a tile
//! passes others, which a move sideways never does. The search finds a block's offset in
//! compact tables (a byte per map, a word per 16 maps: 221 KB for six tiles on 5x5) and reads
//! the `MapInfo` only for maps of more than one region: read for every lookup, the 2.8 MB
//! table missed the caches under the tables' traffic, and each miss came before the entry's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::PdbError;
use super::build::Geometry;
use crate::shape::Shape;

/// Bits of a cell set ranked by the `low` table; the rest by `high`.
const LOW_BITS: u32 = 13;

/// Maps per group of [`Regions`]' compact offsets.
const GROUP: usize = 16;

/// What a zero-aware table reads of one map.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(16))]
pub(crate) struct MapInfo {
    /// Three bits per free cell, free cells in increasing order: the region holding it.
    regions: u64,
    /// The index of the map's first entry.
    offset: u32,
    /// How many regions the free cells make.
    count: u32,
}

impl MapInfo {
    /// The first entry of the map's block.
    #[inline(always)]
    pub(crate) fn offset(&self) -> u32 {
        self.offset
    }

    /// How many regions the map's free cells make.
    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// The region of free `cell` (not in `map`).
    #[inline(always)]
    pub(crate) fn region(&self, map: u32, cell: usize) -> u32 {
        let cell = cell & 31;
        let ordinal = cell as u32 - (map & ((1u32 << cell) - 1)).count_ones();
        ((self.regions >> ((3 * ordinal) & 63)) & 7) as u32
    }
}

/// The maps of `k` tiles on a board, their ranks and regions, and the entry count of a
/// zero-aware table of `k` tiles.
#[derive(Clone, Debug)]
pub struct Regions {
    shape: Shape,
    k: usize,
    /// `low[set & (2^LOW_BITS - 1)]`: the colex rank's part of the low cells.
    low: Box<[u32]>,
    /// `high[(set >> LOW_BITS) * (k + 1) + j]`: the high cells' part, when `j` cells lie below.
    high: Box<[u32]>,
    /// Per map rank.
    maps: Box<[MapInfo]>,
    /// Per map rank: the cells of its largest region (of the lowest id among the largest),
    /// the one whose value a split table keeps apart ([`super::split`]).
    main: Box<[u32]>,
    /// The maps' offsets in a form small enough to stay in a core's cache (221 KB for six
    /// tiles on 5x5, against 2.8 MB for `maps`): a map's block starts at `orders × (rank +
    /// extra)`, `extra` being the regions beyond the first of the maps before it, which is
    /// `base[rank / 16]` plus the low 7 bits of `within[rank]` (the extra regions of the
    /// earlier maps of its group of 16). Bit 7 of `within[rank]`: the map has more than one
    /// region (only then is `maps` read, for the blank's region).
    base: Box<[u32]>,
    within: Box<[u8]>,
    /// `k!`: the orders of the tiles on a map.
    orders: u32,
    /// `factorial[i]`: `i!`, the weight of the order's digits.
    factorial: [u32; 9],
    /// Entries of a table (sum over maps of regions × k!).
    entries: u64,
    /// The board's cells as bits, for [`Regions::in_main`]'s flood: all of them, those off
    /// the first and off the last column, and the width.
    all: u32,
    off_first_column: u32,
    off_last_column: u32,
    width: u32,
}

/// `C(n, r)`.
fn binomial(n: u64, r: u64) -> u64 {
    if r > n {
        return 0;
    }
    (0..r).fold(1u64, |acc, i| acc * (n - i) / (i + 1))
}

impl Regions {
    /// The maps of `k` tiles on `shape`. Refused where a table would have 2^32 entries or
    /// more, a map more than 8 regions, or the free cells do not fit three bits each in a word.
    pub fn new(shape: Shape, k: usize) -> Result<Regions, PdbError> {
        let n = shape.cells();
        if k == 0 || k > 8 || k >= n {
            return Err(PdbError::Pattern(format!(
                "a zero-aware table needs 1 to 8 tiles and a free cell, got {k} on {shape}"
            )));
        }
        if 3 * (n - k) > 64 {
            return Err(PdbError::Pattern(format!(
                "a zero-aware table of {k} tiles on {shape} leaves too many free cells"
            )));
        }
        let low_bits = LOW_BITS.min(n as u32);
        let mut low = vec![0u32; 1 << low_bits];
        for (set, slot) in low.iter_mut().enumerate() {
            let mut rank = 0u64;
            for (i, cell) in bits(set as u32).enumerate() {
                rank += binomial(cell as u64, i as u64 + 1);
            }
            *slot = rank as u32;
        }
        let high_cells = n as u32 - low_bits;
        let mut high = vec![0u32; (1usize << high_cells) * (k + 1)];
        for set in 0..1u32 << high_cells {
            for j in 0..=k {
                let mut rank = 0u64;
                for (i, cell) in bits(set).enumerate() {
                    rank += binomial((cell + low_bits) as u64, (j + i) as u64 + 1);
                }
                high[set as usize * (k + 1) + j] = rank.min(u64::from(u32::MAX)) as u32;
            }
        }
        let count = binomial(n as u64, k as u64) as usize;
        let mut factorial = [1u32; 9];
        for i in 1..9 {
            factorial[i] = factorial[i - 1] * i as u32;
        }
        let orders = factorial[k];
        let geometry = Geometry::new(shape);
        let mut maps = vec![MapInfo::default(); count];
        let mut main = vec![0u32; count];
        let mut base = vec![0u32; count.div_ceil(GROUP)];
        let mut within = vec![0u8; count];
        let mut extra = 0u64;
        let mut entries = 0u64;
        // Gosper's hack walks the k-sets in increasing order, which is colex order.
        let mut set: u32 = (1u32 << k) - 1;
        for (rank, info) in maps.iter_mut().enumerate() {
            if rank % GROUP == 0 {
                base[rank / GROUP] = extra.min(u64::from(u32::MAX)) as u32;
            }
            let in_group = extra - u64::from(base[rank / GROUP]);
            let free = geometry.all & !set;
            let mut regions = 0u64;
            let mut id = 0u32;
            let mut rest = free;
            let mut largest = 0u32;
            while rest != 0 {
                if id >= 8 {
                    return Err(PdbError::Pattern(format!(
                        "a map of {k} tiles on {shape} makes more than 8 regions"
                    )));
                }
                let region = geometry.flood(rest & rest.wrapping_neg(), free);
                rest &= !region;
                if region.count_ones() > largest.count_ones() {
                    largest = region;
                }
                for cell in bits(region) {
                    let ordinal = cell - (set & ((1u32 << cell) - 1)).count_ones();
                    regions |= u64::from(id) << (3 * ordinal);
                }
                id += 1;
            }
            main[rank] = largest;
            *info = MapInfo {
                regions,
                offset: entries.min(u64::from(u32::MAX)) as u32,
                count: id,
            };
            // At most 7 extra regions a map, 15 maps before it in its group: 105 < 128.
            within[rank] = in_group as u8 | if id > 1 { 0x80 } else { 0 };
            extra += u64::from(id) - 1;
            entries += u64::from(id) * u64::from(orders);
            let c = set & set.wrapping_neg();
            let r = set + c;
            set = (((r ^ set) >> 2) / c) | r;
        }
        if entries >= u64::from(u32::MAX) {
            return Err(PdbError::Pattern(format!(
                "a zero-aware table of {k} tiles on {shape} would have {entries} entries (2^32 at most)"
            )));
        }
        let (mut off_first_column, mut off_last_column) = (0u32, 0u32);
        for cell in 0..n {
            if shape.col(cell) != 0 {
                off_first_column |= 1 << cell;
            }
            if shape.col(cell) + 1 != shape.width() {
                off_last_column |= 1 << cell;
            }
        }
        Ok(Regions {
            all: geometry.all,
            off_first_column,
            off_last_column,
            width: shape.width() as u32,
            shape,
            k,
            low: low.into(),
            high: high.into(),
            maps: maps.into(),
            main: main.into(),
            base: base.into(),
            within: within.into(),
            orders,
            factorial,
            entries,
        })
    }

    /// [`Regions::new`], made once per process for each board and tile count and shared by
    /// every table that needs it (2.8 MB for six tiles on 5x5).
    pub fn shared(shape: Shape, k: usize) -> Result<Arc<Regions>, PdbError> {
        type Made = Mutex<HashMap<(Shape, usize), Arc<Regions>>>;
        static MADE: OnceLock<Made> = OnceLock::new();
        let mut made = MADE
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(found) = made.get(&(shape, k)) {
            return Ok(Arc::clone(found));
        }
        let regions = Arc::new(Regions::new(shape, k)?);
        made.insert((shape, k), Arc::clone(&regions));
        Ok(regions)
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The tiles of the tables these maps serve.
    pub fn tiles(&self) -> usize {
        self.k
    }

    /// Entries of a zero-aware table of `k` tiles.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// How many maps (cell sets) there are.
    pub fn maps(&self) -> usize {
        self.maps.len()
    }

    /// `k!`: each region's block of orders.
    pub(crate) fn orders(&self) -> u32 {
        self.orders
    }

    /// The memory the index tables take, in bytes.
    pub fn bytes(&self) -> usize {
        std::mem::size_of_val(&*self.maps)
            + std::mem::size_of_val(&*self.main)
            + std::mem::size_of_val(&*self.low)
            + std::mem::size_of_val(&*self.high)
            + std::mem::size_of_val(&*self.base)
            + std::mem::size_of_val(&*self.within)
    }

    /// The colex rank of a cell set of `k` cells.
    #[inline(always)]
    pub(crate) fn map_rank(&self, set: u32) -> usize {
        let low_mask = (1u32 << LOW_BITS) - 1;
        let below = (set & low_mask).count_ones() as usize;
        let lo = self
            .low
            .get((set & low_mask) as usize)
            .copied()
            .unwrap_or(0);
        let hi = (self.high)
            .get((set >> LOW_BITS) as usize * (self.k + 1) + below)
            .copied()
            .unwrap_or(0);
        (lo + hi) as usize
    }

    /// The map of a cell set.
    #[inline(always)]
    pub(crate) fn info(&self, set: u32) -> MapInfo {
        self.maps
            .get(self.map_rank(set))
            .copied()
            .unwrap_or_default()
    }

    /// The cells of the largest region of the map of rank `rank` (see `main`).
    pub(crate) fn main_cells(&self, rank: usize) -> u32 {
        self.main.get(rank).copied().unwrap_or(0)
    }

    /// Whether free cell `blank` lies in the largest region of map `set` (of the lowest id
    /// among the largest; always, for a map of one region). Found by flooding the free cells
    /// with shifts, no table read: the search asks it after a table's entry, which has just
    /// pushed other lines out of the caches (the `main` table's reads missed them).
    #[inline(always)]
    pub(crate) fn in_main(&self, set: u32, blank: usize) -> bool {
        let free = self.all & !set;
        let total = free.count_ones();
        let own = self.flood(1u32 << (blank & 31), free, total / 2);
        let size = own.count_ones();
        if 2 * size > total {
            // More than half the free cells: no other region is as large.
            return true;
        }
        // Grown to the end: the blank's whole region.
        let mut rest = free & !own;
        while rest != 0 {
            let lowest = rest & rest.wrapping_neg();
            let region = self.flood(lowest, free, total);
            let other = region.count_ones();
            // Ties go to the region of the lowest cell (the lower id).
            if other > size || (other == size && lowest < (own & own.wrapping_neg())) {
                return false;
            }
            rest &= !region;
        }
        true
    }

    /// The cells of `free` joined to `seed`, grown until none joins or it has more than
    /// `enough` cells.
    #[inline(always)]
    fn flood(&self, seed: u32, free: u32, enough: u32) -> u32 {
        let w = self.width & 31;
        let mut region = seed & free;
        loop {
            let grown = (region
                | (region & self.off_first_column) >> 1
                | (region & self.off_last_column) << 1
                | region >> w
                | region << w)
                & free;
            if grown == region || grown.count_ones() > enough {
                return grown;
            }
            region = grown;
        }
    }

    /// The rank of the tiles' order on their map: `cells[i]` is tile i's cell, `set` the
    /// cells of all `k`. Tile i's digit counts the map cells below its own that no earlier
    /// tile holds (a Lehmer code), weighted `(k-1-i)!`.
    #[inline(always)]
    pub(crate) fn order_rank(&self, set: u32, cells: impl Iterator<Item = u8>) -> u32 {
        let mut used = 0u32;
        let mut rank = 0u32;
        for (i, c) in cells.enumerate().take(self.k) {
            let c = u32::from(c) & 31;
            let position = (set & ((1u32 << c) - 1)).count_ones();
            let digit = position - (used & ((1u32 << position) - 1)).count_ones();
            rank += digit * self.factorial[(self.k - 1 - i) & 7];
            used |= 1 << position;
        }
        rank
    }

    /// The first entry of the block of the blank's region on map `set` (the blank on free
    /// cell `blank`): the order's rank is added to it. Reads the 2.8 MB `maps` only for maps
    /// of more than one region; the rest is in tables that stay in a core's cache.
    #[inline(always)]
    pub(crate) fn locate(&self, set: u32, blank: usize) -> u32 {
        let rank = self.map_rank(set);
        let w = self.within.get(rank).copied().unwrap_or(0);
        let extra = self.base.get(rank / GROUP).copied().unwrap_or(0) + u32::from(w & 0x7f);
        let offset = (rank as u32 + extra) * self.orders;
        if w & 0x80 == 0 {
            return offset;
        }
        let info = self.maps.get(rank).copied().unwrap_or_default();
        offset + info.region(set, blank) * self.orders
    }

    /// The entry of the tiles on `cells` (tile i on `cells[i]`) with the blank on free cell
    /// `blank`.
    #[inline(always)]
    pub(crate) fn index(&self, cells: &[u8], blank: usize) -> u32 {
        let set = cells.iter().fold(0u32, |m, &c| m | 1 << (c & 31));
        let order = self.order_rank(set, cells.iter().copied());
        self.locate(set, blank) + order
    }
}

/// The set bits of `set`, lowest first.
fn bits(mut set: u32) -> impl Iterator<Item = u32> {
    std::iter::from_fn(move || {
        (set != 0).then(|| {
            let b = set.trailing_zeros();
            set &= set - 1;
            b
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every map's rank is its place in increasing order, and the blocks tile the table.
    #[test]
    fn maps_are_ranked_in_order_and_their_blocks_tile_the_table() {
        for (w, h, k) in [(3, 3, 4), (2, 4, 3), (4, 2, 4), (4, 4, 7), (3, 4, 5)] {
            let shape = Shape::new(w, h).unwrap();
            let regions = Regions::new(shape, k).unwrap();
            let n = shape.cells();
            let mut rank = 0usize;
            let mut offset = 0u64;
            for set in 0u32..1 << n {
                if set.count_ones() as usize != k {
                    continue;
                }
                assert_eq!(regions.map_rank(set), rank, "{shape} {set:b}");
                let info = regions.info(set);
                assert_eq!(u64::from(info.offset()), offset);
                // The compact offsets say the same, for every free cell's region.
                let main = regions.main_cells(regions.map_rank(set));
                for blank in (0..n).filter(|&c| set & (1 << c) == 0) {
                    let expected = info.offset() + info.region(set, blank) * regions.orders();
                    assert_eq!(regions.locate(set, blank), expected, "{shape} {set:b}");
                    // The flood finds the largest region the table of regions holds.
                    let in_main = main & (1 << blank) != 0;
                    assert_eq!(
                        regions.in_main(set, blank),
                        in_main,
                        "{shape} {set:b} {blank}"
                    );
                }
                offset += u64::from(info.count()) * u64::from(regions.orders());
                rank += 1;
            }
            assert_eq!(rank, regions.maps());
            assert_eq!(offset, regions.entries());
        }
    }

    /// Two free cells share a region id exactly when a path of free cells joins them.
    #[test]
    fn region_ids_follow_connectivity() {
        let shape = Shape::new(3, 3).unwrap();
        let regions = Regions::new(shape, 4).unwrap();
        let geometry = Geometry::new(shape);
        for set in 0u32..1 << 9 {
            if set.count_ones() != 4 {
                continue;
            }
            let info = regions.info(set);
            let free = geometry.all & !set;
            for a in bits(free) {
                let reach = geometry.flood(1 << a, free);
                for b in bits(free) {
                    let same = info.region(set, a as usize) == info.region(set, b as usize);
                    assert_eq!(same, reach & (1 << b) != 0, "{set:b} {a} {b}");
                }
            }
            assert!(info.count() >= 1);
            // The main region is a region, and none is larger.
            let main = regions.main_cells(regions.map_rank(set));
            let first = main.trailing_zeros();
            assert_eq!(geometry.flood(1 << first, free), main, "{set:b}");
            for a in bits(free) {
                assert!(geometry.flood(1 << a, free).count_ones() <= main.count_ones());
            }
        }
        // The cross: cells 1 3 5 7 leave the four corners and the centre apart.
        assert_eq!(regions.info(0b10101010).count(), 5);
    }

    /// The order's rank is a bijection onto `0..k!` for each map.
    #[test]
    fn orders_rank_every_permutation_once() {
        let shape = Shape::new(3, 3).unwrap();
        let regions = Regions::new(shape, 4).unwrap();
        let cells = [0u8, 2, 4, 8];
        let set = cells.iter().fold(0u32, |m, &c| m | 1 << c);
        let mut seen = [false; 24];
        let mut perm = [0usize, 1, 2, 3];
        // All 24 permutations by Heap's algorithm.
        let mut c = [0usize; 4];
        let mut record = |p: &[usize; 4]| {
            let r = regions.order_rank(set, p.iter().map(|&i| cells[i])) as usize;
            assert!(!seen[r], "{p:?}");
            seen[r] = true;
        };
        record(&perm);
        let mut i = 0;
        while i < 4 {
            if c[i] < i {
                if i % 2 == 0 {
                    perm.swap(0, i);
                } else {
                    perm.swap(c[i], i);
                }
                record(&perm);
                c[i] += 1;
                i = 0;
            } else {
                c[i] = 0;
                i += 1;
            }
        }
        assert!(seen.iter().all(|&s| s));
    }

    /// Six tiles on 5x5: the entry count the published tables have.
    #[test]
    fn six_tiles_on_the_24_puzzle() {
        let regions = Regions::new(Shape::new(5, 5).unwrap(), 6).unwrap();
        assert_eq!(regions.maps(), 177_100);
        assert_eq!(regions.entries(), 181_008_000);
        // The compact offsets agree with the maps' own on every map, on every free cell.
        let mut set: u32 = (1 << 6) - 1;
        let mut most = 0;
        for rank in 0..regions.maps() {
            let info = regions.info(set);
            most = most.max(info.count());
            assert_eq!(regions.map_rank(set), rank);
            let main = regions.main_cells(rank);
            for blank in (0..25).filter(|&c| set & (1 << c) == 0) {
                let expected = info.offset() + info.region(set, blank) * regions.orders();
                assert_eq!(regions.locate(set, blank), expected, "{set:b} {blank}");
                assert_eq!(regions.in_main(set, blank), main & (1 << blank) != 0);
            }
            let c = set & set.wrapping_neg();
            let r = set + c;
            set = (((r ^ set) >> 2) / c) | r;
        }
        eprintln!("six tiles on 5x5: at most {most} regions a map");
    }
}
