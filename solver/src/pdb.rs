//! Additive disjoint pattern databases (Korf & Felner 2002, "Disjoint pattern database
//! heuristics").
//!
//! The tiles are split into disjoint *patterns*. For each pattern a table holds, for every
//! placement of that pattern's tiles, the fewest moves **of those tiles** that bring them all
//! home, the other tiles being ignored (the blank is wherever it is needed). Since each move
//! moves one tile of one pattern, the values of disjoint patterns add up to a lower bound: the
//! sum is admissible. It is not consistent: the tables know that the blank cannot cross a wall
//! of pattern tiles (see [`PatternDb::build`]), so one move can raise a value by 3 or more. On
//! square boards the board reflected about the main diagonal gives a second admissible value;
//! the heuristic is the larger of the two sums.
//!
//! The search carries each table's rank (its index into the table) from a node to its children
//! and changes it by what the move changes (see `rank_change`), so a lookup costs a few
//! additions and one memory read.
//!
//! Tables are built for the goal "blank on cell 0, tile k on cell k" (Korf's goal). Like every
//! heuristic here they see boards relabelled by their goal, so any goal whose blank belongs on
//! cell 0 uses them directly; the [`crate::Solver`] turns boards whose blank belongs on the last
//! cell by 180° to use them too.
//!
//! A placement of a pattern's `k` tiles on `n` cells is indexed densely by its rank as a
//! k-permutation of n (`n!/(n-k)!` entries). In memory an entry takes four bits: its distance
//! less the pattern tiles' Manhattan distance (which the search carries along anyway), halved,
//! capped at 15; the 7-8 tables take 289 MB instead of 577 MB, and none of the built-in
//! partitions has an entry at the cap. Files (format 3) hold the packed table as it lies in
//! memory, so loading one is a read and a checksum; format 2 files, one byte an entry, are still
//! read and packed as they come.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicUsize, Ordering};

use thiserror::Error;

use crate::board::step;
use crate::heuristic::Heuristic;
use crate::moves::Move;
use crate::shape::Shape;

const UNSEEN: u8 = u8::MAX;

/// `a! / (a-b)!`: arrangements of `b` things out of `a`.
fn arrangements(a: usize, b: usize) -> u64 {
    (a - b + 1..=a).map(|x| x as u64).product()
}

/// One pattern's table.
#[derive(Clone)]
pub struct PatternDb {
    shape: Shape,
    /// The goal cells (= labels) of the pattern's tiles, in index order.
    tiles: Vec<u8>,
    /// `multiplier[i]`: the weight of the i-th tile's digit in the rank.
    multiplier: Vec<u64>,
    /// Two entries a byte, the even rank's in the low half (see [`nibble`]).
    table: Arc<[u8]>,
}

impl std::fmt::Debug for PatternDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PatternDb({} {:?}, {} entries)",
            self.shape,
            self.tiles,
            self.table.len()
        )
    }
}

/// Why a pattern or partition was refused, or a stored table rejected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PdbError {
    #[error("invalid pattern: {0}")]
    Pattern(String),
    #[error("not a pattern database file (bad magic)")]
    BadMagic,
    #[error(
        "pattern database format version {found} is not supported (this build reads {oldest} to {newest}): rebuild it with `npuzzle pdb build`"
    )]
    Version {
        found: u32,
        oldest: u32,
        newest: u32,
    },
    #[error("pattern database file is truncated: {0}")]
    Truncated(String),
    #[error("pattern database checksum mismatch: the file is corrupt")]
    Checksum,
    #[error("pattern database is for {found}, not {expected}")]
    Mismatch { found: String, expected: String },
    #[error("pattern database could not be read: {0}")]
    Read(String),
}

impl PatternDb {
    fn check_pattern(shape: Shape, tiles: &[u8]) -> Result<(), PdbError> {
        let n = shape.cells();
        if tiles.is_empty() || tiles.len() >= n {
            return Err(PdbError::Pattern(format!(
                "a pattern needs 1 to {} tiles, got {}",
                n - 2,
                tiles.len()
            )));
        }
        let mut seen = 0u32;
        for &t in tiles {
            if t == 0 || t as usize >= n {
                return Err(PdbError::Pattern(format!(
                    "tile {t} is not a tile of a {shape} board (1 to {})",
                    n - 1
                )));
            }
            if seen & (1 << t) != 0 {
                return Err(PdbError::Pattern(format!("tile {t} appears twice")));
            }
            seen |= 1 << t;
        }
        Ok(())
    }

    fn new(shape: Shape, tiles: &[u8], table: Arc<[u8]>) -> PatternDb {
        let n = shape.cells();
        let k = tiles.len();
        let multiplier = (0..k).map(|i| arrangements(n - 1 - i, k - 1 - i)).collect();
        PatternDb {
            shape,
            tiles: tiles.to_vec(),
            multiplier,
            table,
        }
    }

