//! The heuristic the search carries: every table's rank changed move by move, the reflected
//! lookup on square boards, the larger of the two sums.

use super::packing::manhattan_table;
use super::split::{SparseDigits, split_excess};
use super::{BlankGoal, Partition, PatternDb, PdbError, Regions};
use crate::heuristic::Heuristic;
use crate::shape::Shape;
use std::sync::Arc;

/// What the hot loop reads of one table: the digits' weights as fixed `u32`s, and the entries,
/// in the dense layout (ranks) or the sparse one (`sparse`: cells as digits).
#[derive(Clone, Debug)]
struct Lookup {
    /// `multiplier[i]`: the weight of tile i's digit in the rank.
    multiplier: [u32; 8],
    /// Two entries a byte ([`PatternDb::table`], in its layout).
    packed: Arc<[u8]>,
}

impl Lookup {
    fn new(db: &PatternDb) -> Lookup {
        let mut multiplier = [0; 8];
        match db.sparse {
            Some(weight) => multiplier = weight,
            None => {
                for (m, &wide) in multiplier.iter_mut().zip(&db.multiplier) {
                    *m = wide as u32;
                }
            }
        }
        Lookup {
            multiplier,
            packed: Arc::clone(&db.table),
        }
    }

    /// Entry `rank`'s nibble: its value less the pattern tiles' Manhattan distance, halved
    /// (see [`nibble`]).
    #[inline(always)]
    fn excess(&self, rank: u32) -> u32 {
        u32::from(packed_excess(&self.packed, rank))
    }
}

/// Entry `rank` of a table packed two entries a byte (low nibble first).
#[inline(always)]
pub(super) fn packed_excess(packed: &[u8], rank: u32) -> u8 {
    let byte = packed.get(rank as usize >> 1).copied().unwrap_or(0);
    (byte >> ((rank & 1) * 4)) & 15
}

/// How a pattern's index changes when its tile `j` (weight `multiplier`) slides from cell
/// `from` to the neighbouring cell `to`, on a board `width` cells wide (the board or its
/// reflection), in the `SPARSE` layout or the dense one.
///
/// Sparse (`sparse`): the tile's digit is its cell, so the index changes by its weight times
/// one cell sideways or `width` cells up or down. Dense: tile j's digit counts the free cells
/// below its own among those its earlier tiles leave; a later tile's digit counts whether tile
/// j lies below it. A move sideways passes no cell, so only tile j's digit changes, by one. A
/// move up or down passes the `width - 1` cells in between: tile j's digit changes by `width`
/// less the earlier tiles it passes, and each later tile it passes gains or loses one.
/// `passed[label]` holds what passing the tile with that label adds (see
/// [`PdbHeuristic::new`]); `label_at(c)` reads the label on cell `c`. The index is kept modulo
/// 2^32 (every table has fewer entries), so the sums may wrap. The layout is a constant of the
/// search's loop, chosen once a node (`PdbHeuristic::sparse`), so that the dense loop of the
/// 15-puzzle is what it was before there were two.
#[inline(always)]
fn rank_change<const SPARSE: bool>(
    multiplier: u32,
    passed: &[u32; 32],
    width: usize,
    from: usize,
    to: usize,
    label_at: impl Fn(usize) -> u8,
) -> u32 {
    let mut change = multiplier;
    if from.abs_diff(to) != 1 {
        change = multiplier.wrapping_mul(width as u32);
        if !SPARSE {
            let low = from.min(to);
            for c in low + 1..low + width {
                change = change.wrapping_add(passed[label_at(c) as usize & 31]);
            }
        }
    }
    if to > from {
        change
    } else {
        change.wrapping_neg()
    }
}

