//! Where pattern databases live on disk, and how they are saved and loaded (feature `store`,
//! the one part of this crate that does I/O): each table of a partition is one file in the
//! table directory (`--pdb-dir`, env `NPUZZLE_PDB_DIR`, default `~/.cache/npuzzle/pdb`), named
//! `{WxH}-{partition}-{i}.pdb`. A file is verified on load (header, size, checksum, shape and
//! pattern; see [`PatternDb::from_bytes`]) and never trusted otherwise: a missing, truncated,
//! corrupt or mismatched file is rebuilt when building is allowed, else refused with an error
//! naming the file. The worker serves what it holds (`npuzzle_worker::tables`); `npuzzle pdb`
//! builds and lists it.
//!
//! A partition's tables come in two kinds ([`TableKind`]): per placement (`.pdb` files) and
//! zero-aware (`.zpdb` files, format [`crate::PDB_ZERO_AWARE_FORMAT`]; on 5x5 format
//! [`crate::PDB_SPLIT_FORMAT`], the split layout the search reads, made once as the table is
//! built, so that the file loads as fast as a per-placement one). [`TableStore::best`] tries
//! the shape's [`default_kind`] first: zero-aware tables on 5x5 wherever they are built, per
//! placement elsewhere. [`TableStore::ensure`] builds only the
//! tables that are missing or fail to verify; [`TableStore::status`] says which those are and
//! which are in an older format than this build writes ([`PatternDb::stored_format`]), which
//! [`TableStore::upgrade`] rewrites.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::{BlankGoal, Partition, PatternDb, PdbError, PdbHeuristic, Shape, TableKind};

/// The shapes with built-in partitions (see [`preferred_partitions`]).
pub fn table_shapes() -> Vec<Shape> {
    [(4, 4), (5, 5), (3, 3), (2, 4), (4, 2)]
        .into_iter()
        .filter_map(|(w, h)| Shape::new(w, h).ok())
        .collect()
}

/// Partitions tried by `best`, strongest first, per shape.
pub fn preferred_partitions(shape: Shape) -> &'static [&'static str] {
    match (shape.width(), shape.height()) {
        (4, 4) => &["7-8", "6-6-3", "5-5-5"],
        (5, 5) => &["6-6-6-6", "6-6-6-6-kf", "6-6-6-6-c"],
        (3, 3) => &["4-4"],
        (2, 4) | (4, 2) => &["3-4"],
        _ => &[],
    }
}

/// Partitions whose heuristics `best` puts under the max when every one of them is present,
/// strongest first, before it tries the single ones of [`preferred_partitions`]. On the
/// 24-puzzle, Korf & Felner's ten easiest expanded 0.29x the nodes of `6-6-6-6` alone with two
/// layouts and 0.22x with three (docs/performance.md); each layout costs table reads per move,
/// so the time gained depends on the host's caches.
pub fn combined_partitions(shape: Shape) -> &'static [&'static [&'static str]] {
    match (shape.width(), shape.height()) {
        (5, 5) => &[
            &["6-6-6-6", "6-6-6-6-kf", "6-6-6-6-c"],
            &["6-6-6-6", "6-6-6-6-kf"],
        ],
        _ => &[],
    }
}

/// A problem with the table directory.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Table { path: PathBuf, source: PdbError },
    #[error(transparent)]
    Partition(#[from] PdbError),
    #[error(
        "no pattern databases for {shape} in {dir}; build them with `npuzzle pdb build --size {shape} --partition {hint}`"
    )]
    Missing {
        shape: Shape,
        dir: PathBuf,
        hint: String,
    },
}

/// The table directory.
#[derive(Clone, Debug)]
pub struct TableStore {
    pub dir: PathBuf,
}

