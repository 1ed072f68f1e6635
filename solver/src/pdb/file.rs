//! The table file: a header (magic, version, shape, tiles, the blank's goal from format 4, the
//! table's kind from format 5, entry count, checksum), then the packed table as it lies in
//! memory (formats 3 and 4 per placement, 5 zero-aware in its own index), a split table's bytes
//! one a placement in rank order (format 6, [`SPLIT_FORMAT`]: zero-aware tables of 5x5, copied
//! to the sparse layout as they are read), or one byte an entry (format 2, still read).

use std::sync::Arc;

use super::memory::table_memory;
use super::packing::{Odometer, manhattan_table, nibble};
use super::split::SPLIT_FORMAT;
use super::zero_aware::{TableKind, ZERO_AWARE_FORMAT};
use super::{BlankGoal, PatternDb, PdbError, Regions};
use crate::shape::Shape;

impl PatternDb {
    /// Serialises the table in the format of its kind and layout ([`PatternDb::to_bytes_format`]):
    /// a header (magic, version, shape, tiles, entry count, checksum of what follows), then the
    /// entries. A per-placement table is written in [`FORMAT`], the packed table as it lies in
    /// memory, two entries a byte, so that loading it is one read and a checksum; one in the
    /// sparse layout is written dense, as every such file is. A zero-aware table in its own
    /// index is written in [`ZERO_AWARE_FORMAT`] (every region's entry), one in the split
    /// layout in [`SPLIT_FORMAT`] (its split bytes, one a placement in rank order).
    pub fn to_bytes(&self) -> Vec<u8> {
        if self.is_split() {
            return self.serialise(SPLIT_FORMAT, &self.split_file_bytes());
        }
        if self.zero.is_some() {
            return self.serialise(ZERO_AWARE_FORMAT, &self.table);
        }
        match self.sparse {
            Some(_) => self.serialise(FORMAT, &self.dense_table()),
            None => self.serialise(FORMAT, &self.table),
        }
    }

    /// The format [`PatternDb::to_bytes`] writes this table in.
    pub fn to_bytes_format(&self) -> u32 {
        match (&self.zero, self.is_split()) {
            (Some(_), true) => SPLIT_FORMAT,
            (Some(_), false) => ZERO_AWARE_FORMAT,
            (None, _) => FORMAT,
        }
    }

    /// The table as this build stores it ([`PatternDb::stored_format`]): a zero-aware table
    /// that the search reads in the split layout (six tiles on 5x5, see `sparse::worth_it`) is
    /// turned split, once, so that its file loads as fast as a per-placement table's; every
    /// other table is unchanged.
    pub fn into_stored(self) -> PatternDb {
        match Self::stored_format(self.shape, self.tiles.len(), self.kind()) {
            SPLIT_FORMAT => self.into_split(),
            _ => self,
        }
    }

    /// The format this build writes a table of `kind` with `k` tiles on `shape` in:
    /// [`SPLIT_FORMAT`] for zero-aware tables the search reads split (six tiles on 5x5),
    /// [`ZERO_AWARE_FORMAT`] for the other zero-aware ones, [`FORMAT`] per placement. A file in
    /// an older format loads, slower (`npuzzle pdb upgrade` rewrites it).
    pub fn stored_format(shape: Shape, k: usize, kind: TableKind) -> u32 {
        match kind {
            TableKind::ZeroAware if super::sparse::worth_it(shape, k) => SPLIT_FORMAT,
            TableKind::ZeroAware => ZERO_AWARE_FORMAT,
            TableKind::PerPlacement => FORMAT,
        }
    }

    /// Serialises the table in format 2, one byte an entry (its exact value), as builds before
    /// format 3 wrote it (for the tests of `npuzzle pdb upgrade` and of old files); loading it
    /// packs every entry, which takes seconds for 7-8.
    pub fn to_bytes_format_2(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(Self::entries(self.shape, self.tiles.len()) as usize);
        self.for_each_value(|v| body.push(v));
        self.serialise(2, &body)
    }

