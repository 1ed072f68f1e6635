//! Zero-aware tables against a plain search over every (placement, blank cell) state, against
//! the per-placement tables, against the exact distances of every state of the small boards,
//! and the values [`ZeroMax`] carries against values computed afresh.

use super::tests::{
    every_state_with_its_distance, reference_distances, walk_comparing_with_full_evaluation,
};
use super::*;
use crate::board::step;
use crate::heuristic::Heuristic;
use crate::moves::Move;

/// The small boards with their partitions.
fn small_boards() -> Vec<(Shape, Partition)> {
    [(3, 3, "4-4"), (2, 4, "3-4"), (4, 2, "3-4")]
        .into_iter()
        .map(|(w, h, name)| {
            let shape = Shape::new(w, h).unwrap();
            (shape, Partition::named(shape, name).unwrap())
        })
        .collect()
}

fn zero_aware(partition: &Partition) -> PdbHeuristic {
    let dbs = (partition.patterns.iter())
        .map(|p| PatternDb::build_zero_aware(partition.shape, p, |_, _| {}).unwrap())
        .collect();
    PdbHeuristic::new(dbs, true).unwrap()
}

/// The same tables read in the split layout (`sparse`) or in their own index.
fn zero_aware_in(partition: &Partition, sparse: bool) -> PdbHeuristic {
    let dbs = (partition.patterns.iter())
        .map(|p| PatternDb::build_zero_aware(partition.shape, p, |_, _| {}).unwrap())
        .collect();
    PdbHeuristic::with_layout(dbs, true, |_, _| sparse).unwrap()
}

/// `position[label]` for tiles `tiles` on `cells` and the blank on `blank`.
fn position_of(tiles: &[u8], cells: &[u8], blank: usize) -> [u8; 32] {
    let mut position = [0u8; 32];
    position[0] = blank as u8;
    for (&t, &c) in tiles.iter().zip(cells) {
        position[t as usize] = c;
    }
    position
}

/// Every entry of a built zero-aware table is the distance of the plain search from its
/// placement with the blank anywhere in its region (the same on every cell of the region), and
/// the per-placement table's entry is the least of its regions'.
#[test]
fn zero_aware_entries_are_the_distances_of_a_plain_search() {
    for (shape, partition) in small_boards() {
        for tiles in &partition.patterns {
            let n = shape.cells();
            let k = tiles.len();
            let zero = PatternDb::build_zero_aware(shape, tiles, |_, _| {}).unwrap();
            let per_placement = PatternDb::build(shape, tiles, |_, _| {}).unwrap();
            assert_eq!(zero.kind(), TableKind::ZeroAware);
            assert_eq!(zero.len(), zero.regions().unwrap().entries());
            let dist = reference_distances(shape, tiles);
            let mut cells = [0u8; 32];
            let mut above = 0;
            for rank in 0..PatternDb::entries(shape, k) {
                zero.unrank(rank, &mut cells);
                let occupied = cells[..k].iter().fold(0u32, |m, &c| m | 1 << c);
                let mut least = u32::MAX;
                for blank in (0..n).filter(|&b| occupied & (1 << b) == 0) {
                    let position = position_of(tiles, &cells[..k], blank);
                    let value = zero.lookup(&position);
                    assert_eq!(
                        value,
                        dist[rank as usize * n + blank],
                        "{shape} {tiles:?} {:?} blank {blank}",
                        &cells[..k]
                    );
                    least = least.min(u32::from(value));
                    let floor = per_placement.lookup(&position);
                    assert!(value >= floor);
                    above += usize::from(value > floor);
                }
                let position = position_of(tiles, &cells[..k], 0);
                assert_eq!(u32::from(per_placement.lookup(&position)), least);
            }
            eprintln!("{shape} {tiles:?}: {above} (placement, blank) states above the minimum");
        }
    }
}