impl TableStore {
    /// `dir`, or `$NPUZZLE_PDB_DIR`, or the per-user cache directory.
    pub fn new(dir: Option<PathBuf>) -> TableStore {
        let dir = dir
            .or_else(|| std::env::var_os("NPUZZLE_PDB_DIR").map(PathBuf::from))
            .or_else(|| dirs::cache_dir().map(|d| d.join("npuzzle").join("pdb")))
            .unwrap_or_else(|| PathBuf::from(".npuzzle-pdb"));
        TableStore { dir }
    }

    pub fn path(&self, partition: &Partition, index: usize) -> PathBuf {
        self.dir.join(format!(
            "{}-{}-{index}.pdb",
            partition.shape, partition.name
        ))
    }

    /// Where table `index` of `partition` of `kind` lives: `.pdb` per placement, `.zpdb`
    /// zero-aware.
    pub fn path_of(&self, partition: &Partition, index: usize, kind: TableKind) -> PathBuf {
        match kind {
            TableKind::PerPlacement => self.path(partition, index),
            TableKind::ZeroAware => self.path(partition, index).with_extension("zpdb"),
        }
    }

    /// Whether every file of the partition exists in one kind or the other (not yet verified).
    pub fn has(&self, partition: &Partition) -> bool {
        [TableKind::PerPlacement, TableKind::ZeroAware]
            .into_iter()
            .any(|kind| self.has_kind(partition, kind))
    }

    /// Whether every file of the partition of `kind` exists (not yet verified).
    pub fn has_kind(&self, partition: &Partition, kind: TableKind) -> bool {
        (0..partition.patterns.len()).all(|i| self.path_of(partition, i, kind).is_file())
    }

    fn load_table_kind(
        &self,
        partition: &Partition,
        i: usize,
        kind: TableKind,
    ) -> Result<PatternDb, StoreError> {
        let path = self.path_of(partition, i, kind);
        let file = std::fs::File::open(&path).map_err(|source| StoreError::Io {
            path: path.clone(),
            source,
        })?;
        let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
        // The header's version, looked at without consuming it.
        let format = std::io::BufRead::fill_buf(&mut reader)
            .ok()
            .and_then(PatternDb::format_of);
        let tiles = &partition.patterns[i];
        let db = PatternDb::read_kind(reader, partition.shape, tiles, BlankGoal::Home, kind)
            .map_err(|source| StoreError::Table {
                path: path.clone(),
                source,
            })?;
        let stored = PatternDb::stored_format(partition.shape, tiles.len(), kind);
        match format {
            Some(f) if f < crate::PDB_PACKED_FORMAT => tracing::info!(
                path = %path.display(),
                "table file in an older format, packed as it loads: `npuzzle pdb upgrade` rewrites it to load in a read"
            ),
            Some(f) if f < stored => tracing::info!(
                path = %path.display(),
                "zero-aware table file in format {f}, turned into the split layout each time it loads (seconds): `npuzzle pdb upgrade` rewrites it in format {stored}, which loads in a read"
            ),
            _ => {}
        }
        if db.is_split() && std::env::var_os("NPUZZLE_PDB_DENSE").is_some_and(|v| v == "1") {
            tracing::warn!(
                path = %path.display(),
                "NPUZZLE_PDB_DENSE=1 asks for zero-aware tables in their own index, but a format {} file holds the split layout only: read split",
                crate::PDB_SPLIT_FORMAT
            );
        }
        Ok(db)
    }

    /// Saves table `index` of `partition` (its bytes, [`PatternDb::to_bytes`]) under its name in
    /// the directory, created if missing, and returns the file's path. The bytes go to a file
    /// beside it first, then are renamed: a crash never leaves a half-written table under the
    /// name.
    pub fn save(
        &self,
        partition: &Partition,
        index: usize,
        bytes: &[u8],
    ) -> Result<PathBuf, StoreError> {
        self.save_kind(partition, index, TableKind::PerPlacement, bytes)
    }