    fn serialise(&self, version: u32, body: &[u8]) -> Vec<u8> {
        let count = self.len();
        let mut out = Vec::with_capacity(body.len() + 64);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&version.to_le_bytes());
        out.push(self.shape.width() as u8);
        out.push(self.shape.height() as u8);
        out.push(self.tiles.len() as u8);
        out.extend_from_slice(&self.tiles);
        if version >= 4 {
            out.push(match self.blank {
                BlankGoal::Home => 0,
                BlankGoal::Free => 1,
            });
        }
        if version >= ZERO_AWARE_FORMAT {
            out.push(self.kind().byte());
        }
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
        r: impl std::io::Read,
        shape: Shape,
        tiles: &[u8],
    ) -> Result<PatternDb, PdbError> {
        Self::read_table(r, shape, tiles, BlankGoal::Home)
    }

    /// [`PatternDb::read_from`] for the table towards the goal `blank` names (files before
    /// format 4 hold [`BlankGoal::Home`] tables only).
    pub fn read_table(
        r: impl std::io::Read,
        shape: Shape,
        tiles: &[u8],
        blank: BlankGoal,
    ) -> Result<PatternDb, PdbError> {
        Self::read_kind(r, shape, tiles, blank, TableKind::PerPlacement)
    }

    /// [`PatternDb::read_table`] for a table of `kind` (files before format
    /// [`ZERO_AWARE_FORMAT`] hold per-placement tables only).
    pub fn read_kind(
        mut r: impl std::io::Read,
        shape: Shape,
        tiles: &[u8],
        blank: BlankGoal,
        kind: TableKind,
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
        if !(OLDEST_FORMAT..=SPLIT_FORMAT).contains(&version) {
            return Err(PdbError::Version {
                found: version,
                oldest: OLDEST_FORMAT,
                newest: SPLIT_FORMAT,
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
        let stored_blank = if version >= 4 {
            let mut byte = [0u8; 1];
            fill(&mut r, &mut byte, "blank goal")?;
            match byte[0] {
                0 => BlankGoal::Home,
                1 => BlankGoal::Free,
                other => {
                    return Err(PdbError::Mismatch {
                        found: format!("{found} with blank goal {other}"),
                        expected,
                    });
                }
            }
        } else {
            BlankGoal::Home
        };
        if stored_blank != blank {
            return Err(PdbError::Mismatch {
                found: format!("{found}, blank {stored_blank:?}"),
                expected: format!("{expected}, blank {blank:?}"),
            });
        }
        let stored_kind = if version >= ZERO_AWARE_FORMAT {
            let mut byte = [0u8; 1];
            fill(&mut r, &mut byte, "table kind")?;
            TableKind::from_byte(byte[0]).ok_or_else(|| PdbError::Mismatch {
                found: format!("{found} of kind {}", byte[0]),
                expected: expected.clone(),
            })?
        } else {
            TableKind::PerPlacement
        };
        if stored_kind != kind {
            return Err(PdbError::Mismatch {
                found: format!("{found}, {stored_kind:?}"),
                expected: format!("{expected}, {kind:?}"),
            });
        }
        let split = version >= SPLIT_FORMAT;
        if split && (kind != TableKind::ZeroAware || !super::sparse::fits(shape, k)) {
            return Err(PdbError::Mismatch {
                found: format!("{found}, format {version} ({kind:?})"),
                expected: format!(
                    "{expected}: format {version} holds zero-aware tables whose sparse index fits 32 bits"
                ),
            });
        }
        let mut long = [0u8; 8];
        fill(&mut r, &mut long, "entry count")?;
        let count = u64::from_le_bytes(long);
        // A split table's file holds a byte per placement.
        let entries = match split {
            true => PatternDb::entries(shape, k),
            false => kind.entries(shape, k)?,
        };
        if count != entries {
            return Err(PdbError::Mismatch {
                found: format!("{found} with {count} entries"),
                expected,
            });
        }
        fill(&mut r, &mut long, "checksum")?;
        let sum = u64::from_le_bytes(long);
        if split {
            // The split bytes, one a placement, copied to their sparse indices a few of tile
            // 0's cells at a time (as many as cores), as they are read and summed.
            let weight = super::sparse::weights(shape, k);
            let n = shape.cells();
            let part = weight[0] as usize;
            let mut table = table_memory(part * n);
            let Some(sparse) = Arc::get_mut(&mut table) else {
                return Err(PdbError::Read("the table buffer is shared".into()));
            };
            let per_part = (count / n as u64) as usize;
            let cells = std::thread::available_parallelism().map_or(1, |t| t.get());
            let mut dense = vec![0u8; per_part * cells];
            let mut hash = Checksum::new();
            for (block, out) in sparse.chunks_mut(part * cells).enumerate() {
                let m = out.len() / part;
                let bytes = &mut dense[..per_part * m];
                fill(&mut r, bytes, "table")?;
                hash.update(bytes);
                super::split::expand_split_parts(shape, k, &weight, block * cells, bytes, out);
            }
            expect_end(&mut r)?;
            if hash.finish(count) != sum {
                return Err(PdbError::Checksum);
            }
            let mut db = PatternDb::zero_aware(shape, tiles, Regions::shared(shape, k)?, table);
            db.sparse = Some(weight);
            return Ok(db);
        }
        let mut db = PatternDb::new(shape, tiles, blank, Arc::from(Vec::new()));
        let packed_len = count.div_ceil(2) as usize;
        // Allocated where it stays: an Arc made from a Vec would copy it.
        let mut table = table_memory(packed_len);
        let Some(packed) = Arc::get_mut(&mut table) else {
            return Err(PdbError::Read("the table buffer is shared".into()));
        };
        if version >= PACKED_FORMAT {
            // The packed table itself: read in place.
            fill(&mut r, packed, "table")?;
            expect_end(&mut r)?;
            if checksum(packed) != sum {
                return Err(PdbError::Checksum);
            }
            if kind == TableKind::ZeroAware {
                return Ok(PatternDb::zero_aware(
                    shape,
                    tiles,
                    Regions::shared(shape, k)?,
                    table,
                ));
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

pub(super) const MAGIC: &[u8; 8] = b"NPZPDB\0\x01";
/// The format [`PatternDb::to_bytes`] writes. Version 4: as 3, and a byte after the tiles says
/// where the blank belongs in the table's goal ([`BlankGoal`]). Version 3: the packed table
/// (four bits an entry, as in memory), blank on cell 0. Version 2: one byte an entry, packed as it is read. Both hold tables built
/// with the blank's region (version 1 let tiles step anywhere free, and is refused). Zero-aware
/// tables are written in format [`ZERO_AWARE_FORMAT`] (5), or [`SPLIT_FORMAT`] (6) in the split
/// layout, which this build reads too.
pub const FORMAT: u32 = 4;
/// The oldest format read.
const OLDEST_FORMAT: u32 = 2;
/// The oldest format that holds the packed table, so that loading it is a read (format 2 files
/// are packed entry by entry as they load).
pub const PACKED_FORMAT: u32 = 3;

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
