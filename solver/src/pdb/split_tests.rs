//! Split tables in their file (format [`SPLIT_FORMAT`]): read back to the same bytes and the same
//! values as the zero-aware table converted as it loads, on every state of the small boards and
//! on random states of 5x5 with four-tile patterns; damaged files are refused.

use super::file::MAGIC;
use super::tests::{every_state_with_its_distance, walk_comparing_with_full_evaluation};
use super::*;
use crate::board::step;
use crate::heuristic::Heuristic;
use crate::moves::Move;

/// The small boards with their partitions, and a 5x5 partition of four-tile patterns.
fn boards() -> Vec<Partition> {
    let mut out: Vec<Partition> = [(3, 3, "4-4"), (2, 4, "3-4"), (4, 2, "3-4")]
        .into_iter()
        .map(|(w, h, name)| Partition::named(Shape::new(w, h).unwrap(), name).unwrap())
        .collect();
    out.push(five_by_five());
    out
}

/// Four patterns of four tiles on 5x5 (those of `zero_tests`' partition `a`): a 5x5 table
/// small enough to build here, which the search reads split as it does the six-tile ones.
fn five_by_five() -> Partition {
    let patterns = [
        [1, 2, 5, 6],
        [3, 4, 8, 9],
        [10, 11, 15, 16],
        [13, 14, 18, 19],
    ];
    Partition {
        name: "a".into(),
        shape: Shape::new(5, 5).unwrap(),
        patterns: patterns.iter().map(|p| p.to_vec()).collect(),
    }
}

fn build_zero_aware(partition: &Partition) -> Vec<PatternDb> {
    (partition.patterns.iter())
        .map(|p| PatternDb::build_zero_aware(partition.shape, p, |_, _| {}).unwrap())
        .collect()
}

fn read(bytes: &[u8], db: &PatternDb) -> Result<PatternDb, PdbError> {
    let kind = TableKind::ZeroAware;
    PatternDb::read_kind(bytes, db.shape(), db.tiles(), BlankGoal::Home, kind)
}

/// Random boards of `shape`, walked `steps` moves from the goal.
fn random_states(shape: Shape, count: usize, steps: usize, mut seed: u64) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let mut cells: Vec<u8> = (0..shape.cells() as u8).collect();
        let mut blank = 0usize;
        for _ in 0..steps {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if let Some(to) = step(shape, blank, Move::ALL[(seed >> 33) as usize % 4]) {
                cells.swap(blank, to);
                blank = to;
            }
        }
        out.push(cells);
    }
    out
}

/// `position[label]` of a board given as `cells[cell]`.
fn position(cells: &[u8]) -> [u8; 32] {
    let mut position = [0u8; 32];
    for (cell, &label) in cells.iter().enumerate() {
        position[label as usize & 31] = cell as u8;
    }
    position
}

/// A split table written in format 6 reads back to the same bytes (the sparse layout's) and
/// writes the same file again; a heuristic over the tables read back gives the values of the
/// zero-aware tables turned split as they load (format 5's way), on every state of the small
/// boards and on random 5x5 states, table by table and summed, evaluated afresh and carried.
#[test]
fn split_files_read_back_to_the_values_of_the_tables_split_at_load() {
    for partition in boards() {
        let shape = partition.shape;
        let zero = build_zero_aware(&partition);
        let split: Vec<PatternDb> = zero.iter().cloned().map(PatternDb::into_split).collect();
        let mut read_back = Vec::new();
        for (z, s) in zero.iter().zip(&split) {
            let bytes = s.to_bytes();
            assert_eq!(PatternDb::format_of(&bytes[..]), Some(SPLIT_FORMAT));
            assert_eq!(s.to_bytes_format(), SPLIT_FORMAT);
            assert_eq!(z.to_bytes_format(), ZERO_AWARE_FORMAT);
            let back = read(&bytes, s).unwrap();
            assert!(back.is_split() && back.kind() == TableKind::ZeroAware);
            assert_eq!(back.table(), s.table(), "{shape} {:?}", s.tiles());
            assert_eq!(back.len(), PatternDb::entries(shape, s.tiles().len()));
            assert_eq!(back.to_bytes(), bytes);
            assert_eq!(back.histogram(), s.histogram());
            read_back.push(back);
        }
        // Format 5's way: the zero-aware tables turned split by the heuristic as it takes them.
        let at_load = PdbHeuristic::with_layout(zero.clone(), true, |_, _| true).unwrap();
        let from_file = PdbHeuristic::with_layout(read_back.clone(), true, |_, _| true).unwrap();
        // A table read from format 6 has no other layout: asked for the dense one (as
        // NPUZZLE_PDB_DENSE=1 does), the heuristic reads it split all the same.
        let dense_asked = PdbHeuristic::with_layout(read_back.clone(), true, |_, _| false).unwrap();
        assert!(dense_asked.tables().iter().all(PatternDb::is_split));
        let states: Vec<Vec<u8>> = match shape.cells() {
            n if n <= 9 => every_state_with_its_distance(shape)
                .into_iter()
                .map(|(cells, _)| cells)
                .collect(),
            _ => random_states(shape, 3000, 200, 11),
        };
        for cells in &states {
            let expected = at_load.evaluate(cells).0;
            assert_eq!(from_file.evaluate(cells).0, expected, "{shape} {cells:?}");
            assert_eq!(dense_asked.evaluate(cells).0, expected, "{shape} {cells:?}");
            let position = position(cells);
            for (a, b) in at_load.tables().iter().zip(from_file.tables()) {
                assert_eq!(
                    a.lookup(&position),
                    b.lookup(&position),
                    "{shape} {cells:?}"
                );
            }
        }
        let carried = SparseMax::<1, true>::new(&from_file).unwrap();
        walk_comparing_with_full_evaluation(&carried, shape, 29, 2000);
    }
}

