//! The pattern databases a worker serves. Where they live on disk and how they are loaded,
//! verified and rebuilt is [`npuzzle_solver::store`], re-exported here (`TableStore`,
//! `StoreError`, `table_shapes`, `preferred_partitions`) for the code that names them
//! through this crate.

use std::collections::BTreeMap;

use npuzzle_solver::{Partition, PdbHeuristic, Shape};

pub use npuzzle_solver::store::{StoreError, TableStore, preferred_partitions, table_shapes};

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
    use std::path::PathBuf;

    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("npuzzle-tables-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
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