/// A table's values change by at most one across a pattern tile's move (its cost) and not at
/// all across a move inside the blank's region: the per-region values are consistent.
#[test]
fn per_region_values_change_by_at_most_the_cost_of_a_move() {
    for (shape, partition) in small_boards() {
        for tiles in &partition.patterns {
            let k = tiles.len();
            let zero = PatternDb::build_zero_aware(shape, tiles, |_, _| {}).unwrap();
            let mut cells = [0u8; 32];
            for rank in 0..PatternDb::entries(shape, k) {
                zero.unrank(rank, &mut cells);
                for blank in 0..shape.cells() {
                    if cells[..k].contains(&(blank as u8)) {
                        continue;
                    }
                    let here = zero.lookup(&position_of(tiles, &cells[..k], blank));
                    for mv in Move::ALL {
                        let Some(to) = step(shape, blank, mv) else {
                            continue;
                        };
                        let mut moved = cells;
                        let cost = match cells[..k].iter().position(|&c| c as usize == to) {
                            Some(i) => {
                                moved[i] = blank as u8;
                                1
                            }
                            None => 0,
                        };
                        let there = zero.lookup(&position_of(tiles, &moved[..k], to));
                        assert!(here.abs_diff(there) <= cost, "{shape} {tiles:?}");
                    }
                }
            }
        }
    }
}

/// On every state of the small boards the zero-aware sum (with the reflected lookup) is at
/// most the true distance, of its parity, at least the per-placement sum, and above it on
/// some states; the carried [`ZeroMax`] gives the value computed afresh.
#[test]
fn zero_aware_tables_are_admissible_on_every_state_of_the_small_boards() {
    for (shape, partition) in small_boards() {
        let zero = zero_aware(&partition);
        let plain = PdbHeuristic::build(&partition, true, |_, _, _| {}).unwrap();
        let carried = ZeroMax::<1>::new(&zero).unwrap();
        let states = every_state_with_its_distance(shape);
        assert_eq!(states.len(), (1..=shape.cells()).product::<usize>() / 2);
        let mut raised = 0;
        for (cells, distance) in &states {
            let (z, _) = zero.evaluate(cells);
            let (p, _) = plain.evaluate(cells);
            let (c, _) = carried.evaluate(cells);
            assert!(z <= *distance, "{shape} {cells:?}: {z} > {distance}");
            assert_eq!(z % 2, distance % 2, "{shape} {cells:?}");
            assert!(z >= p, "{shape} {cells:?}");
            assert_eq!(c, z, "{shape} {cells:?}");
            raised += usize::from(z > p);
        }
        assert!(raised > 0, "{shape}: zero-aware raised no state");
        eprintln!(
            "{shape} {}: zero-aware above per-placement on {raised} of {} states",
            partition.name,
            states.len()
        );
    }
}

/// What [`ZeroMax`] carries move by move equals its evaluation afresh, with one partition
/// and with two under the max, on the small boards and on 4x4.
#[test]
fn the_carried_zero_aware_max_matches_full_evaluation() {
    for (shape, partition) in small_boards() {
        let zero = zero_aware(&partition);
        walk_comparing_with_full_evaluation(&ZeroMax::<1>::new(&zero).unwrap(), shape, 5, 3000);
        let two = zero.clone().with_also(zero.clone()).unwrap();
        walk_comparing_with_full_evaluation(&ZeroMax::<2>::new(&two).unwrap(), shape, 9, 2000);
        // The partition's own lookups, evaluated afresh at every move, agree too.
        walk_comparing_with_full_evaluation(&zero, shape, 11, 500);
    }
    let shape = Shape::new(4, 4).unwrap();
    let a = zero_aware(&Partition::named(shape, "5-5-5").unwrap());
    let b = zero_aware(&Partition::named(shape, "6-6-3").unwrap());
    let both = a.clone().with_also(b.clone()).unwrap();
    let carried = ZeroMax::<2>::new(&both).unwrap();
    walk_comparing_with_full_evaluation(&carried, shape, 3, 4000);
    // And each partition's value is what its own lookups give from scratch.
    let mut cells: Vec<u8> = (0..16).collect();
    let mut blank = 0;
    let mut seed = 41u64;
    for _ in 0..500 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        if let Some(to) = step(shape, blank, Move::ALL[(seed >> 33) as usize % 4]) {
            cells.swap(blank, to);
            blank = to;
        }
        let expected = a.evaluate(&cells).0.max(b.evaluate(&cells).0);
        assert_eq!(carried.evaluate(&cells).0, expected, "{cells:?}");
    }
}