/// A format 6 file that is cut short, too long, flipped, or whose header lies is refused with
/// an error naming the problem.
#[test]
fn damaged_split_files_are_refused() {
    let partition = five_by_five();
    let tiles = &partition.patterns[0];
    let db = PatternDb::build_zero_aware(partition.shape, tiles, |_, _| {})
        .unwrap()
        .into_stored();
    assert!(db.is_split());
    let bytes = db.to_bytes();
    let header = MAGIC.len() + 4 + 3 + tiles.len() + 2 + 16;
    assert_eq!(
        bytes.len() as u64,
        header as u64 + PatternDb::entries(partition.shape, tiles.len())
    );

    let err = read(&bytes[..bytes.len() - 1], &db).unwrap_err();
    assert!(
        matches!(&err, PdbError::Truncated(what) if what.contains("table")),
        "{err}"
    );
    let err = read(&bytes[..header - 3], &db).unwrap_err();
    assert!(
        matches!(&err, PdbError::Truncated(what) if what.contains("checksum")),
        "{err}"
    );
    let mut longer = bytes.clone();
    longer.push(0);
    let err = read(&longer, &db).unwrap_err();
    assert!(
        matches!(&err, PdbError::Truncated(what) if what.contains("after the table")),
        "{err}"
    );
    let mut flipped = bytes.clone();
    let at = header + 1000;
    flipped[at] ^= 0x40;
    assert_eq!(read(&flipped, &db).unwrap_err(), PdbError::Checksum);

    // The entry count of a zero-aware table in its own index, not a placement count.
    let count_at = header - 16;
    let mut count = bytes.clone();
    let regions = Regions::shared(partition.shape, tiles.len()).unwrap();
    count[count_at..count_at + 8].copy_from_slice(&regions.entries().to_le_bytes());
    let err = read(&count, &db).unwrap_err();
    assert!(matches!(&err, PdbError::Mismatch { found, .. } if found.contains("entries")));
    // Format 6 holds zero-aware tables only: its header saying per placement is refused, as is
    // a per-placement table asked of it.
    let mut kind = bytes.clone();
    kind[count_at - 1] = TableKind::PerPlacement.byte();
    let as_placement = |b: &[u8]| {
        PatternDb::read_kind(
            b,
            partition.shape,
            tiles,
            BlankGoal::Home,
            TableKind::PerPlacement,
        )
        .unwrap_err()
    };
    let err = as_placement(&kind);
    assert!(
        matches!(&err, PdbError::Mismatch { expected, .. } if expected.contains("format 6")),
        "{err}"
    );
    assert!(matches!(as_placement(&bytes), PdbError::Mismatch { .. }));
    assert!(matches!(read(&kind, &db), Err(PdbError::Mismatch { .. })));
    // Another pattern's table.
    let other = PatternDb::read_kind(
        &bytes[..],
        partition.shape,
        &partition.patterns[1],
        BlankGoal::Home,
        TableKind::ZeroAware,
    );
    assert!(matches!(other, Err(PdbError::Mismatch { .. })));
}

/// What each table is stored as: split (format 6) only where the search reads zero-aware
/// tables split (5x5), format 5 for the other zero-aware ones, format 4 per placement.
#[test]
fn stored_formats_follow_the_layout_the_search_reads() {
    let five = Shape::new(5, 5).unwrap();
    let four = Shape::new(4, 4).unwrap();
    assert_eq!(
        PatternDb::stored_format(five, 6, TableKind::ZeroAware),
        SPLIT_FORMAT
    );
    assert_eq!(
        PatternDb::stored_format(five, 6, TableKind::PerPlacement),
        FORMAT
    );
    for k in [5, 6, 7, 8] {
        assert_eq!(
            PatternDb::stored_format(four, k, TableKind::ZeroAware),
            ZERO_AWARE_FORMAT
        );
    }
    let three = Shape::new(3, 3).unwrap();
    let db = PatternDb::build_zero_aware(three, &[1, 2, 3, 4], |_, _| {}).unwrap();
    let stored = db.clone().into_stored();
    assert!(!stored.is_split());
    assert_eq!(stored.to_bytes(), db.to_bytes());
}