/// The additive heuristic of a partition's tables, with the reflected lookup on square boards.
///
/// The search carries each table's rank from a node to its children and changes it by what the
/// move changes (`rank_change`): a lookup costs a few additions, not a rank computed over
/// every tile of the pattern.
#[derive(Clone, Debug)]
pub struct PdbHeuristic {
    dbs: Vec<PatternDb>,
    lookups: Vec<Lookup>,
    /// Whether every table is in the sparse layout (else every one is dense, see `sparse`).
    sparse: bool,
    /// Whether every table is zero-aware (`zero_aware`; else none is): in the split layout
    /// where `sparse` (read through [`super::SparseMax`]), else in their own index (through
    /// [`super::ZeroMax`]); this type's own lookups evaluate them from scratch.
    zero_aware: bool,
    cells: usize,
    width: usize,
    /// `pattern_of[label]`: the pattern that holds a label (unused for the blank).
    pattern_of: [u8; 32],
    /// `index_of[label]`: the label's index in its pattern.
    index_of: [u8; 32],
    /// Cell reflected about the main diagonal (square boards only).
    reflect: Option<[u8; 32]>,
    manhattan: [[u8; 32]; 32],
    /// `passed[p][j][label]`: what pattern p's rank gains, for a move towards higher cells, when
    /// its tile j passes the tile `label` ([`rank_change`]): if `label` is tile i of pattern p,
    /// minus tile j's multiplier when i < j, tile i's multiplier when i > j; 0 for other labels.
    passed: Box<[[[u32; 32]; 8]; 8]>,
    /// The same in the reflected board, indexed by the label on the board before reflection.
    reflected_passed: Box<[[[u32; 32]; 8]; 8]>,
    /// The dual lookups' tables, when they are loaded ([`PdbHeuristic::with_dual`]).
    dual: Option<Box<DualLookups>>,
    /// Other partitions' heuristics under the max ([`PdbHeuristic::with_also`]).
    pub(super) also: Vec<PdbHeuristic>,
}

/// A partition as [`super::SparseMax`] reads it ([`PdbHeuristic::sparse_tables`]).
pub(super) struct SparseTables {
    /// Per pattern, for split tables ([`super::split`]): its maps and its index's digits.
    pub(super) split: Option<Vec<(Arc<Regions>, SparseDigits)>>,
    /// `pattern[label]`: the pattern holding the label, `u8::MAX` for none.
    pub(super) pattern: [u8; 32],
    /// `weight[label]`: the weight of the label's digit (its cell) in its pattern's index.
    pub(super) weight: [u32; 32],
    /// Each pattern's entries in the sparse layout: two a byte, or a split byte each.
    pub(super) tables: Vec<Arc<[u8]>>,
}

/// The tables of the dual lookups (Zahavi, Felner, Holte & Schaeffer 2008), as the rule in
/// `shared/notes/dual_lookups.md` makes them admissible here. A board `s` (labels on cells,
/// blank on cell `b`) has a dual: tile `x` on the cell numbered by the label that `s` has on
/// cell `x`, except that the blank is on cell 0 and tile `b` on the cell whose label `s` has on
/// cell 0. The dual is as far from the goal "blank on `b`, tile `b` on cell 0, the others home"
/// as `s` is from the goal. So with the blank home (`b` = 0) the regular tables measure it;
/// otherwise the patterns without `b` are measured by tables whose goal leaves the blank free,
/// `b`'s pattern by its table without `b`, and `b` by its Manhattan distance to cell 0. The
/// values are admissible but not consistent: the search's pathmax (BPMX) makes use of that.
#[derive(Clone, Debug)]
struct DualLookups {
    /// Per pattern: its table towards a goal with the blank anywhere.
    whole: Vec<PatternDb>,
    /// `without[b]`: the table of the pattern of tile `b` less `b`, blank anywhere.
    without: Vec<Option<PatternDb>>,
}

/// What the PDB heuristic carries per node: the board, and for each table its rank and entry
/// for the board and for its reflection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PdbState {
    /// `board[cell]`: the label on each cell.
    board: [u8; 32],
    pub(super) rank: [u32; 8],
    pub(super) reflected_rank: [u32; 8],
    /// Each table's entry: its value less its tiles' Manhattan distance, halved ([`nibble`]).
    pub(super) excess: [u8; 8],
    pub(super) reflected_excess: [u8; 8],
    /// Sums of `excess` and of `reflected_excess`.
    excess_sum: u32,
    reflected_excess_sum: u32,
    /// The pattern tiles' summed Manhattan distance, in the board and in its reflection.
    pub(super) manhattan: u32,
    pub(super) reflected_manhattan: u32,
}

impl PdbState {
    fn value(&self) -> u32 {
        self.manhattan + 2 * self.excess_sum
    }

    fn reflected_value(&self) -> u32 {
        self.reflected_manhattan + 2 * self.reflected_excess_sum
    }

    /// Reads table `p`'s entry at its carried rank into the state.
    #[inline(always)]
    fn read_entry(&mut self, p: usize, lookup: &Lookup) {
        let e = lookup.excess(self.rank[p]);
        self.excess_sum = self.excess_sum + e - self.excess[p] as u32;
        self.excess[p] = e as u8;
    }

    /// The same for the reflected board.
    #[inline(always)]
    fn read_reflected_entry(&mut self, p: usize, lookup: &Lookup) {
        let e = lookup.excess(self.reflected_rank[p]);
        self.reflected_excess_sum = self.reflected_excess_sum + e - self.reflected_excess[p] as u32;
        self.reflected_excess[p] = e as u8;
    }
}