    /// Entries of a table for `k` tiles on `shape`.
    pub fn entries(shape: Shape, k: usize) -> u64 {
        arrangements(shape.cells(), k)
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The pattern's tiles (their goal cells), in index order.
    pub fn tiles(&self) -> &[u8] {
        &self.tiles
    }

    /// The packed table: two entries a byte (each entry's distance less the pattern tiles'
    /// Manhattan distance, halved, capped at 15), the even rank's in the low half.
    pub fn table(&self) -> &[u8] {
        &self.table
    }

    /// The rank of a placement: `cells[i]` is the cell of the i-th pattern tile.
    #[inline(always)]
    fn rank(&self, cells: impl Iterator<Item = u8>) -> usize {
        let mut used = 0u32;
        let mut rank = 0u64;
        for (i, q) in cells.enumerate() {
            let q = q as u32 & 31;
            let smaller = (used & ((1u32 << q) - 1)).count_ones();
            rank += (q - smaller) as u64 * self.multiplier[i];
            used |= 1 << q;
        }
        rank as usize
    }

    /// The placement of a rank (inverse of [`PatternDb::rank`]).
    fn unrank(&self, mut rank: u64, out: &mut [u8]) {
        let mut used = 0u32;
        for (i, slot) in out.iter_mut().enumerate().take(self.tiles.len()) {
            let m = self.multiplier[i];
            let d = (rank / m) as u32;
            rank %= m;
            // The d-th free cell.
            let mut free = !used;
            for _ in 0..d {
                free &= free - 1;
            }
            let q = free.trailing_zeros();
            *slot = q as u8;
            used |= 1 << q;
        }
    }

    /// The value for a board given as `position[label]` (the cell of each label).
    #[inline(always)]
    pub fn lookup(&self, position: &[u8]) -> u8 {
        let r = self.rank(self.tiles.iter().map(|&t| position[t as usize & 31]));
        let md: u32 = self
            .tiles
            .iter()
            .map(|&t| manhattan(self.shape, t as usize, position[t as usize & 31] as usize))
            .sum();
        unpack(&self.table, r, md) as u8
    }

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
        Self::check_pattern(shape, tiles)?;
        if shape.cells() <= 16 {
            Self::build_with::<AtomicU16>(shape, tiles, progress)
        } else {
            Self::build_with::<AtomicU32>(shape, tiles, progress)
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
    fn build_with<W: CellWord>(
        shape: Shape,
        tiles: &[u8],
        mut progress: impl FnMut(u64, u64),
    ) -> Result<PatternDb, PdbError> {
        let k = tiles.len();
        let total = Self::entries(shape, k);
        let len = total as usize;
        let table: Vec<AtomicU8> = (0..len).map(|_| AtomicU8::new(UNSEEN)).collect();
        let reached: Vec<W> = (0..len).map(|_| W::default()).collect();
        let mut current: Vec<W> = (0..len).map(|_| W::default()).collect();
        let mut next: Vec<W> = (0..len).map(|_| W::default()).collect();
        let shell = PatternDb::new(shape, tiles, Arc::from(Vec::new()));
        let geometry = Geometry::new(shape);
        let start = shell.rank(tiles.iter().copied());
        // Korf's goal: the blank on cell 0.
        current[start].or(1);
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
                                    if table[rank].load(Ordering::Relaxed) == UNSEEN {
                                        table[rank].store(depth, Ordering::Relaxed);
                                        newly += 1;
                                    }
                                    while fresh != 0 {
                                        let region =
                                            geometry.flood(fresh & fresh.wrapping_neg(), free);
                                        fresh &= !region;
                                        reached[rank].set(reached[rank].get() | region);
                                        expanded += 1;
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
        let table: Vec<u8> = table.into_iter().map(AtomicU8::into_inner).collect();
        if let Some(rank) = table.iter().position(|&v| v == UNSEEN) {
            return Err(PdbError::Pattern(format!(
                "{shape} {tiles:?}: placement {rank} was never reached"
            )));
        }
        Ok(PatternDb::from_values(shape, tiles, &table))
    }

    /// Serialises the table in the current format ([`FORMAT`]): a header (magic, version,
    /// shape, tiles, entry count, checksum of what follows), then the packed table as it lies in
    /// memory, two entries a byte, so that loading it is one read and a checksum.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.serialise(FORMAT, &self.table)
    }

    /// Serialises the table in format 2, one byte an entry (its exact value), which builds
    /// before format 3 read; loading it packs every entry, which takes seconds for 7-8.
    pub fn to_bytes_format_2(&self) -> Vec<u8> {
        self.serialise(2, &self.values())
    }

    fn serialise(&self, version: u32, body: &[u8]) -> Vec<u8> {
        let count = Self::entries(self.shape, self.tiles.len());
        let mut out = Vec::with_capacity(body.len() + 64);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&version.to_le_bytes());
        out.push(self.shape.width() as u8);
        out.push(self.shape.height() as u8);
        out.push(self.tiles.len() as u8);
        out.extend_from_slice(&self.tiles);
        out.extend_from_slice(&count.to_le_bytes());
        out.extend_from_slice(&checksum(body).to_le_bytes());
        out.extend_from_slice(body);
        out
    }

    /// The format version of a table file's header (`None` if it is not a table file).
    pub fn format_of(mut r: impl std::io::Read) -> Option<u32> {
        let mut head = [0u8; MAGIC.len() + 4];
        r.read_exact(&mut head).ok()?;
        let (magic, version) = head.split_at(MAGIC.len());
        (magic == MAGIC)
            .then(|| u32::from_le_bytes([version[0], version[1], version[2], version[3]]))
    }

    /// Reads a table written by [`PatternDb::to_bytes`], verifying everything: header, size,
    /// checksum, and that it is the table for `shape` and `tiles`.
    pub fn from_bytes(bytes: &[u8], shape: Shape, tiles: &[u8]) -> Result<PatternDb, PdbError> {
        Self::read_from(bytes, shape, tiles)
    }

    /// [`PatternDb::from_bytes`] from a reader (a file): the table is read straight into the
    /// memory it is searched from, so that loading a table holds one copy of it, not two.
    pub fn read_from(
        mut r: impl std::io::Read,
        shape: Shape,
        tiles: &[u8],
    ) -> Result<PatternDb, PdbError> {
        fn fill(r: &mut impl std::io::Read, buf: &mut [u8], what: &str) -> Result<(), PdbError> {
            r.read_exact(buf).map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => {
                    PdbError::Truncated(format!("no room for the {what}"))
                }
                _ => PdbError::Read(e.to_string()),
            })
        }
        let mut magic = [0u8; MAGIC.len()];
        fill(&mut r, &mut magic, "magic")?;
        if &magic != MAGIC {
            return Err(PdbError::BadMagic);
        }
        let mut word = [0u8; 4];
        fill(&mut r, &mut word, "version")?;
        let version = u32::from_le_bytes(word);
        if !(OLDEST_FORMAT..=FORMAT).contains(&version) {
            return Err(PdbError::Version {
                found: version,
                oldest: OLDEST_FORMAT,
                newest: FORMAT,
            });
        }
        let mut dims = [0u8; 3];
        fill(&mut r, &mut dims, "shape")?;
        let (w, h, k) = (dims[0] as usize, dims[1] as usize, dims[2] as usize);
        let mut stored_tiles = vec![0u8; k];
        fill(&mut r, &mut stored_tiles, "pattern")?;
        let found = format!("{w}x{h} {stored_tiles:?}");
        let expected = format!("{shape} {tiles:?}");
        if (w, h) != (shape.width(), shape.height()) || stored_tiles != tiles {
            return Err(PdbError::Mismatch { found, expected });
        }
        let mut long = [0u8; 8];
        fill(&mut r, &mut long, "entry count")?;
        let count = u64::from_le_bytes(long);
        if count != Self::entries(shape, k) {
            return Err(PdbError::Mismatch {
                found: format!("{found} with {count} entries"),
                expected,
            });
        }
        fill(&mut r, &mut long, "checksum")?;
        let sum = u64::from_le_bytes(long);
        let mut db = PatternDb::new(shape, tiles, Arc::from(Vec::new()));
        let packed_len = count.div_ceil(2) as usize;
        // Allocated where it stays: an Arc made from a Vec would copy it.
        let mut table = table_memory(packed_len);
        let Some(packed) = Arc::get_mut(&mut table) else {
            return Err(PdbError::Read("the table buffer is shared".into()));
        };
        if version == FORMAT {
            // The packed table itself: read in place.
            fill(&mut r, packed, "table")?;
            expect_end(&mut r)?;
            if checksum(packed) != sum {
                return Err(PdbError::Checksum);
            }
            db.table = table;
            return Ok(db);
        }
        // Format 2: one byte an entry, packed as they are read (the count is that of the expected pattern,
        // so a file cannot make the table larger): the process never holds them unpacked.
        let manhattan = manhattan_table(shape);
        let mut odometer = Odometer::at(&db, &manhattan, 0);
        let mut hash = Checksum::new();
        let mut chunk = vec![0u8; 1 << 20];
        let mut rank = 0usize;
        while (rank as u64) < count {
            let n = chunk.len().min(count as usize - rank);
            fill(&mut r, &mut chunk[..n], "table")?;
            hash.update(&chunk[..n]);
            for &v in &chunk[..n] {
                packed[rank >> 1] |= nibble(v, odometer.md) << ((rank & 1) * 4);
                odometer.step();
                rank += 1;
            }
        }
        expect_end(&mut r)?;
        if hash.finish(count) != sum {
            return Err(PdbError::Checksum);
        }
        db.table = table;
        Ok(db)
    }
}