/// The search over zero-aware tables returns optimal paths: every one replayed to the goal, at
/// the exact distance (3x3: the table of every state; 4x4: the per-placement tables' search).
#[test]
fn the_search_over_zero_aware_tables_is_optimal() {
    use crate::{Board, ExactDistance, Goal, Limits, SearchOutcome, Solver};
    let solve = |solver: &Solver, board: &Board, goal: &Goal| {
        let report = solver.solve(board, &Limits::default()).unwrap();
        let SearchOutcome::Solved(path) = report.outcome else {
            panic!("{board:?} not solved");
        };
        assert!(board.verify(&path, goal).unwrap().reaches_goal, "{board:?}");
        path.len()
    };
    let mut seed = 23u64;
    for (w, h, names, walk) in [
        (3, 3, &["4-4"][..], 60),
        (4, 4, &["5-5-5", "6-6-3"][..], 40),
    ] {
        let shape = Shape::new(w, h).unwrap();
        let n = shape.cells();
        let goal = Goal::from_board(Board::new(shape, &(0..n as u8).collect::<Vec<_>>()).unwrap());
        let mut zero: Option<PdbHeuristic> = None;
        let mut plain: Option<PdbHeuristic> = None;
        for name in names {
            let partition = Partition::named(shape, name).unwrap();
            let z = zero_aware(&partition);
            let p = PdbHeuristic::build(&partition, true, |_, _, _| {}).unwrap();
            zero = Some(match zero {
                None => z,
                Some(all) => all.with_also(z).unwrap(),
            });
            plain = Some(match plain {
                None => p,
                Some(all) => all.with_also(p).unwrap(),
            });
        }
        let with_zero = Solver::with_pdb(goal, zero.unwrap()).unwrap();
        let reference = match ExactDistance::new(shape, 0) {
            Some(_) => Solver::new(goal, crate::HeuristicKind::Exact).unwrap(),
            None => Solver::with_pdb(goal, plain.unwrap()).unwrap(),
        };
        for _ in 0..30 {
            let mut cells: Vec<u8> = (0..n as u8).collect();
            let mut blank = 0usize;
            for _ in 0..walk {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if let Some(to) = step(shape, blank, Move::ALL[(seed >> 33) as usize % 4]) {
                    cells.swap(blank, to);
                    blank = to;
                }
            }
            let board = Board::new(shape, &cells).unwrap();
            let length = solve(&with_zero, &board, &goal);
            assert_eq!(length, solve(&reference, &board, &goal), "{board:?}");
        }
    }
}

/// A zero-aware table survives its file, is refused where a per-placement one is expected (and
/// the other way round), and a flipped byte is caught.
#[test]
fn zero_aware_files_round_trip_and_say_their_kind() {
    let shape = Shape::new(3, 3).unwrap();
    let tiles = [1u8, 2, 3, 4];
    let zero = PatternDb::build_zero_aware(shape, &tiles, |_, _| {}).unwrap();
    let bytes = zero.to_bytes();
    assert_eq!(PatternDb::format_of(&bytes[..]), Some(ZERO_AWARE_FORMAT));
    let back = PatternDb::read_kind(
        &bytes[..],
        shape,
        &tiles,
        BlankGoal::Home,
        TableKind::ZeroAware,
    )
    .unwrap();
    assert_eq!(back.table(), zero.table());
    assert_eq!(back.kind(), TableKind::ZeroAware);
    let err = PatternDb::from_bytes(&bytes, shape, &tiles).unwrap_err();
    assert!(matches!(err, PdbError::Mismatch { .. }), "{err}");
    let plain = PatternDb::build(shape, &tiles, |_, _| {})
        .unwrap()
        .to_bytes();
    let err = PatternDb::read_kind(
        &plain[..],
        shape,
        &tiles,
        BlankGoal::Home,
        TableKind::ZeroAware,
    )
    .unwrap_err();
    assert!(matches!(err, PdbError::Mismatch { .. }), "{err}");
    let mut corrupt = bytes.clone();
    let at = corrupt.len() - 3;
    corrupt[at] ^= 0x10;
    let err = PatternDb::read_kind(
        &corrupt[..],
        shape,
        &tiles,
        BlankGoal::Home,
        TableKind::ZeroAware,
    )
    .unwrap_err();
    assert_eq!(err, PdbError::Checksum);
}