impl PdbHeuristic {
    /// The heuristic of `dbs`, which must be disjoint patterns of one shape (at most 8).
    pub fn new(dbs: Vec<PatternDb>, reflect: bool) -> Result<PdbHeuristic, PdbError> {
        // The sparse layout where it pays (see `sparse`); NPUZZLE_PDB_DENSE=1 keeps every
        // table dense, for side-by-side measurements with one binary (but for tables read
        // split from their files, which have no other layout: `with_layout`).
        let dense_only = std::env::var_os("NPUZZLE_PDB_DENSE").is_some_and(|v| v == "1");
        Self::with_layout(dbs, reflect, |shape, k| {
            !dense_only && super::sparse::worth_it(shape, k)
        })
    }

    /// [`PdbHeuristic::new`], every table read through the sparse layout if `sparse(shape,
    /// tiles)` holds for each, else every table dense.
    pub(super) fn with_layout(
        dbs: Vec<PatternDb>,
        reflect: bool,
        sparse: impl Fn(Shape, usize) -> bool,
    ) -> Result<PdbHeuristic, PdbError> {
        let Some(first) = dbs.first() else {
            return Err(PdbError::Pattern("no tables".into()));
        };
        let shape = first.shape;
        if dbs.len() > 8 {
            return Err(PdbError::Pattern("at most 8 patterns".into()));
        }
        let mut pattern_of = [u8::MAX; 32];
        let mut index_of = [0u8; 32];
        for (i, db) in dbs.iter().enumerate() {
            if db.shape != shape {
                return Err(PdbError::Pattern("tables of different shapes".into()));
            }
            if PatternDb::entries(shape, db.tiles.len()) > u64::from(u32::MAX) {
                return Err(PdbError::Pattern(format!(
                    "{shape} {:?}: more than 2^32 placements",
                    db.tiles
                )));
            }
            for (j, &t) in db.tiles.iter().enumerate() {
                if pattern_of[t as usize] != u8::MAX {
                    return Err(PdbError::Pattern(format!("tile {t} is in two patterns")));
                }
                pattern_of[t as usize] = i as u8;
                index_of[t as usize] = j as u8;
            }
        }
        let reflect = (reflect && shape.width() == shape.height()).then(|| {
            let mut r = [0u8; 32];
            for (cell, slot) in r.iter_mut().enumerate().take(shape.cells()) {
                *slot = (shape.col(cell) * shape.width() + shape.row(cell)) as u8;
            }
            r
        });
        let manhattan = manhattan_table(shape);
        let zero_aware = dbs.iter().all(|db| db.regions().is_some());
        if !zero_aware && dbs.iter().any(|db| db.regions().is_some()) {
            return Err(PdbError::Pattern(
                "zero-aware and per-placement tables in one partition".into(),
            ));
        }
        // All or none, whatever layout each table comes in: the hot loop's layout is one
        // constant for every table (a sparse table read as dense would give wrong values).
        // Zero-aware tables go sparse as split tables (`split`). A table read split from its
        // file (format 6) has no other layout: then every table goes split, whatever `sparse`
        // says (NPUZZLE_PDB_DENSE=1 included).
        let any_split = dbs.iter().any(PatternDb::is_split);
        if any_split
            && !dbs
                .iter()
                .all(|db| super::sparse::fits(shape, db.tiles.len()))
        {
            return Err(PdbError::Pattern(
                "a split table beside one whose sparse index exceeds 32 bits".into(),
            ));
        }
        let lookups_sparse = any_split || dbs.iter().all(|db| sparse(shape, db.tiles.len()));
        let dbs: Vec<PatternDb> = match (lookups_sparse, zero_aware) {
            (true, true) => dbs.into_iter().map(PatternDb::into_split).collect(),
            (true, false) => dbs.into_iter().map(PatternDb::into_sparse).collect(),
            (false, _) => dbs.into_iter().map(PatternDb::into_dense).collect(),
        };
        let lookups: Vec<Lookup> = dbs.iter().map(Lookup::new).collect();
        let mut passed = Box::new([[[0u32; 32]; 8]; 8]);
        for (p, db) in dbs.iter().enumerate() {
            for j in 0..db.tiles.len() {
                for (i, &label) in db.tiles.iter().enumerate() {
                    passed[p][j][label as usize & 31] = match i.cmp(&j) {
                        std::cmp::Ordering::Less => (db.multiplier[j] as u32).wrapping_neg(),
                        std::cmp::Ordering::Greater => db.multiplier[i] as u32,
                        std::cmp::Ordering::Equal => 0,
                    };
                }
            }
        }
        let mut reflected_passed = Box::new([[[0u32; 32]; 8]; 8]);
        if let Some(r) = &reflect {
            for (p, per_tile) in passed.iter().enumerate() {
                for (j, by_label) in per_tile.iter().enumerate() {
                    for label in 0..shape.cells() {
                        reflected_passed[p][j][label] = by_label[r[label] as usize];
                    }
                }
            }
        }
        Ok(PdbHeuristic {
            dbs,
            sparse: lookups_sparse,
            zero_aware,
            lookups,
            cells: shape.cells(),
            width: shape.width(),
            pattern_of,
            index_of,
            reflect,
            manhattan,
            passed,
            reflected_passed,
            dual: None,
            also: Vec::new(),
        })
    }

