//! Where pattern databases live on disk, and how they are loaded: each table of a partition is
//! one file in the table directory (`--pdb-dir`, env `NPUZZLE_PDB_DIR`, default
//! `~/.cache/npuzzle/pdb`), named `{WxH}-{partition}-{i}.pdb`. A file is verified on load
//! (header, size, checksum, shape and pattern; see `npuzzle_solver::PatternDb::from_bytes`) and
//! never trusted otherwise: a missing, truncated, corrupt or mismatched file is rebuilt when
//! building is allowed, else refused with an error naming the file.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use npuzzle_solver::{Partition, PatternDb, PdbError, PdbHeuristic, Shape};

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
        (5, 5) => &["6-6-6-6"],
        (3, 3) => &["4-4"],
        (2, 4) | (4, 2) => &["3-4"],
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

    /// Whether every file of the partition exists (not yet verified).
    pub fn has(&self, partition: &Partition) -> bool {
        (0..partition.patterns.len()).all(|i| self.path(partition, i).is_file())
    }

    fn load_table(&self, partition: &Partition, i: usize) -> Result<PatternDb, StoreError> {
        let path = self.path(partition, i);
        let bytes = std::fs::read(&path).map_err(|source| StoreError::Io {
            path: path.clone(),
            source,
        })?;
        PatternDb::from_bytes(&bytes, partition.shape, &partition.patterns[i])
            .map_err(|source| StoreError::Table { path, source })
    }

    fn save_table(
        &self,
        partition: &Partition,
        i: usize,
        db: &PatternDb,
    ) -> Result<(), StoreError> {
        let path = self.path(partition, i);
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        // Write beside, then rename: a crash never leaves a half-written table under the name.
        let tmp = path.with_extension("pdb.tmp");
        std::fs::write(&tmp, db.to_bytes()).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)
    }

    /// Loads a partition's tables; a table that is missing or fails verification is rebuilt
    /// (and saved) when `build` is set, else an error names it. `on_build(i, done, total)`
    /// reports building progress.
    pub fn load(
        &self,
        partition: &Partition,
        reflect: bool,
        build: bool,
        mut on_build: impl FnMut(usize, u64, u64),
    ) -> Result<PdbHeuristic, StoreError> {
        // Reading and verifying the files is most of the start-up time: do them side by side.
        let loaded: Vec<Result<PatternDb, StoreError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..partition.patterns.len())
                .map(|i| scope.spawn(move || self.load_table(partition, i)))
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
                    let db = PatternDb::build(partition.shape, tiles, |d, t| on_build(i, d, t))?;
                    self.save_table(partition, i, &db)?;
                    dbs.push(db);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(PdbHeuristic::new(dbs, reflect)?)
    }

    /// The strongest partition whose files are all present, loaded and verified.
    pub fn best(&self, shape: Shape) -> Result<(Partition, PdbHeuristic), StoreError> {
        for name in preferred_partitions(shape) {
            let partition = Partition::named(shape, name)?;
            if self.has(&partition) {
                let pdb = self.load(&partition, true, false, |_, _, _| {})?;
                return Ok((partition, pdb));
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
}

/// The pattern databases a worker serves: for each shape of [`table_shapes`] whose files are
/// present, the strongest partition, loaded and verified once per process and shared (the
/// tables live behind `Arc`s) by every search thread.
#[derive(Clone, Debug, Default)]
pub struct ServedTables {
    by_shape: BTreeMap<Shape, (Partition, PdbHeuristic)>,
}

impl ServedTables {
    /// Loads what `store` holds, never building anything. A shape without files is skipped
    /// quietly; a shape whose files fail to load (missing piece, truncated, corrupt, mismatched)
    /// is skipped with a warning that names the file, and the worker serves it with the other
    /// heuristics only.
    pub fn load(store: &TableStore) -> ServedTables {
        ServedTables::load_only(store, None)
    }

    /// [`ServedTables::load`], for the shapes in `only` (all shapes when `None`).
    pub fn load_only(
        store: &TableStore,
        only: Option<&std::collections::BTreeSet<Shape>>,
    ) -> ServedTables {
        let mut by_shape = BTreeMap::new();
        // Every shape's tables load side by side.
        let started = std::time::Instant::now();
        let loaded: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = table_shapes()
                .into_iter()
                .filter(|shape| only.is_none_or(|o| o.contains(shape)))
                .map(|shape| scope.spawn(move || (shape, store.best_shared(shape))))
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        for (shape, result) in loaded {
            match result {
                Ok((partition, pdb)) => {
                    tracing::info!(
                        %shape,
                        partition = %partition.name,
                        millis = started.elapsed().as_millis() as u64,
                        "pattern databases loaded"
                    );
                    by_shape.insert(shape, (partition, pdb));
                }
                Err(StoreError::Missing { .. }) => {
                    tracing::debug!(%shape, dir = %store.dir.display(), "no pattern databases")
                }
                Err(e) => tracing::warn!(
                    %shape,
                    "pattern databases not served (md, lc and exact still are): {e}"
                ),
            }
        }
        ServedTables { by_shape }
    }

    /// The tables for boards of `shape`, if served.
    pub fn get(&self, shape: Shape) -> Option<&PdbHeuristic> {
        self.by_shape.get(&shape).map(|(_, pdb)| pdb)
    }

    /// The partitions served, one per shape.
    pub fn partitions(&self) -> impl Iterator<Item = &Partition> {
        self.by_shape.values().map(|(partition, _)| partition)
    }

    pub fn is_empty(&self) -> bool {
        self.by_shape.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("npuzzle-tables-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
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
    fn a_worker_serves_what_verifies_and_skips_a_corrupt_shape() {
        let shape = Shape::new(3, 3).unwrap();
        let good = TableStore::new(Some(temp_dir("served")));
        assert!(ServedTables::load(&good).is_empty());
        let partition = Partition::named(shape, "4-4").unwrap();
        good.load(&partition, true, true, |_, _, _| {}).unwrap();
        let served = ServedTables::load(&good);
        assert!(served.get(shape).is_some());
        assert!(served.get(Shape::new(4, 4).unwrap()).is_none());
        let names: Vec<String> = served.partitions().map(|p| p.name.clone()).collect();
        assert_eq!(names, ["4-4"]);
        // Loaded once per process: a second load shares the same tables.
        let again = ServedTables::load(&good);
        assert!(std::ptr::eq(
            again.get(shape).unwrap().tables()[0].table(),
            served.get(shape).unwrap().tables()[0].table()
        ));

        let bad = TableStore::new(Some(temp_dir("served-corrupt")));
        bad.load(&partition, true, true, |_, _, _| {}).unwrap();
        let path = bad.path(&partition, 0);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(ServedTables::load(&bad).is_empty());
        let _ = std::fs::remove_dir_all(good.dir());
        let _ = std::fs::remove_dir_all(bad.dir());
    }
}