/// Refuses a reader that has bytes left after the table.
fn expect_end(r: &mut impl std::io::Read) -> Result<(), PdbError> {
    let extra =
        std::io::copy(r, &mut std::io::sink()).map_err(|e| PdbError::Read(e.to_string()))?;
    if extra > 0 {
        return Err(PdbError::Truncated(format!(
            "{extra} bytes after the table"
        )));
    }
    Ok(())
}

const MAGIC: &[u8; 8] = b"NPZPDB\0\x01";
/// The format [`PatternDb::to_bytes`] writes. Version 3: the packed table (four bits an entry,
/// as in memory). Version 2: one byte an entry, packed as it is read. Both hold tables built
/// with the blank's region (version 1 let tiles step anywhere free, and is refused).
pub const FORMAT: u32 = 3;
/// The oldest format read.
const OLDEST_FORMAT: u32 = 2;

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
struct Geometry {
    all: u32,
    neighbours: [u32; 32],
}

impl Geometry {
    fn new(shape: Shape) -> Geometry {
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
    fn flood(&self, seed: u32, free: u32) -> u32 {
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

/// FNV-1a over 8-byte words: fast, and any flipped byte changes it.
fn checksum(data: &[u8]) -> u64 {
    let mut hash = Checksum::new();
    hash.update(data);
    hash.finish(data.len() as u64)
}

/// [`checksum`] fed in pieces: whole 8-byte words, then the last few bytes one by one.
struct Checksum {
    h: u64,
    /// Bytes of an unfinished word.
    pending: Vec<u8>,
}

impl Checksum {
    fn new() -> Checksum {
        Checksum {
            h: 0xcbf2_9ce4_8422_2325,
            pending: Vec::with_capacity(8),
        }
    }

    fn update(&mut self, mut data: &[u8]) {
        while !self.pending.is_empty() && !data.is_empty() {
            self.pending.push(data[0]);
            data = &data[1..];
            if self.pending.len() == 8 {
                let w = u64::from_le_bytes(self.pending[..8].try_into().unwrap_or([0; 8]));
                self.h = (self.h ^ w).wrapping_mul(0x0000_0100_0000_01b3);
                self.pending.clear();
            }
        }
        let mut chunks = data.chunks_exact(8);
        for c in chunks.by_ref() {
            let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            self.h = (self.h ^ w).wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.pending.extend_from_slice(chunks.remainder());
    }

    fn finish(&self, len: u64) -> u64 {
        let mut h = self.h;
        for &b in &self.pending {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
        h ^ len
    }
}

/// A named split of a board's tiles into patterns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    pub name: String,
    pub shape: Shape,
    pub patterns: Vec<Vec<u8>>,
}

impl Partition {
    /// The built-in partitions: `4x4` `5-5-5`, `6-6-3` and `7-8`, `5x5` `6-6-6-6`, and small ones for
    /// tests (`3x3` `4-4`, `2x4` / `4x2` `3-4`). All for the blank on cell 0.
    pub fn named(shape: Shape, name: &str) -> Result<Partition, PdbError> {
        let (w, h) = (shape.width(), shape.height());
        let patterns: Vec<Vec<u8>> = match ((w, h), name) {
            ((4, 4), "7-8") => vec![(1..=7).collect(), (8..=15).collect()],
            // Column-major groups. Of the layouts tried (row-major groups, blocks), these
            // generate the fewest nodes on Korf's 100 with the reflected lookup:
            // 6-6-3 406 k per instance (row-major: 898 k), 5-5-5 1.12 M (blocks: 3.73 M).
            ((4, 4), "6-6-3") => vec![
                vec![1, 4, 5, 8, 9, 12],
                vec![2, 3, 6, 7, 10, 11],
                vec![13, 14, 15],
            ],
            ((4, 4), "5-5-5") => vec![
                vec![1, 4, 5, 8, 9],
                vec![2, 3, 6, 7, 11],
                vec![10, 12, 13, 14, 15],
            ],
            ((5, 5), "6-6-6-6") => vec![
                vec![1, 2, 5, 6, 7, 10],
                vec![3, 4, 8, 9, 13, 14],
                vec![11, 12, 15, 16, 17, 20],
                vec![18, 19, 21, 22, 23, 24],
            ],
            ((3, 3), "4-4") => vec![vec![1, 2, 3, 4], vec![5, 6, 7, 8]],
            ((2, 4), "3-4") | ((4, 2), "3-4") => vec![vec![1, 2, 3], vec![4, 5, 6, 7]],
            _ => {
                return Err(PdbError::Pattern(format!(
                    "no partition {name:?} for {shape} (known: 4x4 5-5-5, 6-6-3 and 7-8, 5x5 6-6-6-6, 3x3 4-4, 2x4 and 4x2 3-4)"
                )));
            }
        };
        Ok(Partition {
            name: name.to_string(),
            shape,
            patterns,
        })
    }
}

/// The moves from `cell` to the goal cell of `label` (the label itself), ignoring every other
/// tile.
fn manhattan(shape: Shape, label: usize, cell: usize) -> u32 {
    (shape.row(label).abs_diff(shape.row(cell)) + shape.col(label).abs_diff(shape.col(cell))) as u32
}

/// `manhattan[label][cell]`: [`manhattan`] for every label and cell, for the hot loops.
fn manhattan_table(shape: Shape) -> [[u8; 32]; 32] {
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
fn unpack(table: &[u8], rank: usize, md: u32) -> u32 {
    let byte = table.get(rank >> 1).copied().unwrap_or(0);
    md + 2 * ((byte >> ((rank & 1) * 4)) & 15) as u32
}

/// The placements of a pattern in rank order, with the pattern tiles' summed Manhattan
/// distance: stepped like an odometer (the last tile moves on to the next free cell; when it
/// runs out, the one before moves on and the rest restart from their first free cells), so
/// that a step costs a few instructions, not an unrank.
struct Odometer<'a> {
    db: &'a PatternDb,
    manhattan: &'a [[u8; 32]; 32],
    all: u32,
    cells: [u8; 32],
    /// `before[i]`: the cells of tiles `0..i`.
    before: [u32; 9],
    md: u32,
}

impl<'a> Odometer<'a> {
    fn at(db: &'a PatternDb, manhattan: &'a [[u8; 32]; 32], rank: u64) -> Odometer<'a> {
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
    fn step(&mut self) {
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

/// A zeroed table of `len` bytes, for entries read at random all over it. On Linux the kernel is
/// asked to back it with huge pages (2 MB) before it is touched: a lookup then needs one of a
/// few hundred TLB entries instead of a page walk (hard80 #1-4 with 7-8: 4.8-4.9 s against
/// 5.5-5.8 s with 4 KB pages).
fn table_memory(len: usize) -> Arc<[u8]> {
    let mut table: Arc<[std::mem::MaybeUninit<u8>]> = Arc::new_uninit_slice(len);
    let Some(bytes) = Arc::get_mut(&mut table) else {
        // A fresh Arc is never shared; were it, plain zeroed memory does as well.
        return std::iter::repeat_n(0u8, len).collect();
    };
    advise_huge_pages(bytes.as_mut_ptr().cast(), len);
    for b in bytes.iter_mut() {
        b.write(0);
    }
    // SAFETY: every byte was written just above.
    unsafe { table.assume_init() }
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(start: *mut u8, len: usize) {
    const PAGE: usize = 4096;
    let from = (start as usize).next_multiple_of(PAGE);
    let to = (start as usize + len) & !(PAGE - 1);
    if to > from {
        // SAFETY: madvise only advises the kernel on how to back the range, which is
        // page-aligned and lies inside the allocation; its failure changes nothing.
        unsafe {
            libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_start: *mut u8, _len: usize) {}

/// An entry's nibble: its distance less the Manhattan distance (always even and not negative
/// for a table built here, since every move of a pattern tile changes that tile's Manhattan
/// distance by one), halved, and capped at 15 (a capped entry still gives a lower bound).
#[inline(always)]
fn nibble(value: u8, md: u32) -> u8 {
    ((value as u32).saturating_sub(md) / 2).min(15) as u8
}

impl PatternDb {
    /// A table from its exact values (one byte a placement, in rank order), packed two
    /// entries a byte (see [`nibble`]), on every core.
    fn from_values(shape: Shape, tiles: &[u8], values: &[u8]) -> PatternDb {
        let mut db = PatternDb::new(shape, tiles, Arc::from(Vec::new()));
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

    /// Every entry's value, in rank order (what the table file holds).
    pub fn values(&self) -> Vec<u8> {
        let manhattan = manhattan_table(self.shape);
        let total = Self::entries(self.shape, self.tiles.len());
        let mut odometer = Odometer::at(self, &manhattan, 0);
        let mut out = Vec::with_capacity(total as usize);
        for rank in 0..total as usize {
            out.push(unpack(&self.table, rank, odometer.md) as u8);
            odometer.step();
        }
        out
    }
}

/// What the hot loop reads of one table: the digits' weights as fixed `u32`s, and the entries.
#[derive(Clone, Debug)]
struct Lookup {
    /// `multiplier[i]`: the weight of tile i's digit in the rank.
    multiplier: [u32; 8],
    /// Two entries a byte ([`PatternDb::table`]).
    packed: Arc<[u8]>,
}

impl Lookup {
    fn new(db: &PatternDb) -> Lookup {
        let mut multiplier = [0; 8];
        for (m, &wide) in multiplier.iter_mut().zip(&db.multiplier) {
            *m = wide as u32;
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
        let byte = self.packed.get(rank as usize >> 1).copied().unwrap_or(0);
        ((byte >> ((rank & 1) * 4)) & 15) as u32
    }
}

/// How a pattern's rank changes when its tile `j` slides from cell `from` to the neighbouring
/// cell `to`, on a board `width` cells wide (the board or its reflection).
///
/// Tile j's digit counts the free cells below its own among those its earlier tiles leave;
/// a later tile's digit counts whether tile j lies below it. A move sideways passes no cell,
/// so only tile j's digit changes, by one. A move up or down passes the `width - 1` cells in
/// between: tile j's digit changes by `width` less the earlier tiles it passes, and each later
/// tile it passes gains or loses one. `passed[label]` holds what passing the tile with that
/// label adds (see [`PdbHeuristic::new`]); `label_at(c)` reads the label on cell `c`. The rank
/// is kept modulo 2^32 (every table has fewer entries), so the sums may wrap.
#[inline(always)]
fn rank_change(
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
        let low = from.min(to);
        for c in low + 1..low + width {
            change = change.wrapping_add(passed[label_at(c) as usize & 31]);
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
/// move changes ([`rank_change`]): a lookup costs a few additions, not a rank computed over
/// every tile of the pattern.
#[derive(Clone, Debug)]
pub struct PdbHeuristic {
    dbs: Vec<PatternDb>,
    lookups: Vec<Lookup>,
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
}

/// What the PDB heuristic carries per node: the board, and for each table its rank and entry
/// for the board and for its reflection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PdbState {
    /// `board[cell]`: the label on each cell.
    board: [u8; 32],
    rank: [u32; 8],
    reflected_rank: [u32; 8],
    /// Each table's entry: its value less its tiles' Manhattan distance, halved ([`nibble`]).
    excess: [u8; 8],
    reflected_excess: [u8; 8],
    /// Sums of `excess` and of `reflected_excess`.
    excess_sum: u32,
    reflected_excess_sum: u32,
    /// The pattern tiles' summed Manhattan distance, in the board and in its reflection.
    manhattan: u32,
    reflected_manhattan: u32,
}

impl PdbState {
    fn value(&self) -> u32 {
        self.manhattan + 2 * self.excess_sum
    }

    fn reflected_value(&self) -> u32 {
        self.reflected_manhattan + 2 * self.reflected_excess_sum
    }
}

impl PdbHeuristic {
    /// The heuristic of `dbs`, which must be disjoint patterns of one shape (at most 8).
    pub fn new(dbs: Vec<PatternDb>, reflect: bool) -> Result<PdbHeuristic, PdbError> {
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
        let lookups: Vec<Lookup> = dbs.iter().map(Lookup::new).collect();
        let mut passed = Box::new([[[0u32; 32]; 8]; 8]);
        for (p, (db, lookup)) in dbs.iter().zip(&lookups).enumerate() {
            for j in 0..db.tiles.len() {
                for (i, &label) in db.tiles.iter().enumerate() {
                    passed[p][j][label as usize & 31] = match i.cmp(&j) {
                        std::cmp::Ordering::Less => lookup.multiplier[j].wrapping_neg(),
                        std::cmp::Ordering::Greater => lookup.multiplier[i],
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
            lookups,
            cells: shape.cells(),
            width: shape.width(),
            pattern_of,
            index_of,
            reflect,
            manhattan,
            passed,
            reflected_passed,
        })
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
    /// cell `r(c)`.
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
        for (p, (db, lookup)) in self.dbs.iter().zip(&self.lookups).enumerate() {
            let rank = db.rank(db.tiles.iter().map(|&t| position[t as usize & 31])) as u32;
            ranks[p] = rank;
            excess[p] = lookup.excess(rank) as u8;
            for &t in &db.tiles {
                manhattan +=
                    self.manhattan[t as usize & 31][position[t as usize & 31] as usize & 31] as u32;
            }
        }
        (ranks, excess, manhattan)
    }
}

impl Heuristic for PdbHeuristic {
    type State = PdbState;

    fn evaluate(&self, cells: &[u8]) -> (u32, PdbState) {
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
        (h, state)
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
        let mut next = *state;
        let (l, from, to) = (label as usize & 31, from & 31, to & 31);
        next.board[to] = label;
        // The blank (label 0 for these tables) takes the tile's old cell.
        next.board[from] = 0;
        // Only the moved tile's pattern changes. The tile's Manhattan distance changes by the
        // same in the board and in its reflection (which keeps distances).
        let md_change = (self.manhattan[l][to] as u32).wrapping_sub(self.manhattan[l][from] as u32);
        let p = self.pattern_of[l] as usize & 7;
        if let Some(lookup) = self.lookups.get(p) {
            let j = self.index_of[l] as usize & 7;
            let change = rank_change(
                lookup.multiplier[j],
                &self.passed[p][j],
                self.width,
                from,
                to,
                |c| next.board[c & 31],
            );
            next.rank[p] = next.rank[p].wrapping_add(change);
            let e = lookup.excess(next.rank[p]);
            next.excess_sum = next.excess_sum + e - next.excess[p] as u32;
            next.excess[p] = e as u8;
            next.manhattan = next.manhattan.wrapping_add(md_change);
        }
        let value = next.value();
        let Some(r) = &self.reflect else {
            return (value, next);
        };
        if value > limit {
            // Pruned whatever the reflection says: skip its lookup.
            return (value, next);
        }
        // In the reflected board, label r(l) moved from cell r(from) to cell r(to).
        let rl = r[l] as usize & 31;
        let rp = self.pattern_of[rl] as usize & 7;
        if let Some(lookup) = self.lookups.get(rp) {
            let j = self.index_of[rl] as usize & 7;
            let change = rank_change(
                lookup.multiplier[j],
                &self.reflected_passed[rp][j],
                self.width,
                r[from] as usize,
                r[to] as usize,
                |c| next.board[r[c & 31] as usize & 31],
            );
            next.reflected_rank[rp] = next.reflected_rank[rp].wrapping_add(change);
            let e = lookup.excess(next.reflected_rank[rp]);
            next.reflected_excess_sum =
                next.reflected_excess_sum + e - next.reflected_excess[rp] as u32;
            next.reflected_excess[rp] = e as u8;
            next.reflected_manhattan = next.reflected_manhattan.wrapping_add(md_change);
        }
        (value.max(next.reflected_value()), next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_and_unrank_are_inverse() {
        let shape = Shape::new(3, 3).unwrap();
        let db = PatternDb::new(shape, &[1, 2, 3], Arc::from(Vec::new()));
        let total = PatternDb::entries(shape, 3);
        assert_eq!(total, 9 * 8 * 7);
        let mut cells = [0u8; 32];
        for r in 0..total {
            db.unrank(r, &mut cells);
            assert_eq!(db.rank(cells[..3].iter().copied()) as u64, r);
        }
    }

    #[test]
    fn every_placement_is_reached_and_the_goal_is_zero() {
        let shape = Shape::new(3, 3).unwrap();
        let db = PatternDb::build(shape, &[1, 2, 3, 4], |_, _| {}).unwrap();
        assert!(db.values().iter().all(|&v| v < UNSEEN));
        let mut goal = [0u8; 32];
        for (i, g) in goal.iter_mut().enumerate() {
            *g = i as u8;
        }
        assert_eq!(db.lookup(&goal), 0);
    }

    /// The plainest possible construction: a 0-1 breadth-first search over every (placement,
    /// blank cell) state, one blank step at a time (free into a cell no pattern tile holds, 1
    /// for sliding a pattern tile), then the minimum over the blank.
    fn reference_table(shape: Shape, tiles: &[u8]) -> Vec<u8> {
        let n = shape.cells();
        let k = tiles.len();
        let shell = PatternDb::new(shape, tiles, Arc::from(Vec::new()));
        let total = PatternDb::entries(shape, k) as usize;
        let mut dist = vec![u8::MAX; total * n];
        let start = shell.rank(tiles.iter().copied()) * n;
        dist[start] = 0;
        let mut deque = std::collections::VecDeque::from([start]);
        let mut cells = [0u8; 32];
        while let Some(state) = deque.pop_front() {
            let (rank, blank) = (state / n, state % n);
            let d = dist[state];
            shell.unrank(rank as u64, &mut cells);
            for mv in Move::ALL {
                let Some(to) = step(shape, blank, mv) else {
                    continue;
                };
                let (child, cost) = match cells[..k].iter().position(|&c| c as usize == to) {
                    Some(i) => {
                        let mut moved = cells;
                        moved[i] = blank as u8;
                        (shell.rank(moved[..k].iter().copied()) * n + to, 1)
                    }
                    None => (rank * n + to, 0),
                };
                if d + cost < dist[child] {
                    dist[child] = d + cost;
                    if cost == 0 {
                        deque.push_front(child);
                    } else {
                        deque.push_back(child);
                    }
                }
            }
        }
        dist.chunks(n).map(|c| *c.iter().min().unwrap()).collect()
    }

    /// The odometer's Manhattan distances, rank after rank, are those of each placement
    /// unranked and summed from scratch.
    #[test]
    fn the_odometer_walks_every_placement_in_rank_order() {
        for (w, h, tiles) in [
            (3, 3, vec![1, 2, 3, 4]),
            (2, 4, vec![4, 5, 6, 7]),
            (4, 4, vec![13, 14, 15]),
            (5, 5, vec![18, 19, 24]),
        ] {
            let shape = Shape::new(w, h).unwrap();
            let db = PatternDb::new(shape, &tiles, Arc::from(Vec::new()));
            let manhattan = manhattan_table(shape);
            let total = PatternDb::entries(shape, tiles.len());
            for start in [0, total / 3, total - 1] {
                let mut odometer = Odometer::at(&db, &manhattan, start);
                let mut cells = [0u8; 32];
                for rank in start..total {
                    db.unrank(rank, &mut cells);
                    assert_eq!(&odometer.cells[..tiles.len()], &cells[..tiles.len()]);
                    let md: u32 = (0..tiles.len())
                        .map(|i| manhattan[tiles[i] as usize][cells[i] as usize] as u32)
                        .sum();
                    assert_eq!(odometer.md, md, "{shape} {tiles:?} rank {rank}");
                    odometer.step();
                }
            }
        }
    }

    /// Packing keeps every value up to 30 above the Manhattan distance exactly, and any larger
    /// one as a lower bound.
    #[test]
    fn packed_values_are_exact_or_a_lower_bound() {
        for md in 0..40u32 {
            for excess in (0..=60u32).step_by(2) {
                let v = (md + excess).min(254) as u8;
                let back = md + 2 * nibble(v, md) as u32;
                if excess <= 30 && md + excess <= 254 {
                    assert_eq!(back, v as u32);
                } else {
                    assert!(back <= v as u32);
                }
            }
        }
    }

    #[test]
    fn built_tables_equal_a_plain_zero_one_search() {
        for (w, h, tiles) in [
            (3, 3, vec![1, 2, 3, 4]),
            (3, 3, vec![5, 6, 7, 8]),
            (3, 3, vec![2, 4, 8]),
            (2, 4, vec![4, 5, 6, 7]),
            (4, 2, vec![1, 2, 3]),
            (4, 4, vec![13, 14, 15]),
            (5, 5, vec![18, 19, 24]),
        ] {
            let shape = Shape::new(w, h).unwrap();
            let built = PatternDb::build(shape, &tiles, |_, _| {}).unwrap();
            assert_eq!(
                built.values(),
                reference_table(shape, &tiles),
                "{shape} {tiles:?}"
            );
        }
    }

    #[test]
    fn round_trip_and_corruption_is_detected() {
        let shape = Shape::new(3, 3).unwrap();
        let db = PatternDb::build(shape, &[5, 6, 7], |_, _| {}).unwrap();
        let bytes = db.to_bytes();
        assert_eq!(PatternDb::format_of(&bytes[..]), Some(FORMAT));
        // The packed table follows the header as it lies in memory.
        assert_eq!(&bytes[bytes.len() - db.table().len()..], db.table());
        let back = PatternDb::from_bytes(&bytes, shape, &[5, 6, 7]).unwrap();
        assert_eq!(back.table(), db.table());
        assert_eq!(back.values(), db.values());
        let mut corrupt = bytes.clone();
        let last = corrupt.len() - 10;
        corrupt[last] ^= 1;
        assert_eq!(
            PatternDb::from_bytes(&corrupt, shape, &[5, 6, 7]).unwrap_err(),
            PdbError::Checksum
        );
        assert!(matches!(
            PatternDb::from_bytes(&bytes[..bytes.len() - 1], shape, &[5, 6, 7]),
            Err(PdbError::Truncated(_))
        ));
        assert!(matches!(
            PatternDb::from_bytes(&bytes, shape, &[5, 6, 8]),
            Err(PdbError::Mismatch { .. })
        ));
        assert_eq!(
            PatternDb::from_bytes(b"nonsense", shape, &[5, 6, 7]).unwrap_err(),
            PdbError::BadMagic
        );
        assert!(matches!(
            PatternDb::from_bytes(&bytes[..5], shape, &[5, 6, 7]),
            Err(PdbError::Truncated(_))
        ));
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(
            PatternDb::from_bytes(&longer, shape, &[5, 6, 7]),
            Err(PdbError::Truncated(_))
        ));
    }

    #[test]
    fn format_2_files_still_load_and_other_versions_name_the_rebuild() {
        let shape = Shape::new(3, 3).unwrap();
        let db = PatternDb::build(shape, &[1, 2, 3, 4], |_, _| {}).unwrap();
        let old = db.to_bytes_format_2();
        assert_eq!(PatternDb::format_of(&old[..]), Some(2));
        // One byte an entry: the exact values follow the header.
        let values = db.values();
        assert_eq!(&old[old.len() - values.len()..], &values[..]);
        let back = PatternDb::from_bytes(&old, shape, &[1, 2, 3, 4]).unwrap();
        assert_eq!(back.table(), db.table());
        let mut corrupt = old.clone();
        let last = corrupt.len() - 3;
        corrupt[last] ^= 2;
        assert_eq!(
            PatternDb::from_bytes(&corrupt, shape, &[1, 2, 3, 4]).unwrap_err(),
            PdbError::Checksum
        );
        for version in [1u32, 4] {
            let mut other = db.to_bytes();
            other[MAGIC.len()..MAGIC.len() + 4].copy_from_slice(&version.to_le_bytes());
            let err = PatternDb::from_bytes(&other, shape, &[1, 2, 3, 4]).unwrap_err();
            assert_eq!(
                err,
                PdbError::Version {
                    found: version,
                    oldest: 2,
                    newest: FORMAT
                }
            );
            assert!(err.to_string().contains("npuzzle pdb build"), "{err}");
        }
        assert_eq!(PatternDb::format_of(&b"nonsense!!!!"[..]), None);
    }

    #[test]
    fn bad_patterns_are_refused() {
        let shape = Shape::new(3, 3).unwrap();
        assert!(PatternDb::build(shape, &[0, 1], |_, _| {}).is_err());
        assert!(PatternDb::build(shape, &[1, 1], |_, _| {}).is_err());
        assert!(PatternDb::build(shape, &[9], |_, _| {}).is_err());
        assert!(Partition::named(shape, "7-8").is_err());
    }
}

#[cfg(test)]
mod incremental_tests {
    use super::*;

    #[test]
    fn incremental_update_matches_full_evaluation() {
        for (w, h, name) in [(3, 3, "4-4"), (4, 2, "3-4")] {
            let shape = Shape::new(w, h).unwrap();
            let partition = Partition::named(shape, name).unwrap();
            let pdb = PdbHeuristic::build(&partition, true, |_, _, _| {}).unwrap();
            walk_comparing_with_full_evaluation(&pdb, shape, 99, 3000);
        }
    }

    /// Plays `moves` random moves (`seed` picks them) from the goal, carrying the heuristic's
    /// value and state from move to move, and checks both against a full evaluation after
    /// every move.
    fn walk_comparing_with_full_evaluation(
        pdb: &PdbHeuristic,
        shape: Shape,
        mut seed: u64,
        moves: usize,
    ) {
        let n = shape.cells();
        let mut cells: Vec<u8> = (0..n as u8).collect();
        let mut blank = 0usize;
        let (mut hv, mut state) = pdb.evaluate(&cells);
        for step_no in 0..moves {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mv = Move::ALL[(seed >> 33) as usize % 4];
            let Some(to) = step(shape, blank, mv) else {
                continue;
            };
            let label = cells[to];
            (hv, state) = pdb.after_move(hv, &state, label, to, blank, false);
            cells.swap(blank, to);
            blank = to;
            let (full, full_state) = pdb.evaluate(&cells);
            assert_eq!(hv, full, "{shape} after {step_no} moves");
            assert_eq!(state, full_state, "{shape} after {step_no} moves");
        }
    }

    /// The ranks carried from move to move ([`rank_change`]) on wider boards, with patterns
    /// whose tiles share columns and come in mixed index order, so that moves up and down pass
    /// earlier and later tiles of their own pattern, in the board and in its reflection.
    #[test]
    fn carried_ranks_match_ranks_computed_afresh() {
        let cases: [(usize, &[&[u8]]); 2] = [
            (
                4,
                &[
                    &[9, 1, 13, 5],
                    &[2, 14, 6, 10],
                    &[15, 3, 11],
                    &[4, 12, 8, 7],
                ],
            ),
            (
                5,
                &[
                    &[11, 1, 6],
                    &[2, 22, 12],
                    &[18, 3, 8],
                    &[24, 14, 19],
                    &[5, 20, 15],
                ],
            ),
        ];
        for (side, patterns) in cases {
            let shape = Shape::new(side, side).unwrap();
            let dbs = patterns
                .iter()
                .map(|p| PatternDb::build(shape, p, |_, _| {}).unwrap())
                .collect();
            let pdb = PdbHeuristic::new(dbs, true).unwrap();
            walk_comparing_with_full_evaluation(&pdb, shape, 7, 20_000);
        }
    }
}