    /// [`TableStore::save`] for a table of `kind`.
    pub fn save_kind(
        &self,
        partition: &Partition,
        index: usize,
        kind: TableKind,
        bytes: &[u8],
    ) -> Result<PathBuf, StoreError> {
        let path = self.path_of(partition, index, kind);
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, bytes).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)?;
        Ok(path)
    }

    /// Loads a partition's tables; a table that is missing or fails verification is rebuilt
    /// (and saved) when `build` is set, else an error names it. `on_build(i, done, total)`
    /// reports building progress.
    pub fn load(
        &self,
        partition: &Partition,
        reflect: bool,
        build: bool,
        on_build: impl FnMut(usize, u64, u64),
    ) -> Result<PdbHeuristic, StoreError> {
        self.load_kind(partition, TableKind::PerPlacement, reflect, build, on_build)
    }

    /// [`TableStore::load`] for the tables of `kind`.
    pub fn load_kind(
        &self,
        partition: &Partition,
        kind: TableKind,
        reflect: bool,
        build: bool,
        mut on_build: impl FnMut(usize, u64, u64),
    ) -> Result<PdbHeuristic, StoreError> {
        // Reading and verifying the files is most of the start-up time: do them side by side.
        let loaded: Vec<Result<PatternDb, StoreError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..partition.patterns.len())
                .map(|i| scope.spawn(move || self.load_table_kind(partition, i, kind)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(StoreError::Io {
                            path: self.dir.clone(),
                            source: std::io::Error::other("a table loader panicked"),
                        })
                    })
                })
                .collect()
        });
        let mut dbs = Vec::with_capacity(partition.patterns.len());
        for ((i, tiles), loaded) in partition.patterns.iter().enumerate().zip(loaded) {
            match loaded {
                Ok(db) => dbs.push(db),
                Err(e) if build => {
                    tracing::info!(error = %e, "building table");
                    let db = build_table(partition.shape, tiles, kind, |d, t| on_build(i, d, t))?;
                    self.save_kind(partition, i, kind, &db.to_bytes())?;
                    dbs.push(db);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(PdbHeuristic::new(dbs, reflect)?)
    }

    /// The format version of each of the partition's per-placement files (`None`: missing,
    /// unreadable or not a table file).
    pub fn formats(&self, partition: &Partition) -> Vec<Option<u32>> {
        self.formats_kind(partition, TableKind::PerPlacement)
    }

    /// [`TableStore::formats`] of the partition's files of `kind`.
    pub fn formats_kind(&self, partition: &Partition, kind: TableKind) -> Vec<Option<u32>> {
        (0..partition.patterns.len())
            .map(|i| {
                let file = std::fs::File::open(self.path_of(partition, i, kind)).ok()?;
                PatternDb::format_of(file)
            })
            .collect()
    }

    /// Rewrites each of the partition's tables (of both kinds) stored in a format older than
    /// the one this build writes for it ([`PatternDb::stored_format`]: [`crate::PDB_FORMAT`]
    /// per placement; for zero-aware tables [`crate::PDB_SPLIT_FORMAT`] where the search reads
    /// them split, 6 tiles on 5x5, else [`crate::PDB_ZERO_AWARE_FORMAT`]), once it has loaded
    /// and verified; returns the paths rewritten with the format each now has. A table that
    /// fails to load is an error that names it.
    pub fn upgrade(&self, partition: &Partition) -> Result<Vec<(PathBuf, u32)>, StoreError> {
        let mut rewritten = Vec::new();
        for kind in [TableKind::PerPlacement, TableKind::ZeroAware] {
            for (i, format) in self.formats_kind(partition, kind).into_iter().enumerate() {
                let k = partition.patterns[i].len();
                let stored = PatternDb::stored_format(partition.shape, k, kind);
                if format.is_some_and(|f| f < stored) {
                    let db = self.load_table_kind(partition, i, kind)?.into_stored();
                    let path = self.save_kind(partition, i, kind, &db.to_bytes())?;
                    rewritten.push((path, db.to_bytes_format()));
                }
            }
        }
        Ok(rewritten)
    }

    /// The strongest heuristic whose files are all present, loaded and verified. Tables of the
    /// shape's [`default_kind`] are tried first, then the other kind: of each, the first of
    /// [`combined_partitions`] whose partitions are all present (under the max; the partition
    /// returned is the first, named `A+B`), else the first of [`preferred_partitions`] present.
    /// So on 5x5 zero-aware tables are taken wherever they are built, two layouts of them
    /// before three per-placement ones (they search faster: docs/performance.md, issue 49).
    pub fn best(&self, shape: Shape) -> Result<(Partition, PdbHeuristic), StoreError> {
        self.best_of(shape, combined_partitions(shape), kinds_in_order(shape))
    }

    fn best_of(
        &self,
        shape: Shape,
        combined: &[&[&str]],
        kinds: [TableKind; 2],
    ) -> Result<(Partition, PdbHeuristic), StoreError> {
        for kind in kinds {
            if let Some(found) = self.best_of_kind(shape, combined, kind)? {
                return Ok(found);
            }
        }
        Err(StoreError::Missing {
            shape,
            dir: self.dir.clone(),
            hint: preferred_partitions(shape)
                .last()
                .copied()
                .unwrap_or("…")
                .to_string(),
        })
    }

    /// [`TableStore::best_of`] for tables of one kind: `None` if none of its partitions is
    /// all there.
    fn best_of_kind(
        &self,
        shape: Shape,
        combined: &[&[&str]],
        kind: TableKind,
    ) -> Result<Option<(Partition, PdbHeuristic)>, StoreError> {
        for names in combined {
            let parts = (names.iter())
                .map(|name| Partition::named(shape, name))
                .collect::<Result<Vec<_>, _>>()?;
            if parts.is_empty() || !parts.iter().all(|p| self.has_kind(p, kind)) {
                continue;
            }
            let mut pdb: Option<PdbHeuristic> = None;
            for part in &parts {
                let loaded = self.load_kind(part, kind, true, false, |_, _, _| {})?;
                pdb = Some(match pdb {
                    None => loaded,
                    Some(pdb) => pdb.with_also(loaded)?,
                });
            }
            if let Some(pdb) = pdb {
                let mut partition = parts[0].clone();
                // The name goes on the wire as it is (`A+B`): the kind is the tables' own.
                partition.name = names.join("+");
                return Ok(Some((partition, pdb)));
            }
        }
        for name in preferred_partitions(shape) {
            let partition = Partition::named(shape, name)?;
            if self.has_kind(&partition, kind) {
                let pdb = self.load_kind(&partition, kind, true, false, |_, _, _| {})?;
                return Ok(Some((partition, pdb)));
            }
        }
        Ok(None)
    }

    /// [`TableStore::best`], loaded once per process: later calls for the same directory and
    /// shape share the tables (a 7-8 set is over half a gigabyte), whichever thread, worker or
    /// engine of the process asks. Failures are not remembered: the next call tries again.
    pub fn best_shared(&self, shape: Shape) -> Result<(Partition, PdbHeuristic), StoreError> {
        type Loaded = Mutex<HashMap<(PathBuf, Shape), (Partition, PdbHeuristic)>>;
        static LOADED: OnceLock<Loaded> = OnceLock::new();
        let mut loaded = LOADED
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let key = (self.dir.clone(), shape);
        if let Some(found) = loaded.get(&key) {
            return Ok(found.clone());
        }
        let found = self.best(shape)?;
        loaded.insert(key, found.clone());
        Ok(found)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Each table of the partition of `kind`: whether its file is there, verifies and is in
    /// the format this build writes (a missing file is also what `pdb build` makes). Reads and checks every file (a checksum: well under a
    /// second per table).
    pub fn status(&self, partition: &Partition, kind: TableKind) -> Vec<(PathBuf, TableStatus)> {
        (0..partition.patterns.len())
            .map(|i| {
                let path = self.path_of(partition, i, kind);
                if !path.is_file() {
                    return (path, TableStatus::Missing);
                }
                let status = match self.load_table_kind(partition, i, kind) {
                    Err(e) => TableStatus::Stale(e.to_string()),
                    Ok(db) => {
                        let format = std::fs::File::open(&path)
                            .ok()
                            .and_then(PatternDb::format_of);
                        let k = db.tiles().len();
                        let current = PatternDb::stored_format(partition.shape, k, kind);
                        match format {
                            Some(f) if f < current => TableStatus::Older(f),
                            _ => TableStatus::Ok,
                        }
                    }
                };
                (path, status)
            })
            .collect()
    }

    /// Builds (and saves) every table of the partition of `kind` that is missing or fails to
    /// verify, keeping those that verify; returns each table's path and whether it was kept.
    /// `on_build(i, done, total)` reports building progress, `on_table(i, path, kept, db)` each
    /// table as it is settled (a kept table is loaded, so verified, then dropped).
    pub fn ensure(
        &self,
        partition: &Partition,
        kind: TableKind,
        mut on_build: impl FnMut(usize, u64, u64),
        mut on_table: impl FnMut(usize, &Path, bool, &PatternDb),
    ) -> Result<Vec<(PathBuf, bool)>, StoreError> {
        let mut out = Vec::new();
        for (i, tiles) in partition.patterns.iter().enumerate() {
            let (path, kept, db) = match self.load_table_kind(partition, i, kind) {
                Ok(db) => (self.path_of(partition, i, kind), true, db),
                Err(e) => {
                    tracing::info!(error = %e, "building table");
                    let db = build_table(partition.shape, tiles, kind, |d, t| on_build(i, d, t))?;
                    (
                        self.save_kind(partition, i, kind, &db.to_bytes())?,
                        false,
                        db,
                    )
                }
            };
            on_table(i, &path, kept, &db);
            out.push((path, kept));
        }
        Ok(out)
    }
}

/// What [`TableStore::status`] finds of a table file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableStatus {
    /// It verifies and is in the format this build writes.
    Ok,
    /// It is not there.
    Missing,
    /// It verifies, in an older format that loads slower (`npuzzle pdb upgrade` rewrites it).
    Older(u32),
    /// It is there, but fails to verify: why (`npuzzle pdb build` rebuilds it).
    Stale(String),
}

/// The kind `npuzzle pdb build` builds when none is named, and the kind [`TableStore::best`]
/// takes first: zero-aware on 5x5 (stored split, format 6: 1.7x fewer nodes than per-placement
/// tables, a faster search with two layouts than per-placement tables with three, 1.95 GB of
/// tables in memory; docs/performance.md, issue 49), per placement elsewhere (4x4's zero-aware
/// tables are not measured to pay).
pub fn default_kind(shape: Shape) -> TableKind {
    match (shape.width(), shape.height()) {
        (5, 5) => TableKind::ZeroAware,
        _ => TableKind::PerPlacement,
    }
}

/// The kinds [`TableStore::best`] tries on `shape`, in order: [`default_kind`] first.
fn kinds_in_order(shape: Shape) -> [TableKind; 2] {
    match default_kind(shape) {
        TableKind::ZeroAware => [TableKind::ZeroAware, TableKind::PerPlacement],
        TableKind::PerPlacement => [TableKind::PerPlacement, TableKind::ZeroAware],
    }
}

/// What `npuzzle pdb build` builds when no partition is named, for tables of `kind`: every
/// partition of the strongest combination [`TableStore::best`] loads for `shape`, else its
/// strongest single partition; for zero-aware 5x5 tables, the two layouts of
/// [`combined_partitions`]' second combination (1.95 GB in memory, where three take 2.93 GB).
pub fn default_partitions(shape: Shape, kind: TableKind) -> Vec<&'static str> {
    let combined = combined_partitions(shape);
    let pick = match kind {
        TableKind::ZeroAware => combined.get(1).or(combined.first()),
        TableKind::PerPlacement => combined.first(),
    };
    match pick {
        Some(names) => names.to_vec(),
        None => preferred_partitions(shape)
            .first()
            .copied()
            .into_iter()
            .collect(),
    }
}