    /// Adds another partition's heuristic (of the same shape) under the max.
    pub fn with_also(mut self, mut other: PdbHeuristic) -> Result<PdbHeuristic, PdbError> {
        if other.shape() != self.shape() {
            return Err(PdbError::Pattern("tables of different shapes".into()));
        }
        let more = std::mem::take(&mut other.also);
        self.also.push(other);
        self.also.extend(more);
        Ok(self)
    }

    /// How many partitions' heuristics are under the max (1 and those added).
    pub fn partitions(&self) -> usize {
        1 + self.also.len()
    }

    /// The other partitions' values for a board, stopping once one exceeds `limit`.
    fn also_values(&self, board: &[u8; 32], limit: u32) -> u32 {
        let mut value = 0;
        for other in &self.also {
            value = value.max(other.evaluate_own::<true>(&board[..self.cells]).0);
            if value > limit {
                break;
            }
        }
        value
    }

    /// Adds the dual lookups: `tables` are those `partition.dual_tables()` names, in its order
    /// (built with [`PatternDb::build_for`] and [`BlankGoal::Free`]), for the partition these
    /// tables are of.
    pub fn with_dual(
        mut self,
        partition: &Partition,
        tables: Vec<PatternDb>,
    ) -> Result<PdbHeuristic, PdbError> {
        if self.zero_aware {
            return Err(PdbError::Pattern(
                "the dual lookups need per-placement tables, not zero-aware ones".into(),
            ));
        }
        let specs = partition.dual_tables();
        let own: Vec<&[u8]> = self.dbs.iter().map(|db| db.tiles()).collect();
        if partition.shape != self.shape()
            || partition
                .patterns
                .iter()
                .map(Vec::as_slice)
                .ne(own.iter().copied())
        {
            return Err(PdbError::Pattern(format!(
                "dual tables of {} {} for other tables",
                partition.shape, partition.name
            )));
        }
        if specs.len() != tables.len() {
            return Err(PdbError::Pattern(format!(
                "{} dual tables for {} {}, not {}",
                tables.len(),
                partition.shape,
                partition.name,
                specs.len()
            )));
        }
        let mut whole = self.dbs.clone();
        let mut without = vec![None; 32];
        for (spec, db) in specs.iter().zip(tables) {
            if db.tiles() != spec.tiles.as_slice()
                || db.blank_goal() != BlankGoal::Free
                || db.shape() != partition.shape
            {
                return Err(PdbError::Mismatch {
                    found: format!("{db:?} ({:?})", db.blank_goal()),
                    expected: format!("{} {:?} (Free)", partition.shape, spec.tiles),
                });
            }
            match spec.without {
                None => whole[spec.pattern] = db,
                Some(b) => without[b as usize & 31] = Some(db),
            }
        }
        self.dual = Some(Box::new(DualLookups { whole, without }));
        Ok(self)
    }

    /// Whether the dual lookups are on.
    pub fn has_dual(&self) -> bool {
        self.dual.is_some()
    }

    /// Whether the tables are zero-aware (one entry per placement and region of the blank).
    pub fn is_zero_aware(&self) -> bool {
        self.zero_aware
    }

    /// A table's value for the placement `cell_of(tile)` of its tiles (from scratch).
    #[inline(always)]
    fn value_at(&self, db: &PatternDb, cell_of: impl Fn(usize) -> usize) -> u32 {
        let mut cells = [0u8; 8];
        let mut md = 0;
        for (slot, &t) in cells.iter_mut().zip(db.tiles()) {
            let c = cell_of(t as usize) & 31;
            md += self.manhattan[t as usize & 31][c] as u32;
            *slot = c as u8;
        }
        let index = db.index(cells[..db.tiles().len()].iter().copied());
        super::packing::unpack(db.table(), index, md)
    }