/// Zero-aware tables are refused beside per-placement ones in a partition, and with the dual
/// lookups.
#[test]
fn zero_aware_tables_do_not_mix() {
    let shape = Shape::new(3, 3).unwrap();
    let zero = PatternDb::build_zero_aware(shape, &[1, 2, 3, 4], |_, _| {}).unwrap();
    let plain = PatternDb::build(shape, &[5, 6, 7, 8], |_, _| {}).unwrap();
    assert!(PdbHeuristic::new(vec![zero, plain], true).is_err());
    let partition = Partition::named(shape, "4-4").unwrap();
    assert!(
        zero_aware(&partition)
            .with_dual(&partition, Vec::new())
            .is_err()
    );
    assert!(
        PdbMax::<2>::new(
            &zero_aware(&partition)
                .with_also(zero_aware(&partition))
                .unwrap()
        )
        .is_none()
    );
}

/// On 5x5 (the board the default engine reads zero-aware tables on), with four-tile patterns
/// small enough to build here: the carried max of two partitions (split, as the default
/// engine reads them, and in their own index) equals its evaluation afresh and each
/// partition's own lookups, and the search's answers are those of linear conflict.
#[test]
fn zero_aware_tables_on_5x5_carry_their_values_and_solve_optimally() {
    const A: [[u8; 4]; 4] = [
        [1, 2, 5, 6],
        [3, 4, 8, 9],
        [10, 11, 15, 16],
        [13, 14, 18, 19],
    ];
    const B: [[u8; 4]; 4] = [
        [1, 5, 10, 11],
        [2, 3, 4, 9],
        [6, 15, 16, 8],
        [13, 14, 18, 19],
    ];
    use crate::{Board, Goal, HeuristicKind, Limits, SearchOutcome, Solver};
    let shape = Shape::new(5, 5).unwrap();
    let partition = |name: &str, patterns: [[u8; 4]; 4]| Partition {
        name: name.into(),
        shape,
        patterns: patterns.iter().map(|p| p.to_vec()).collect(),
    };
    let a = zero_aware(&partition("a", A));
    let b = zero_aware(&partition("b", B));
    let both = a.clone().with_also(b.clone()).unwrap();
    assert!(both.tables().iter().all(PatternDb::is_split));
    assert!(ZeroMax::<2>::new(&both).is_none());
    assert!(SparseMax::<2>::new(&both).is_none());
    let carried = SparseMax::<2, true>::new(&both).unwrap();
    walk_comparing_with_full_evaluation(&carried, shape, 77, 4000);
    let own_index = |name, patterns| zero_aware_in(&partition(name, patterns), false);
    let a_own = own_index("a", A);
    let b_own = own_index("b", B);
    let both_own = a_own.clone().with_also(b_own.clone()).unwrap();
    walk_comparing_with_full_evaluation(&ZeroMax::<2>::new(&both_own).unwrap(), shape, 78, 2000);
    let mut seed = 5u64;
    let goal = Goal::from_board(Board::new(shape, &(0..25).collect::<Vec<u8>>()).unwrap());
    let zero = Solver::with_pdb(goal, both).unwrap();
    let lc = Solver::new(goal, HeuristicKind::LinearConflict).unwrap();
    for _ in 0..8 {
        let mut cells: Vec<u8> = (0..25).collect();
        let mut blank = 0usize;
        for _ in 0..30 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if let Some(to) = step(shape, blank, Move::ALL[(seed >> 33) as usize % 4]) {
                cells.swap(blank, to);
                blank = to;
            }
        }
        let expected = a.evaluate(&cells).0.max(b.evaluate(&cells).0);
        assert_eq!(carried.evaluate(&cells).0, expected, "{cells:?}");
        // Split reads the exact regions' value or less, never less than the least of them.
        let exact = a_own.evaluate(&cells).0.max(b_own.evaluate(&cells).0);
        assert!(expected <= exact, "{cells:?}");
        let board = Board::new(shape, &cells).unwrap();
        let length = |solver: &Solver| {
            let report = solver.solve(&board, &Limits::default()).unwrap();
            let SearchOutcome::Solved(path) = report.outcome else {
                panic!("{board:?} not solved");
            };
            assert!(board.verify(&path, &goal).unwrap().reaches_goal);
            path.len()
        };
        assert_eq!(length(&zero), length(&lc), "{board:?}");
    }
}

