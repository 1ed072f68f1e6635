//! Building a table: Korf & Felner's breadth-first search backwards from the goal over
//! (placement, blank region) states, one pass over the placements per depth on every core.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicUsize, Ordering};

use super::memory::table_memory;
use super::packing::{manhattan_table, nibble};
use super::{BlankGoal, PatternDb, PdbError, Regions};
use crate::board::step;
use crate::moves::Move;
use crate::shape::Shape;

/// A placement no depth has reached yet.
pub(super) const UNSEEN: u8 = u8::MAX;

impl PatternDb {
    /// Builds the table (Korf & Felner's construction): a breadth-first search backwards from
    /// the goal over states (placement of the pattern's tiles, blank cell), in which moving the
    /// blank through cells no pattern tile holds is free and sliding a pattern tile into the
    /// blank costs 1. The blank's free region is explored in one step (a flood fill over a cell
    /// bitmask), so states are really (placement, region). A placement's value is the cost at
    /// which it is first reached, i.e. the minimum over where the blank may be. Compared with
    /// letting pattern tiles step anywhere free, this respects that the blank cannot cross a
    /// wall of pattern tiles, which makes the tables markedly stronger.
    ///
    /// `progress(done, total)` is called once per depth with the placements settled so far.
    /// Each depth is one pass over the placements, shared by all available cores.
    pub fn build(
        shape: Shape,
        tiles: &[u8],
        progress: impl FnMut(u64, u64),
    ) -> Result<PatternDb, PdbError> {
        Self::build_for(shape, tiles, BlankGoal::Home, progress)
    }

    /// [`PatternDb::build`] towards the goal `blank` names: with [`BlankGoal::Free`] the
    /// search starts from the goal placement with the blank in every free cell at once.
    pub fn build_for(
        shape: Shape,
        tiles: &[u8],
        blank: BlankGoal,
        progress: impl FnMut(u64, u64),
    ) -> Result<PatternDb, PdbError> {
        Self::check_pattern(shape, tiles)?;
        Self::build_kind(shape, tiles, blank, None, progress)
    }

    /// The search of [`PatternDb::build`], keeping each region's value (`zero`: the maps of a
    /// zero-aware table) or the minimum over them (`None`).
    pub(super) fn build_kind(
        shape: Shape,
        tiles: &[u8],
        blank: BlankGoal,
        zero: Option<&Regions>,
        progress: impl FnMut(u64, u64),
    ) -> Result<PatternDb, PdbError> {
        if shape.cells() <= 16 {
            Self::build_with::<AtomicU16>(shape, tiles, blank, zero, progress)
        } else {
            Self::build_with::<AtomicU32>(shape, tiles, blank, zero, progress)
        }
    }