    /// The dual lookup of a board (`board[cell]`: its label; the blank on `blank`).
    fn dual_value(&self, dual: &DualLookups, board: &[u8; 32], blank: usize) -> u32 {
        // In the dual, tile x is on the cell numbered by the label on cell x.
        let cell_of = |x: usize| board[x & 31] as usize;
        if blank == 0 {
            return self.dbs.iter().map(|db| self.value_at(db, cell_of)).sum();
        }
        let special = self.pattern_of[blank & 31] as usize;
        // Tile `blank` is on the cell numbered by the label on cell 0; its goal is cell 0.
        let mut value = self.manhattan[0][board[0] as usize & 31] as u32;
        for (p, db) in dual.whole.iter().enumerate() {
            value += if p == special {
                match &dual.without[blank & 31] {
                    Some(rest) => self.value_at(rest, cell_of),
                    None => 0,
                }
            } else {
                self.value_at(db, cell_of)
            };
        }
        value
    }

    /// The dual lookups of a board and, on square boards, of its reflection, stopping once one
    /// exceeds `limit`; 0 without dual tables.
    #[inline(always)]
    fn dual_values(&self, board: &[u8; 32], blank: usize, limit: u32) -> u32 {
        let Some(dual) = &self.dual else {
            return 0;
        };
        let value = self.dual_value(dual, board, blank);
        let Some(r) = &self.reflect else {
            return value;
        };
        if value > limit {
            return value;
        }
        // The same relabelling as for positions: the label on cell c moves to cell r(c) as r(label).
        let reflected = self.reflected_position(r, board);
        value.max(self.dual_value(dual, &reflected, r[blank & 31] as usize))
    }

    /// What [`super::SparseMax`] reads of this partition: per label its pattern and its digit's
    /// weight in the sparse layout, and the tables. None unless every table is sparse, there
    /// are at most [`super::sparse_max::PATTERNS`] of them and no dual lookups.
    pub(super) fn sparse_tables(&self) -> Option<SparseTables> {
        if !self.sparse || self.dual.is_some() || self.dbs.len() > super::sparse_max::PATTERNS {
            return None;
        }
        let mut pattern = [u8::MAX; 32];
        let mut weight = [0u32; 32];
        for label in 0..self.cells {
            let p = self.pattern_of[label] as usize;
            if let Some(lookup) = self.lookups.get(p) {
                pattern[label] = p as u8;
                weight[label] = lookup.multiplier[self.index_of[label] as usize & 7];
            }
        }
        let split = self.zero_aware.then(|| {
            (self.dbs.iter().zip(&self.lookups))
                .filter_map(|(db, l)| {
                    let digits = SparseDigits::new(&l.multiplier, db.tiles.len(), self.cells);
                    Some((Arc::clone(db.regions()?), digits))
                })
                .collect()
        });
        Some(SparseTables {
            split,
            pattern,
            weight,
            tables: self.lookups.iter().map(|l| Arc::clone(&l.packed)).collect(),
        })
    }

    /// The reflection about the main diagonal (cell to cell, which is label to label), on square
    /// boards with the reflected lookup.
    pub(super) fn reflection(&self) -> Option<&[u8; 32]> {
        self.reflect.as_ref()
    }

    /// This partition and those added to it, one heuristic each, if they are `N` in all.
    pub(super) fn split_partitions<const N: usize>(&self) -> Option<[PdbHeuristic; N]> {
        let mut first = self.clone();
        let also = std::mem::take(&mut first.also);
        let mut parts = Vec::with_capacity(N);
        parts.push(first);
        parts.extend(also);
        parts.try_into().ok()
    }

    /// `manhattan_table()[label][cell]`: the label's Manhattan distance from that cell home.
    pub(super) fn manhattan_table(&self) -> &[[u8; 32]; 32] {
        &self.manhattan
    }

    /// The board shape the tables are for.
    pub fn shape(&self) -> Shape {
        self.dbs[0].shape
    }

    /// Builds every table of a partition (see [`PatternDb::build`]).
    pub fn build(
        partition: &Partition,
        reflect: bool,
        mut progress: impl FnMut(usize, u64, u64),
    ) -> Result<PdbHeuristic, PdbError> {
        let dbs = partition
            .patterns
            .iter()
            .enumerate()
            .map(|(i, p)| PatternDb::build(partition.shape, p, |d, t| progress(i, d, t)))
            .collect::<Result<Vec<_>, _>>()?;
        PdbHeuristic::new(dbs, reflect)
    }

    /// The tables.
    pub fn tables(&self) -> &[PatternDb] {
        &self.dbs
    }

