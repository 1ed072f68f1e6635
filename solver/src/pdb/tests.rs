//! The tables against plain searches, the file format against corruption, the carried
//! ranks against ranks computed afresh.

use super::build::UNSEEN;
use super::file::MAGIC;
use super::packing::*;
use super::*;
use crate::board::step;
use crate::heuristic::Heuristic;
use crate::moves::Move;

#[test]
fn rank_and_unrank_are_inverse() {
    let shape = Shape::new(3, 3).unwrap();
    let db = PatternDb::new(shape, &[1, 2, 3], BlankGoal::Home, Arc::from(Vec::new()));
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

/// Distances by the plainest construction: a 0-1 breadth-first search over every (placement,
/// blank cell) state, one blank step at a time (free into a cell no pattern tile holds, 1 for
/// sliding a pattern tile). `dist[rank * n + blank]`.
pub(super) fn reference_distances(shape: Shape, tiles: &[u8]) -> Vec<u8> {
    let n = shape.cells();
    let k = tiles.len();
    let shell = PatternDb::new(shape, tiles, BlankGoal::Home, Arc::from(Vec::new()));
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
    dist
}

/// The plainest possible construction of a table: [`reference_distances`], then the minimum
/// over the blank.
fn reference_table(shape: Shape, tiles: &[u8]) -> Vec<u8> {
    let dist = reference_distances(shape, tiles);
    dist.chunks(shape.cells())
        .map(|c| *c.iter().min().unwrap())
        .collect()
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
        let db = PatternDb::new(shape, &tiles, BlankGoal::Home, Arc::from(Vec::new()));
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
fn the_histogram_counts_every_value_of_the_table() {
    let shape = Shape::new(3, 3).unwrap();
    let db = PatternDb::build(shape, &[1, 2, 3, 4], |_, _| {}).unwrap();
    let values = db.values();
    let histogram = db.histogram();
    let mut counts = [0u64; 256];
    values.iter().for_each(|&v| counts[v as usize] += 1);
    assert_eq!(histogram.counts, counts);
    assert_eq!(histogram.entries(), PatternDb::entries(shape, 4));
    assert_eq!(Some(&histogram.max()), values.iter().max());
    let mean = values.iter().map(|&v| v as f64).sum::<f64>() / values.len() as f64;
    assert!((histogram.mean() - mean).abs() < 1e-9);
    assert!(
        histogram.max() > 0,
        "a 4-tile table of the 8-puzzle has non-zero entries"
    );
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
    // A format 3 file: the same header without the blank's byte (its tables are all blank-home).
    let current = db.to_bytes();
    let blank_byte = MAGIC.len() + 4 + 3 + 4;
    assert_eq!(current[blank_byte], 0, "the blank-home byte");
    let mut three = current.clone();
    three.remove(blank_byte);
    three[MAGIC.len()..MAGIC.len() + 4].copy_from_slice(&3u32.to_le_bytes());
    let back = PatternDb::from_bytes(&three, shape, &[1, 2, 3, 4]).unwrap();
    assert_eq!(
        (back.table(), back.blank_goal()),
        (db.table(), BlankGoal::Home)
    );
    // Formats 5 and 6 are read too (zero-aware tables, `zero_tests`, `split_tests`); 7 is not.
    for version in [1u32, SPLIT_FORMAT + 1] {
        let mut other = db.to_bytes();
        other[MAGIC.len()..MAGIC.len() + 4].copy_from_slice(&version.to_le_bytes());
        let err = PatternDb::from_bytes(&other, shape, &[1, 2, 3, 4]).unwrap_err();
        assert_eq!(
            err,
            PdbError::Version {
                found: version,
                oldest: 2,
                newest: SPLIT_FORMAT
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
pub(super) fn walk_comparing_with_full_evaluation<
    H: Heuristic<State: PartialEq + std::fmt::Debug>,
>(
    pdb: &H,
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

/// The sparse layout holds the dense table's values: on every state of the 8-puzzle, and
/// carried move by move (its index changes without the board) on square and wide boards; a
/// sparse table is written to a file as the dense one.
#[test]
fn the_sparse_layout_reads_the_same_values_as_the_dense_one() {
    // Which built-in partitions are read sparse: 5x5's, none of 4x4's.
    for (w, name, sparse) in [
        (5, "6-6-6-6", true),
        (5, "6-6-6-6-kf", true),
        (5, "6-6-6-6-c", true),
        (4, "7-8", false),
        (4, "6-6-3", false),
        (4, "5-5-5", false),
    ] {
        let shape = Shape::new(w, w).unwrap();
        let partition = Partition::named(shape, name).unwrap();
        let all = (partition.patterns.iter()).all(|p| super::sparse::worth_it(shape, p.len()));
        assert_eq!(all, sparse, "{shape} {name}");
    }
    for (w, h, patterns) in [
        (3, 3, vec![vec![1u8, 3, 5, 7], vec![2, 4, 6, 8]]),
        (4, 2, vec![vec![1u8, 3, 5, 7], vec![2, 4, 6]]),
        (3, 4, vec![vec![1u8, 2, 3, 4, 5, 6], vec![7, 8, 9, 10, 11]]),
    ] {
        let shape = Shape::new(w, h).unwrap();
        let dbs: Vec<PatternDb> = (patterns.iter())
            .map(|p| PatternDb::build(shape, p, |_, _| {}).unwrap())
            .collect();
        let dense = PdbHeuristic::with_layout(dbs.clone(), true, |_, _| false).unwrap();
        let sparse = PdbHeuristic::with_layout(dbs, true, |_, _| true).unwrap();
        for (s, d) in sparse.tables().iter().zip(dense.tables()) {
            assert!(s.is_sparse() && !d.is_sparse());
            // Written back dense, with every value in rank order.
            assert_eq!(s.to_bytes(), d.to_bytes());
            assert_eq!(s.values(), d.values());
        }
        if shape.cells() == 9 {
            for (cells, distance) in every_state_with_its_distance(shape) {
                let (value, _) = sparse.evaluate(&cells);
                assert_eq!(value, dense.evaluate(&cells).0, "{shape} {cells:?}");
                assert!(value <= distance);
            }
        }
        walk_comparing_with_full_evaluation(&sparse, shape, 13, 20_000);
        // Sparse tables handed to a dense heuristic are read dense, not misread.
        let again = PdbHeuristic::with_layout(sparse.tables().to_vec(), true, |_, _| false);
        let again = again.unwrap();
        assert!(again.tables().iter().all(|db| !db.is_sparse()));
        walk_comparing_with_full_evaluation(&again, shape, 17, 2_000);
        let mut rng = 0x5eed_u64;
        let mut cells: Vec<u8> = (0..shape.cells() as u8).collect();
        for _ in 0..20_000 {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let blank = cells.iter().position(|&c| c == 0).unwrap();
            let mv = Move::ALL[(rng >> 33) as usize % 4];
            if let Some(to) = step(shape, blank, mv) {
                cells.swap(blank, to);
                assert_eq!(sparse.evaluate(&cells).0, dense.evaluate(&cells).0);
            }
        }
    }
}

/// A partition's heuristic with the dual lookups, every table built here.
fn with_dual_lookups(partition: &Partition) -> PdbHeuristic {
    let plain = PdbHeuristic::build(partition, true, |_, _, _| {}).unwrap();
    let tables = (partition.dual_tables().iter())
        .map(|t| {
            PatternDb::build_for(partition.shape, &t.tiles, BlankGoal::Free, |_, _| {}).unwrap()
        })
        .collect();
    plain.with_dual(partition, tables).unwrap()
}

/// Every state reachable from the goal (blank on cell 0), with its distance: a breadth-first
/// search over whole boards.
pub(super) fn every_state_with_its_distance(shape: Shape) -> Vec<(Vec<u8>, u32)> {
    let goal: Vec<u8> = (0..shape.cells() as u8).collect();
    let mut seen = std::collections::HashSet::from([goal.clone()]);
    let mut out = vec![(goal, 0)];
    let mut i = 0;
    while i < out.len() {
        let (cells, d) = out[i].clone();
        let blank = cells.iter().position(|&c| c == 0).unwrap();
        for mv in Move::ALL {
            if let Some(to) = step(shape, blank, mv) {
                let mut next = cells.clone();
                next.swap(blank, to);
                if seen.insert(next.clone()) {
                    out.push((next, d + 1));
                }
            }
        }
        i += 1;
    }
    out
}

/// The dual lookups on every state of the small boards: never above the true distance, with
/// the parity of the true distance, and above the regular and reflected lookups on some.
#[test]
fn dual_lookups_are_admissible_on_every_state_of_the_small_boards() {
    for (w, h, name) in [(3, 3, "4-4"), (2, 4, "3-4"), (4, 2, "3-4")] {
        let shape = Shape::new(w, h).unwrap();
        let partition = Partition::named(shape, name).unwrap();
        let plain = PdbHeuristic::build(&partition, true, |_, _, _| {}).unwrap();
        let dual = with_dual_lookups(&partition);
        assert!(dual.has_dual() && !plain.has_dual());
        let dual = PdbAll(dual);
        let states = every_state_with_its_distance(shape);
        assert_eq!(states.len(), (1..=shape.cells()).product::<usize>() / 2);
        let mut raised = 0;
        for (cells, distance) in &states {
            let (with, _) = dual.evaluate(cells);
            let (without, _) = plain.evaluate(cells);
            assert!(with <= *distance, "{shape} {cells:?}: {with} > {distance}");
            assert_eq!(with % 2, distance % 2, "{shape} {cells:?}");
            assert!(with >= without);
            raised += usize::from(with > without);
        }
        assert!(
            raised > states.len() / 20,
            "{shape}: dual raised only {raised}"
        );
        eprintln!(
            "{shape} {name}: the dual lookups raise {raised} of {} states",
            states.len()
        );
    }
}

/// With the dual lookups the values carried move by move still equal those computed afresh.
#[test]
fn dual_lookups_carried_match_full_evaluation() {
    let shape = Shape::new(3, 3).unwrap();
    let dual = PdbAll(with_dual_lookups(&Partition::named(shape, "4-4").unwrap()));
    walk_comparing_with_full_evaluation(&dual, shape, 7, 3000);
}

/// The max over partitions carries each one's ranks move by move: equal to a full evaluation
/// after every move, on a square board (reflected lookups) and on a wide one.
#[test]
fn the_max_over_partitions_carried_matches_full_evaluation() {
    for (w, h, patterns) in [
        (3, 3, [vec![1u8, 3, 5, 7], vec![2, 4, 6, 8]]),
        (4, 2, [vec![1u8, 3, 5, 7], vec![2, 4, 6]]),
    ] {
        let shape = Shape::new(w, h).unwrap();
        let name = if w == h { "4-4" } else { "3-4" };
        let first =
            PdbHeuristic::build(&Partition::named(shape, name).unwrap(), true, |_, _, _| {});
        let other = Partition {
            name: "other".into(),
            shape,
            patterns: patterns.to_vec(),
        };
        let second = PdbHeuristic::build(&other, true, |_, _, _| {}).unwrap();
        let both = first.unwrap().with_also(second).unwrap();
        let max = PdbMax::<2>::new(&both).unwrap();
        assert!(PdbMax::<3>::new(&both).is_none());
        walk_comparing_with_full_evaluation(&max, shape, 11, 3000);
    }
}

/// Tables with the blank free are never above those with the blank home, and equal them when
/// the goal leaves one free region (which is when `dual_tables` does not list them).
#[test]
fn blank_free_tables_are_at_most_the_blank_home_ones() {
    let shape = Shape::new(3, 3).unwrap();
    for tiles in [vec![1u8, 2, 3, 4], vec![5, 6, 7, 8], vec![1, 3, 4]] {
        let home = PatternDb::build(shape, &tiles, |_, _| {}).unwrap();
        let free = PatternDb::build_for(shape, &tiles, BlankGoal::Free, |_, _| {}).unwrap();
        let (h, f) = (home.values(), free.values());
        assert!(h.iter().zip(&f).all(|(h, f)| f <= h), "{tiles:?}");
        let listed = (Partition {
            name: "test".into(),
            shape,
            patterns: vec![tiles.clone()],
        })
        .dual_tables()
        .iter()
        .any(|t| t.without.is_none());
        assert_eq!(listed, h != f, "{tiles:?}");
    }
}

/// A blank-free table's file says so, and is refused where a blank-home table is expected.
#[test]
fn a_blank_free_table_is_not_read_as_a_blank_home_one() {
    let shape = Shape::new(3, 3).unwrap();
    let free = PatternDb::build_for(shape, &[1, 2, 3, 4], BlankGoal::Free, |_, _| {}).unwrap();
    let bytes = free.to_bytes();
    assert!(PatternDb::read_from(&bytes[..], shape, &[1, 2, 3, 4]).is_err());
    let back = PatternDb::read_table(&bytes[..], shape, &[1, 2, 3, 4], BlankGoal::Free).unwrap();
    assert_eq!(back.values(), free.values());
    assert_eq!(back.blank_goal(), BlankGoal::Free);
}

/// Two partitions of the same tiles, every table forced into the sparse layout: on a square
/// board (reflected lookups) and on a wide one.
fn sparse_pairs() -> Vec<(Shape, PdbHeuristic)> {
    [
        (3, 3, "4-4", vec![vec![1u8, 3, 5, 7], vec![2, 4, 6, 8]]),
        (4, 2, "3-4", vec![vec![1u8, 3, 5, 7], vec![2, 4, 6]]),
    ]
    .into_iter()
    .map(|(w, h, name, other)| {
        let shape = Shape::new(w, h).unwrap();
        let sparse = |patterns: &[Vec<u8>]| {
            let dbs = (patterns.iter())
                .map(|p| PatternDb::build(shape, p, |_, _| {}).unwrap())
                .collect();
            PdbHeuristic::with_layout(dbs, true, |_, _| true).unwrap()
        };
        let first = sparse(&Partition::named(shape, name).unwrap().patterns);
        (shape, first.with_also(sparse(&other)).unwrap())
    })
    .collect()
}

/// The compact max carries, move by move, what a full evaluation gives, and the values of
/// [`PdbMax`] over the same partitions; under a limit it stops only above it.
#[test]
fn the_compact_max_carries_the_values_of_the_max() {
    for (shape, both) in sparse_pairs() {
        assert!(both.tables().iter().all(PatternDb::is_sparse));
        let compact = SparseMax::<2>::new(&both).unwrap();
        let max = PdbMax::<2>::new(&both).unwrap();
        walk_comparing_with_full_evaluation(&compact, shape, 11, 3000);
        let mut seed = 5u64;
        let mut cells: Vec<u8> = (0..shape.cells() as u8).collect();
        let mut blank = 0usize;
        let (mut h, mut state) = compact.evaluate(&cells);
        let (mut max_h, mut max_state) = max.evaluate(&cells);
        assert_eq!(h, max_h);
        for step_no in 0..3000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let Some(to) = step(shape, blank, Move::ALL[(seed >> 33) as usize % 4]) else {
                continue;
            };
            let label = cells[to];
            (max_h, max_state) = max.after_move(max_h, &max_state, label, to, blank, false);
            for limit in [max_h.saturating_sub(1), max_h] {
                let (within, _) =
                    compact.after_move_within(h, &state, label, to, blank, false, limit);
                match max_h > limit {
                    true => assert!(within > limit, "{shape} after {step_no} moves"),
                    false => assert_eq!(within, max_h, "{shape} after {step_no} moves"),
                }
            }
            (h, state) = compact.after_move(h, &state, label, to, blank, false);
            assert_eq!(h, max_h, "{shape} after {step_no} moves");
            cells.swap(blank, to);
            blank = to;
        }
    }
}

/// The compact max takes only what it can carry: sparse tables, at most four patterns a
/// partition, the same tiles in every partition, as many partitions as it is for.
#[test]
fn the_compact_max_refuses_what_it_cannot_carry() {
    let (shape, both) = sparse_pairs().remove(0);
    assert!(SparseMax::<2>::new(&both).is_some());
    assert!(SparseMax::<3>::new(&both).is_none());
    let build = |patterns: &[&[u8]], sparse: bool| {
        let dbs = (patterns.iter())
            .map(|p| PatternDb::build(shape, p, |_, _| {}).unwrap())
            .collect();
        PdbHeuristic::with_layout(dbs, true, move |_, _| sparse).unwrap()
    };
    let halves: &[&[u8]] = &[&[1, 2, 3, 4], &[5, 6, 7, 8]];
    let dense = build(halves, false)
        .with_also(build(halves, false))
        .unwrap();
    assert!(SparseMax::<2>::new(&dense).is_none());
    assert!(PdbMax::<2>::new(&dense).is_some());
    let fewer = build(halves, true)
        .with_also(build(&[&[1, 2, 3, 4]], true))
        .unwrap();
    assert!(SparseMax::<2>::new(&fewer).is_none());
    let five: &[&[u8]] = &[&[1, 2], &[3, 4], &[5, 6], &[7], &[8]];
    let many = build(five, true).with_also(build(halves, true)).unwrap();
    assert!(SparseMax::<2>::new(&many).is_none());
}

/// The search over the compact max (the engine the 5x5 tables get) returns optimal paths:
/// every one replayed to the goal, its length that of a search with the Manhattan distance.
#[test]
fn the_search_over_the_compact_max_is_optimal() {
    use crate::{Board, Goal, HeuristicKind, Limits, SearchOutcome, Solver};
    let (shape, both) = sparse_pairs().remove(0);
    let goal = Goal::from_board(Board::new(shape, &(0..9).collect::<Vec<u8>>()).unwrap());
    let pdb = Solver::with_pdb(goal, both).unwrap();
    let plain = Solver::new(goal, HeuristicKind::Manhattan).unwrap();
    let mut seed = 17u64;
    for _ in 0..40 {
        let mut cells: Vec<u8> = (0..9).collect();
        let mut blank = 0usize;
        for _ in 0..60 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if let Some(to) = step(shape, blank, Move::ALL[(seed >> 33) as usize % 4]) {
                cells.swap(blank, to);
                blank = to;
            }
        }
        let board = Board::new(shape, &cells).unwrap();
        let length = |solver: &Solver| {
            let report = solver.solve(&board, &Limits::default()).unwrap();
            let SearchOutcome::Solved(path) = report.outcome else {
                panic!("{board:?} not solved");
            };
            assert!(
                board.verify(&path, &goal).unwrap().reaches_goal,
                "{board:?}"
            );
            path.len()
        };
        assert_eq!(length(&pdb), length(&plain), "{board:?}");
    }
}