    /// The breadth-first search of [`PatternDb::build`], with one word of blank cells per
    /// placement (`u16` up to 16 cells, so the 7-8 tables need half the memory).
    ///
    /// Rather than queues of states, each depth is a bit per (placement, blank cell): `current`
    /// holds the states reached at this depth, `next` those found for the next one, `reached`
    /// those already expanded. A depth is one pass over `current` in placement order, split
    /// into blocks that the threads claim; only the children's bits are set at random places,
    /// with a load before the atomic OR so that most duplicates cost no locked instruction.
    /// Everything a placement owns (its `reached` word and table byte) is written only by the
    /// thread that claimed its block.
    ///
    /// With `zero`, a region's value is written when it is expanded (its first depth, since
    /// moves inside it are free) into the zero-aware table's packed entry, whose byte other
    /// threads may share (an atomic OR); no per-placement table is kept.
    fn build_with<W: CellWord>(
        shape: Shape,
        tiles: &[u8],
        blank: BlankGoal,
        zero: Option<&Regions>,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<PatternDb, PdbError> {
        let k = tiles.len();
        let placements = Self::entries(shape, k);
        let total = zero.map_or(placements, Regions::entries);
        let len = placements as usize;
        let per_placement = if zero.is_some() { 0 } else { len };
        let table: Vec<AtomicU8> = (0..per_placement).map(|_| AtomicU8::new(UNSEEN)).collect();
        let packed: Vec<AtomicU8> = match zero {
            Some(_) => (0..total.div_ceil(2)).map(|_| AtomicU8::new(0)).collect(),
            None => Vec::new(),
        };
        let manhattan = manhattan_table(shape);
        let reached: Vec<W> = (0..len).map(|_| W::default()).collect();
        let mut current: Vec<W> = (0..len).map(|_| W::default()).collect();
        let mut next: Vec<W> = (0..len).map(|_| W::default()).collect();
        let shell = PatternDb::new(shape, tiles, blank, Arc::from(Vec::new()));
        let geometry = Geometry::new(shape);
        let start = shell.rank(tiles.iter().copied());
        current[start].or(match blank {
            // Korf's goal: the blank on cell 0.
            BlankGoal::Home => 1,
            BlankGoal::Free => geometry.all & !tiles.iter().fold(0, |m, &t| m | 1 << t),
        });
        let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
        const BLOCK: usize = 1 << 14;
        let blocks = len.div_ceil(BLOCK);
        let mut settled = 0u64;
        for depth in 0u8.. {
            if depth == UNSEEN {
                return Err(PdbError::Pattern(format!(
                    "{shape} {tiles:?}: distances beyond {UNSEEN} moves"
                )));
            }
            let claimed = AtomicUsize::new(0);
            let (expanded, newly) = std::thread::scope(|scope| {
                let workers: Vec<_> = (0..threads)
                    .map(|_| {
                        let (table, reached, current, next) = (&table, &reached, &current, &next);
                        let (shell, geometry, claimed) = (&shell, &geometry, &claimed);
                        let (packed, manhattan) = (&packed, &manhattan);
                        scope.spawn(move || {
                            let mut cells = [0u8; 32];
                            let (mut expanded, mut newly) = (0u64, 0u64);
                            loop {
                                let block = claimed.fetch_add(1, Ordering::Relaxed);
                                if block >= blocks {
                                    break;
                                }
                                for rank in block * BLOCK..((block + 1) * BLOCK).min(len) {
                                    let mut fresh = current[rank].get() & !reached[rank].get();
                                    if fresh == 0 {
                                        continue;
                                    }
                                    shell.unrank(rank as u64, &mut cells);
                                    let occupied: u32 =
                                        cells[..k].iter().fold(0, |m, &c| m | 1 << c);
                                    let free = geometry.all & !occupied;
                                    if zero.is_none()
                                        && table[rank].load(Ordering::Relaxed) == UNSEEN
                                    {
                                        table[rank].store(depth, Ordering::Relaxed);
                                        newly += 1;
                                    }
                                    while fresh != 0 {
                                        let region =
                                            geometry.flood(fresh & fresh.wrapping_neg(), free);
                                        fresh &= !region;
                                        reached[rank].set(reached[rank].get() | region);
                                        expanded += 1;
                                        if let Some(regions) = zero {
                                            let at = region.trailing_zeros() as usize;
                                            let index = regions.index(&cells[..k], at) as usize;
                                            let md: u32 = (tiles.iter().zip(&cells[..k]))
                                                .map(|(&t, &c)| {
                                                    u32::from(
                                                        manhattan[t as usize & 31][c as usize & 31],
                                                    )
                                                })
                                                .sum();
                                            let n = nibble(depth, md) << ((index & 1) * 4);
                                            if let Some(byte) = packed.get(index >> 1) {
                                                byte.fetch_or(n, Ordering::Relaxed);
                                            }
                                            newly += 1;
                                        }
                                        // Slide any pattern tile next to the region into it.
                                        for i in 0..k {
                                            let from = cells[i];
                                            let mut targets =
                                                geometry.neighbours[from as usize] & region;
                                            while targets != 0 {
                                                let to = targets.trailing_zeros() as u8;
                                                targets &= targets - 1;
                                                cells[i] = to;
                                                let child = shell.rank(cells[..k].iter().copied());
                                                cells[i] = from;
                                                let bit = 1u32 << from;
                                                if next[child].get() & bit == 0 {
                                                    next[child].or(bit);
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                            (expanded, newly)
                        })
                    })
                    .collect();
                workers
                    .into_iter()
                    .map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                    .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
            });
            settled += newly;
            progress(settled, total);
            if expanded == 0 {
                break;
            }
            std::mem::swap(&mut current, &mut next);
            clear(&next, threads);
        }
        if let Some(regions) = zero {
            if settled != total {
                return Err(PdbError::Pattern(format!(
                    "{shape} {tiles:?}: {settled} of {total} zero-aware entries were reached"
                )));
            }
            let mut memory = table_memory(packed.len());
            if let Some(bytes) = Arc::get_mut(&mut memory) {
                for (b, a) in bytes.iter_mut().zip(packed) {
                    *b = a.into_inner();
                }
            }
            let mut db = PatternDb::new(shape, tiles, blank, memory);
            db.zero = Some(Regions::shared(shape, regions.tiles())?);
            return Ok(db);
        }
        let table: Vec<u8> = table.into_iter().map(AtomicU8::into_inner).collect();
        if let Some(rank) = table.iter().position(|&v| v == UNSEEN) {
            return Err(PdbError::Pattern(format!(
                "{shape} {tiles:?}: placement {rank} was never reached"
            )));
        }
        Ok(PatternDb::from_values(shape, tiles, blank, &table))
    }
}

/// A placement's word of blank cells, shared between the build threads.
trait CellWord: Default + Sync {
    fn get(&self) -> u32;
    fn set(&self, value: u32);
    fn or(&self, bits: u32);
}

impl CellWord for AtomicU16 {
    #[inline(always)]
    fn get(&self) -> u32 {
        self.load(Ordering::Relaxed) as u32
    }
    #[inline(always)]
    fn set(&self, value: u32) {
        self.store(value as u16, Ordering::Relaxed)
    }
    #[inline(always)]
    fn or(&self, bits: u32) {
        self.fetch_or(bits as u16, Ordering::Relaxed);
    }
}

impl CellWord for AtomicU32 {
    #[inline(always)]
    fn get(&self) -> u32 {
        self.load(Ordering::Relaxed)
    }
    #[inline(always)]
    fn set(&self, value: u32) {
        self.store(value, Ordering::Relaxed)
    }
    #[inline(always)]
    fn or(&self, bits: u32) {
        self.fetch_or(bits, Ordering::Relaxed);
    }
}

/// Zeroes `words` with `threads` threads.
fn clear<W: CellWord>(words: &[W], threads: usize) {
    let chunk = words.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for part in words.chunks(chunk) {
            scope.spawn(move || part.iter().for_each(|w| w.set(0)));
        }
    });
}

/// Cell bitmasks of a board: all cells, and each cell's neighbours.
pub(super) struct Geometry {
    pub(super) all: u32,
    neighbours: [u32; 32],
}

impl Geometry {
    pub(super) fn new(shape: Shape) -> Geometry {
        let mut neighbours = [0u32; 32];
        for (cell, mask) in neighbours.iter_mut().enumerate().take(shape.cells()) {
            for mv in Move::ALL {
                if let Some(to) = step(shape, cell, mv) {
                    *mask |= 1 << to;
                }
            }
        }
        Geometry {
            all: if shape.cells() == 32 {
                u32::MAX
            } else {
                (1 << shape.cells()) - 1
            },
            neighbours,
        }
    }

    /// The cells of `free` connected to `seed`.
    pub(super) fn flood(&self, seed: u32, free: u32) -> u32 {
        let mut region = seed & free;
        loop {
            let mut grown = region;
            let mut rest = region;
            while rest != 0 {
                let c = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                grown |= self.neighbours[c];
            }
            grown &= free;
            if grown == region {
                return region;
            }
            region = grown;
        }
    }
}