    /// The reflected board's `position[label]`: label `l` on cell `c` becomes label `r(l)` on
    /// cell `r(c)`. The map is its own transpose, so it reflects `board[cell]` arrays too.
    fn reflected_position(&self, r: &[u8; 32], position: &[u8; 32]) -> [u8; 32] {
        let mut out = [0u8; 32];
        for l in 0..self.cells {
            out[r[l] as usize] = r[position[l] as usize];
        }
        out
    }

    /// Each table's rank and entry for a board given as `position[label]`, and the pattern
    /// tiles' Manhattan distance.
    fn look_up_all(&self, position: &[u8; 32]) -> ([u32; 8], [u8; 8], u32) {
        let (mut ranks, mut excess, mut manhattan) = ([0u32; 8], [0u8; 8], 0u32);
        let blank = position[0] as usize;
        for (p, (db, lookup)) in self.dbs.iter().zip(&self.lookups).enumerate() {
            let cell_of = |t: &u8| position[*t as usize & 31];
            let (rank, entry) = match db.regions() {
                Some(regions) if db.is_split() => {
                    let rank = db.index(db.tiles.iter().map(cell_of)) as u32;
                    let set = (db.tiles.iter()).fold(0u32, |m, t| m | 1 << (cell_of(t) & 31));
                    let entry = split_excess(&lookup.packed, rank, regions, blank, || set);
                    (rank, entry)
                }
                Some(regions) => {
                    let mut cells = [0u8; 8];
                    for (c, t) in cells.iter_mut().zip(&db.tiles) {
                        *c = cell_of(t);
                    }
                    let rank = regions.index(&cells[..db.tiles.len().min(8)], blank);
                    (rank, lookup.excess(rank) as u8)
                }
                None => {
                    let rank = db.index(db.tiles.iter().map(cell_of)) as u32;
                    (rank, lookup.excess(rank) as u8)
                }
            };
            ranks[p] = rank;
            excess[p] = entry;
            for &t in &db.tiles {
                manhattan +=
                    self.manhattan[t as usize & 31][position[t as usize & 31] as usize & 31] as u32;
            }
        }
        (ranks, excess, manhattan)
    }
}

impl PdbHeuristic {
    /// [`Heuristic::evaluate`] of this partition's own lookups (regular, reflected, dual), not
    /// of the partitions added with [`PdbHeuristic::with_also`].
    pub(super) fn evaluate_own<const DUAL: bool>(&self, cells: &[u8]) -> (u32, PdbState) {
        let mut board = [0u8; 32];
        let mut position = [0u8; 32];
        for (cell, &label) in cells.iter().enumerate().take(self.cells) {
            board[cell] = label;
            position[label as usize & 31] = cell as u8;
        }
        let (rank, excess, manhattan) = self.look_up_all(&position);
        let mut state = PdbState {
            board,
            rank,
            reflected_rank: [0; 8],
            excess,
            reflected_excess: [0; 8],
            excess_sum: excess.iter().map(|&e| e as u32).sum(),
            reflected_excess_sum: 0,
            manhattan,
            reflected_manhattan: 0,
        };
        let mut h = state.value();
        if let Some(r) = &self.reflect {
            let (rank, excess, manhattan) =
                self.look_up_all(&self.reflected_position(r, &position));
            state.reflected_rank = rank;
            state.reflected_excess = excess;
            state.reflected_excess_sum = excess.iter().map(|&e| e as u32).sum();
            state.reflected_manhattan = manhattan;
            h = h.max(state.reflected_value());
        }
        if DUAL {
            h = h.max(self.dual_values(&board, position[0] as usize, u32::MAX));
        }
        (h, state)
    }

    /// [`Heuristic::after_move_within`] of this partition's own lookups, on `next` (a copy of
    /// the state before the move) in place; returns the value. In place, so that the one copy
    /// of the state per child is built where the caller keeps it.
    #[inline(always)]
    fn step_own<const DUAL: bool, const SPARSE: bool>(
        &self,
        next: &mut PdbState,
        label: u8,
        from: usize,
        to: usize,
        limit: u32,
    ) -> u32 {
        let dm = self.manhattan_change(label as usize & 31, from & 31, to & 31);
        if let Some((p, lookup)) = self.move_rank::<SPARSE>(next, label, from, to, dm) {
            next.read_entry(p, lookup);
        }
        let value = next.value();
        if value > limit {
            // Pruned whatever the other lookups say: skip them.
            return value;
        }
        if self.reflect.is_none() {
            if !DUAL {
                return value;
            }
            return value.max(self.dual_values(&next.board, from, limit));
        }
        if let Some((rp, lookup)) = self.move_reflected_rank::<SPARSE>(next, label, from, to, dm) {
            next.read_reflected_entry(rp, lookup);
        }
        let mut value = value.max(next.reflected_value());
        if DUAL && value <= limit && self.dual.is_some() {
            value = value.max(self.dual_values(&next.board, from, limit));
        }
        value
    }
}