/// Builds one table of `kind`, in the layout its file holds ([`PatternDb::into_stored`]).
fn build_table(
    shape: Shape,
    tiles: &[u8],
    kind: TableKind,
    progress: impl FnMut(u64, u64),
) -> Result<PatternDb, PdbError> {
    let db = match kind {
        TableKind::PerPlacement => PatternDb::build(shape, tiles, progress),
        TableKind::ZeroAware => PatternDb::build_zero_aware(shape, tiles, progress),
    }?;
    Ok(db.into_stored())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("npuzzle-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn zero_aware_tables_are_the_default_on_5x5_only_two_layouts_of_them() {
        let five = Shape::new(5, 5).unwrap();
        assert_eq!(default_kind(five), TableKind::ZeroAware);
        assert_eq!(kinds_in_order(five)[0], TableKind::ZeroAware);
        assert_eq!(
            default_partitions(five, TableKind::ZeroAware),
            ["6-6-6-6", "6-6-6-6-kf"]
        );
        assert_eq!(
            default_partitions(five, TableKind::PerPlacement),
            ["6-6-6-6", "6-6-6-6-kf", "6-6-6-6-c"]
        );
        for shape in table_shapes().into_iter().filter(|&s| s != five) {
            assert_eq!(default_kind(shape), TableKind::PerPlacement, "{shape}");
            let kind = TableKind::PerPlacement;
            assert_eq!(
                default_partitions(shape, kind),
                [preferred_partitions(shape)[0]],
                "{shape}"
            );
        }
    }

    #[test]
    fn partitions_combined_are_loaded_under_the_max_when_all_are_present() {
        let store = TableStore::new(Some(temp_dir("combined")));
        let shape = Shape::new(3, 3).unwrap();
        let partition = Partition::named(shape, "4-4").unwrap();
        // Absent: the single partition is not there either.
        assert!(matches!(
            store.best_of(shape, &[&["4-4", "4-4"]], kinds_in_order(shape)),
            Err(StoreError::Missing { .. })
        ));
        store.load(&partition, true, true, |_, _, _| {}).unwrap();
        let (named, pdb) = store
            .best_of(shape, &[&["4-4", "4-4"]], kinds_in_order(shape))
            .unwrap();
        assert_eq!((named.name.as_str(), pdb.partitions()), ("4-4+4-4", 2));
        let (named, pdb) = store.best(shape).unwrap();
        assert_eq!((named.name.as_str(), pdb.partitions()), ("4-4", 1));
        let _ = std::fs::remove_dir_all(&store.dir);
    }

    #[test]
    fn builds_saves_loads_and_rebuilds_a_corrupt_table() {
        let store = TableStore::new(Some(temp_dir("roundtrip")));
        let shape = Shape::new(3, 3).unwrap();
        let partition = Partition::named(shape, "4-4").unwrap();
        assert!(!store.has(&partition));
        assert!(matches!(store.best(shape), Err(StoreError::Missing { .. })));
        let built = store.load(&partition, true, true, |_, _, _| {}).unwrap();
        assert!(store.has(&partition));
        let (name, loaded) = store.best(shape).unwrap();
        assert_eq!(name.name, "4-4");
        assert_eq!(loaded.tables()[1].table(), built.tables()[1].table());

        // Flip one byte: refused without building, rebuilt with.
        let path = store.path(&partition, 1);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() - 7;
        bytes[at] ^= 0x20;
        std::fs::write(&path, &bytes).unwrap();
        let err = store
            .load(&partition, true, false, |_, _, _| {})
            .unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
        assert!(err.to_string().contains("3x3-4-4-1.pdb"), "{err}");
        let rebuilt = store.load(&partition, true, true, |_, _, _| {}).unwrap();
        assert_eq!(rebuilt.tables()[1].table(), built.tables()[1].table());

        // Truncated: same.
        std::fs::write(&path, &bytes[..100]).unwrap();
        let err = store
            .load(&partition, true, false, |_, _, _| {})
            .unwrap_err();
        assert!(err.to_string().contains("truncated"), "{err}");
        let _ = std::fs::remove_dir_all(store.dir());
    }

    #[test]
    fn ensure_keeps_what_verifies_and_best_takes_zero_aware_tables_only_alone() {
        let store = TableStore::new(Some(temp_dir("zero")));
        let shape = Shape::new(3, 3).unwrap();
        let partition = Partition::named(shape, "4-4").unwrap();
        let kind = TableKind::ZeroAware;
        let missing = store.status(&partition, kind);
        assert!(missing.iter().all(|(_, s)| *s == TableStatus::Missing));
        store.load(&partition, true, true, |_, _, _| {}).unwrap();
        let (named, pdb) = store.best(shape).unwrap();
        assert_eq!(named.name, "4-4");
        assert!(!pdb.is_zero_aware());

        let built = store.ensure(&partition, kind, |_, _, _| {}, |_, _, _, _| {});
        assert!(built.unwrap().iter().all(|(_, kept)| !kept));
        let status = store.status(&partition, kind);
        assert!(
            status.iter().all(|(_, s)| *s == TableStatus::Ok),
            "{status:?}"
        );
        // Both kinds present: on 3x3 the per-placement tables are taken; where the shape's
        // default kind is zero-aware (5x5), those, combined under the max before either kind's
        // single partitions.
        let (named, pdb) = store.best(shape).unwrap();
        assert_eq!(named.name, "4-4");
        assert!(!pdb.is_zero_aware());
        let zero_first = [TableKind::ZeroAware, TableKind::PerPlacement];
        let (named, pdb) = store.best_of(shape, &[], zero_first).unwrap();
        assert_eq!(named.name, "4-4");
        assert!(pdb.is_zero_aware());
        let (named, pdb) = store
            .best_of(shape, &[&["4-4", "4-4"]], zero_first)
            .unwrap();
        assert_eq!((named.name.as_str(), pdb.partitions()), ("4-4+4-4", 2));
        assert!(pdb.is_zero_aware());
        // Only the zero-aware ones: those.
        let alone = TableStore::new(Some(temp_dir("zero-alone")));
        for index in 0..2 {
            let from = store.path_of(&partition, index, kind);
            let to = alone.path_of(&partition, index, kind);
            std::fs::create_dir_all(alone.dir()).unwrap();
            std::fs::copy(&from, &to).unwrap();
        }
        let (named, pdb) = alone.best(shape).unwrap();
        assert_eq!(named.name, "4-4");
        assert!(pdb.is_zero_aware());
        let _ = std::fs::remove_dir_all(alone.dir());

        // A corrupt table is stale; ensure rebuilds it alone.
        let path = store.path_of(&partition, 1, kind);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() - 5;
        bytes[at] ^= 0x11;
        std::fs::write(&path, &bytes).unwrap();
        let status = store.status(&partition, kind);
        assert_eq!(status[0].1, TableStatus::Ok);
        assert!(matches!(&status[1].1, TableStatus::Stale(why) if why.contains("checksum")));
        let again = store
            .ensure(&partition, kind, |_, _, _| {}, |_, _, _, _| {})
            .unwrap();
        let kept: Vec<bool> = again.iter().map(|(_, kept)| *kept).collect();
        assert_eq!(kept, [true, false]);
        assert!(
            store
                .status(&partition, kind)
                .iter()
                .all(|(_, s)| *s == TableStatus::Ok)
        );
        let _ = std::fs::remove_dir_all(store.dir());
    }

    /// A zero-aware 5x5 table in format 5 (as builds before format 6 wrote it) loads, split as
    /// it loads; status calls it older; upgrade rewrites it in format 6, which loads to the same
    /// table and values; a second upgrade has nothing to do.
    #[test]
    fn format_5_zero_aware_5x5_files_are_older_and_upgrade_to_format_6() {
        let store = TableStore::new(Some(temp_dir("split-upgrade")));
        let shape = Shape::new(5, 5).unwrap();
        let partition = Partition {
            name: "a".into(),
            shape,
            patterns: vec![vec![1, 2, 5, 6], vec![3, 4, 8, 9]],
        };
        let kind = TableKind::ZeroAware;
        let mut zero = Vec::new();
        for (i, tiles) in partition.patterns.iter().enumerate() {
            let db = PatternDb::build_zero_aware(shape, tiles, |_, _| {}).unwrap();
            assert_eq!(db.to_bytes_format(), crate::PDB_ZERO_AWARE_FORMAT);
            store
                .save_kind(&partition, i, kind, &db.to_bytes())
                .unwrap();
            zero.push(db);
        }
        let five = Some(crate::PDB_ZERO_AWARE_FORMAT);
        assert_eq!(store.formats_kind(&partition, kind), [five, five]);
        let status = store.status(&partition, kind);
        assert!(
            (status.iter()).all(|(_, s)| *s == TableStatus::Older(crate::PDB_ZERO_AWARE_FORMAT)),
            "{status:?}"
        );
        let before = store.load_kind(&partition, kind, true, false, |_, _, _| {});
        let before = before.unwrap();
        assert!(before.tables().iter().all(PatternDb::is_split));

        let rewritten = store.upgrade(&partition).unwrap();
        assert_eq!(rewritten.len(), 2);
        assert!(
            (rewritten.iter()).all(|(p, f)| *f == crate::PDB_SPLIT_FORMAT && p.is_file()),
            "{rewritten:?}"
        );
        let six = Some(crate::PDB_SPLIT_FORMAT);
        assert_eq!(store.formats_kind(&partition, kind), [six, six]);
        let status = store.status(&partition, kind);
        assert!(
            status.iter().all(|(_, s)| *s == TableStatus::Ok),
            "{status:?}"
        );
        let after = store.load_kind(&partition, kind, true, false, |_, _, _| {});
        let after = after.unwrap();
        for (a, b) in before.tables().iter().zip(after.tables()) {
            assert_eq!(a.table(), b.table());
        }
        let mut cells: Vec<u8> = (0..25).collect();
        let mut seed = 7u64;
        for _ in 0..2000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            let (a, b) = ((seed >> 40) as usize % 25, (seed >> 20) as usize % 25);
            cells.swap(a, b);
            let value = |h: &PdbHeuristic| crate::Heuristic::evaluate(h, &cells).0;
            assert_eq!(value(&before), value(&after), "{cells:?}");
        }
        assert!(store.upgrade(&partition).unwrap().is_empty());
        // `pdb build` keeps what verifies: nothing to build.
        let kept = store.ensure(&partition, kind, |_, _, _| {}, |_, _, _, _| {});
        assert!(kept.unwrap().iter().all(|(_, kept)| *kept));
        let _ = std::fs::remove_dir_all(store.dir());
    }

    /// A zero-aware 5x5 table built by the store is written in format 6.
    #[test]
    fn zero_aware_5x5_tables_are_built_in_format_6() {
        let store = TableStore::new(Some(temp_dir("split-build")));
        let shape = Shape::new(5, 5).unwrap();
        let partition = Partition {
            name: "b".into(),
            shape,
            patterns: vec![vec![1, 2, 5, 6]],
        };
        let kind = TableKind::ZeroAware;
        let built = store.ensure(
            &partition,
            kind,
            |_, _, _| {},
            |_, _, _, db| {
                assert!(db.is_split());
            },
        );
        assert!(built.unwrap().iter().all(|(_, kept)| !kept));
        let six = Some(crate::PDB_SPLIT_FORMAT);
        assert_eq!(store.formats_kind(&partition, kind), [six]);
        let status = store.status(&partition, kind);
        assert!(
            status.iter().all(|(_, s)| *s == TableStatus::Ok),
            "{status:?}"
        );
        let _ = std::fs::remove_dir_all(store.dir());
    }
}