/// Split tables (the sparse index, the largest region's value and the least of the others) on
/// every state of the small boards: at most the exact regions' sum (so admissible), of the
/// distance's parity, at least the per-placement sum, equal to the exact sum wherever the
/// blank is in every pattern's largest region; carried by [`SparseMax`] as evaluated afresh.
#[test]
fn split_tables_lie_between_the_per_placement_and_the_exact_regions() {
    for (shape, partition) in small_boards() {
        let exact = zero_aware_in(&partition, false);
        let split = zero_aware_in(&partition, true);
        assert!(split.tables().iter().all(PatternDb::is_split));
        let plain = PdbHeuristic::build(&partition, true, |_, _, _| {}).unwrap();
        let carried = SparseMax::<2, true>::new(&split.clone().with_also(split.clone()).unwrap());
        let carried = carried.unwrap();
        walk_comparing_with_full_evaluation(&carried, shape, 13, 3000);
        let (mut below, mut states) = (0, 0);
        for (cells, distance) in every_state_with_its_distance(shape) {
            let (x, _) = exact.evaluate(&cells);
            let (s, _) = split.evaluate(&cells);
            let (p, _) = plain.evaluate(&cells);
            assert!(
                p <= s && s <= x && x <= distance,
                "{shape} {cells:?}: {p} {s} {x}"
            );
            assert_eq!(s % 2, distance % 2, "{shape} {cells:?}");
            assert_eq!(carried.evaluate(&cells).0, s, "{shape} {cells:?}");
            let blank = cells.iter().position(|&l| l == 0).unwrap();
            // Without the reflected lookup, in the board's own patterns: wherever the blank is
            // in each pattern's largest region, split reads the exact value.
            let in_main = (split.tables().iter()).all(|db| {
                let set = (db.tiles().iter())
                    .map(|&t| cells.iter().position(|&l| l == t).unwrap())
                    .fold(0u32, |m, c| m | 1 << c);
                db.regions().unwrap().in_main(set, blank)
            });
            let own = |h: &PdbHeuristic| {
                let position: Vec<u8> = (0..shape.cells() as u8)
                    .map(|l| cells.iter().position(|&c| c == l).unwrap() as u8)
                    .collect();
                h.tables()
                    .iter()
                    .map(|db| u32::from(db.lookup(&position)))
                    .sum::<u32>()
            };
            if in_main {
                assert_eq!(own(&split), own(&exact), "{shape} {cells:?}");
            }
            below += usize::from(s < x);
            states += 1;
        }
        eprintln!(
            "{shape} {}: split below the exact regions on {below} of {states} states",
            partition.name
        );
    }
}