impl PdbHeuristic {
    /// [`PdbHeuristic::step_own`] in the heuristic's one layout: the one test of it per move,
    /// for both `Heuristic` impls, and the one copy of the state.
    #[inline(always)]
    fn after_move_in<const DUAL: bool>(
        &self,
        state: &PdbState,
        label: u8,
        from: usize,
        to: usize,
        limit: u32,
    ) -> (u32, PdbState) {
        if self.zero_aware {
            // Evaluated afresh: the search carries zero-aware tables through `ZeroMax`.
            let mut board = state.board;
            board[to & 31] = label;
            board[from & 31] = 0;
            return self.evaluate_own::<DUAL>(&board[..self.cells]);
        }
        let mut next = *state;
        let value = match self.sparse {
            true => self.step_own::<DUAL, true>(&mut next, label, from, to, limit),
            false => self.step_own::<DUAL, false>(&mut next, label, from, to, limit),
        };
        (value, next)
    }

    /// The first half of a move for [`super::PdbMax`]: the board, the two changed ranks (regular
    /// and reflected) and the Manhattan sums after it, with the two entries asked of memory
    /// ahead of being read ([`PdbHeuristic::settle`] reads them), so that the misses of every
    /// partition under the max overlap instead of following one another. `dm` is
    /// [`PdbHeuristic::manhattan_change`] of the move, computed once for every partition (their Manhattan table is
    /// the shape's, and [`PdbHeuristic::with_also`] only adds partitions of the same shape).
    #[inline(always)]
    pub(super) fn advance(&self, next: &mut PdbState, label: u8, from: usize, to: usize, dm: u32) {
        match self.sparse {
            true => self.advance_in::<true>(next, label, from, to, dm),
            false => self.advance_in::<false>(next, label, from, to, dm),
        }
    }

    #[inline(always)]
    fn advance_in<const SPARSE: bool>(
        &self,
        next: &mut PdbState,
        label: u8,
        from: usize,
        to: usize,
        dm: u32,
    ) {
        if let Some((p, lookup)) = self.move_rank::<SPARSE>(next, label, from, to, dm) {
            super::memory::prefetch(&lookup.packed, next.rank[p] as usize >> 1);
        }
        if let Some((rp, lookup)) = self.move_reflected_rank::<SPARSE>(next, label, from, to, dm) {
            super::memory::prefetch(&lookup.packed, next.reflected_rank[rp] as usize >> 1);
        }
    }

    /// Moves the tile `label` from `from` to `to` on the carried board and changes the rank of
    /// its pattern and the Manhattan sum by what the move changes (`dm`, the move's
    /// [`PdbHeuristic::manhattan_change`]); returns that pattern (none for a tile outside every
    /// pattern). The entry is not read.
    #[inline(always)]
    fn move_rank<const SPARSE: bool>(
        &self,
        next: &mut PdbState,
        label: u8,
        from: usize,
        to: usize,
        dm: u32,
    ) -> Option<(usize, &Lookup)> {
        let (l, from, to) = (label as usize & 31, from & 31, to & 31);
        next.board[to] = label;
        // The blank (label 0 for these tables) takes the tile's old cell.
        next.board[from] = 0;
        let p = self.pattern_of[l] as usize & 7;
        let lookup = self.lookups.get(p)?;
        let j = self.index_of[l] as usize & 7;
        let m = lookup.multiplier[j];
        let change = rank_change::<SPARSE>(m, &self.passed[p][j], self.width, from, to, |c| {
            next.board[c & 31]
        });
        next.rank[p] = next.rank[p].wrapping_add(change);
        next.manhattan = next.manhattan.wrapping_add(dm);
        Some((p, lookup))
    }

    /// The same in the reflected board (after [`PdbHeuristic::move_rank`] moved the tile on the
    /// carried board): label r(l) moved from cell r(from) to cell r(to). None off square boards.
    #[inline(always)]
    fn move_reflected_rank<const SPARSE: bool>(
        &self,
        next: &mut PdbState,
        label: u8,
        from: usize,
        to: usize,
        dm: u32,
    ) -> Option<(usize, &Lookup)> {
        let r = self.reflect.as_ref()?;
        let (l, from, to) = (label as usize & 31, from & 31, to & 31);
        let rl = r[l] as usize & 31;
        let rp = self.pattern_of[rl] as usize & 7;
        let lookup = self.lookups.get(rp)?;
        let j = self.index_of[rl] as usize & 7;
        let change = rank_change::<SPARSE>(
            lookup.multiplier[j],
            &self.reflected_passed[rp][j],
            self.width,
            r[from] as usize,
            r[to] as usize,
            |c| next.board[r[c & 31] as usize & 31],
        );
        next.reflected_rank[rp] = next.reflected_rank[rp].wrapping_add(change);
        // A reflection keeps distances: the tile's Manhattan distance changes by the same.
        next.reflected_manhattan = next.reflected_manhattan.wrapping_add(dm);
        Some((rp, lookup))
    }

    /// What moving tile `l` from `from` to `to` adds to its Manhattan distance (mod 2^32).
    #[inline(always)]
    pub(super) fn manhattan_change(&self, l: usize, from: usize, to: usize) -> u32 {
        (self.manhattan[l][to] as u32).wrapping_sub(self.manhattan[l][from] as u32)
    }

    /// The second half of a move ([`PdbHeuristic::advance`]): reads the changed entries and
    /// returns the value, skipping the reflected entry once the regular one exceeds `limit`.
    #[inline(always)]
    pub(super) fn settle(&self, next: &mut PdbState, label: u8, limit: u32) -> u32 {
        let l = label as usize & 31;
        let p = self.pattern_of[l] as usize & 7;
        if let Some(lookup) = self.lookups.get(p) {
            next.read_entry(p, lookup);
        }
        let value = next.value();
        let Some(r) = &self.reflect else {
            return value;
        };
        if value > limit {
            return value;
        }
        let rp = self.pattern_of[r[l] as usize & 31] as usize & 7;
        if let Some(lookup) = self.lookups.get(rp) {
            next.read_reflected_entry(rp, lookup);
        }
        value.max(next.reflected_value())
    }
}

/// This partition's regular and reflected lookups only: the search's hot loop for one partition
/// (neither the dual lookups nor the partitions added with [`PdbHeuristic::with_also`] cost it
/// a branch; [`PdbAll`] and [`super::PdbMax`] serve those).
impl Heuristic for PdbHeuristic {
    type State = PdbState;

    fn evaluate(&self, cells: &[u8]) -> (u32, PdbState) {
        self.evaluate_own::<false>(cells)
    }

    #[inline(always)]
    fn after_move(
        &self,
        h: u32,
        state: &PdbState,
        label: u8,
        from: usize,
        to: usize,
        vertical: bool,
    ) -> (u32, PdbState) {
        self.after_move_within(h, state, label, from, to, vertical, u32::MAX)
    }

    #[inline(always)]
    fn after_move_within(
        &self,
        _: u32,
        state: &PdbState,
        label: u8,
        from: usize,
        to: usize,
        _: bool,
        limit: u32,
    ) -> (u32, PdbState) {
        self.after_move_in::<false>(state, label, from, to, limit)
    }
}

/// Every lookup a [`PdbHeuristic`] holds: its own, its dual lookups, and the partitions added
/// with [`PdbHeuristic::with_also`], whose values are computed afresh at each node (the search
/// carries up to four partitions move by move instead, [`super::PdbMax`], when none has dual
/// lookups).
#[derive(Clone, Debug)]
pub struct PdbAll(pub PdbHeuristic);

impl Heuristic for PdbAll {
    type State = PdbState;

    fn evaluate(&self, cells: &[u8]) -> (u32, PdbState) {
        let (h, state) = self.0.evaluate_own::<true>(cells);
        (h.max(self.0.also_values(&state.board, u32::MAX)), state)
    }

    #[inline(always)]
    fn after_move(
        &self,
        h: u32,
        state: &PdbState,
        label: u8,
        from: usize,
        to: usize,
        vertical: bool,
    ) -> (u32, PdbState) {
        self.after_move_within(h, state, label, from, to, vertical, u32::MAX)
    }

    #[inline(always)]
    fn after_move_within(
        &self,
        _: u32,
        state: &PdbState,
        label: u8,
        from: usize,
        to: usize,
        _: bool,
        limit: u32,
    ) -> (u32, PdbState) {
        let pdb = &self.0;
        let (value, next) = pdb.after_move_in::<true>(state, label, from, to, limit);
        if value > limit || pdb.also.is_empty() {
            return (value, next);
        }
        (value.max(pdb.also_values(&next.board, limit)), next)
    }
}
