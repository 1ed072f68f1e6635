//! Hostile messages for the wire validation: boards with huge or zero widths, thousands of tiles,
//! tiles far out of range; goals of every kind (unknown ones too) with wrong-length tile lists;
//! unknown enum values; move strings; and arbitrary or corrupted bytes decoded as requests and
//! assignments. Nothing may panic, and every rejection must be a `WireError` whose message names
//! the problem.
//!
//! 10,000 cases per property by default; `PROPTEST_CASES=1000000 cargo test --release -p
//! npuzzle-proto --test fuzz_wire` runs a longer campaign.

use npuzzle_proto::{
    WireError, board_from_wire, board_to_wire, goal_from_wire, heuristic_from_wire,
    last_move_from_wire, moves_from_wire, pattern_database_from_wire, v1,
};
use npuzzle_solver::{ParseError, Shape};
use proptest::prelude::*;
use prost::Message;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

fn side() -> impl Strategy<Value = u32> {
    prop_oneof![
        6 => 2u32..=5,
        2 => 0u32..8,
        1 => any::<u32>(),
        1 => prop::sample::select(vec![u32::MAX, 1 << 16, 1 << 31, 65_537]),
    ]
}

fn permutation(n: usize) -> impl Strategy<Value = Vec<u32>> {
    Just((0..n as u32).collect::<Vec<u32>>()).prop_shuffle()
}

/// Tile lists: short arbitrary ones, small values, a shuffled permutation of `0..n` possibly
/// broken, and thousands of tiles (made cheaply from a seed).
fn tiles(n: usize) -> impl Strategy<Value = Vec<u32>> {
    let n = n.min(64);
    prop_oneof![
        2 => prop::collection::vec(any::<u32>(), 0..40),
        2 => prop::collection::vec(0u32..30, 0..30),
        4 => (permutation(n), 0..6usize, any::<prop::sample::Index>(), any::<u32>())
            .prop_map(move |(mut t, mutation, at, value)| {
                if !t.is_empty() {
                    let i = at.index(t.len());
                    match mutation {
                        0 => { t.remove(i); }
                        1 => t.push(t[i]),
                        2 => t[i] = value,
                        3 => t.push(value),
                        _ => {}
                    }
                }
                t
            }),
        1 => (any::<u32>(), 0usize..10_000).prop_map(|(seed, len)| {
            (0..len as u32).map(|i| seed.wrapping_mul(i.wrapping_add(1)) % 40).collect()
        }),
    ]
}

fn wire_board() -> impl Strategy<Value = v1::Board> {
    (side(), side()).prop_flat_map(|(w, h)| {
        let n = (w as usize).saturating_mul(h as usize);
        tiles(n).prop_map(move |tiles| v1::Board {
            width: w,
            height: h,
            tiles,
        })
    })
}

fn shape() -> impl Strategy<Value = Shape> {
    (2usize..=5, 2usize..=5).prop_map(|(w, h)| Shape::new(w, h).unwrap())
}

fn wire_goal(cells: usize) -> impl Strategy<Value = v1::Goal> {
    (
        prop_oneof![4 => 0i32..3, 1 => any::<i32>()],
        prop_oneof![1 => Just(Vec::new()), 3 => tiles(cells)],
    )
        .prop_map(|(kind, tiles)| v1::Goal { kind, tiles })
}

/// Checks that a rejected board's message names its problem.
fn board_error_names_the_problem(b: &v1::Board, e: &WireError) -> bool {
    let m = e.to_string();
    match e {
        WireError::Shape(_) => m.contains(&format!("{}x{} is not supported", b.width, b.height)),
        WireError::Board(p) => {
            m.starts_with("invalid board: ") && parse_error_names(p, &b.tiles, &m)
        }
        _ => false,
    }
}

fn parse_error_names(p: &ParseError, tiles: &[u32], m: &str) -> bool {
    match p {
        ParseError::Empty => tiles.is_empty() && m.contains("empty board"),
        ParseError::WrongCount { found, .. } => {
            *found == tiles.len() && m.contains(&format!("found {found} tiles"))
        }
        ParseError::TileOutOfRange {
            token, position, ..
        } => {
            tiles.get(*position).map(u32::to_string).as_ref() == Some(token)
                && m.contains(&format!(
                    "tile {token} at position {position} is out of range"
                ))
        }
        ParseError::DuplicateTile { second, .. } => {
            *second < tiles.len() && m.contains("duplicate")
        }
        ParseError::MissingTile { .. } => m.contains("missing"),
        _ => false,
    }
}

/// Runs a decoded request through every conversion the coordinator applies to it.
fn validate_request(r: &v1::SolveRequest) {
    match board_from_wire(r.board.as_ref()) {
        Ok(board) => {
            if let Err(e) = goal_from_wire(r.goal.as_ref(), board.shape()) {
                assert!(
                    e.to_string().starts_with("invalid goal")
                        || e.to_string().starts_with("unknown GoalKind"),
                    "{e}"
                );
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    if let Err(e) = heuristic_from_wire(r.heuristic) {
        assert_eq!(
            e.to_string(),
            format!("unknown Heuristic value {}", r.heuristic)
        );
    }
}

/// The same for an assignment, as a worker checks it.
fn validate_assignment(a: &v1::Assignment) {
    if let Ok(board) = board_from_wire(a.board.as_ref()) {
        let _ = goal_from_wire(a.goal.as_ref(), board.shape())
            .map_err(|e| assert!(!e.to_string().is_empty()));
    }
    let _ = heuristic_from_wire(a.heuristic);
    if let Err(e) = last_move_from_wire(&a.last_move) {
        assert!(
            e.to_string().starts_with("invalid moves: unknown move"),
            "{e}"
        );
    }
}

fn a_request() -> impl Strategy<Value = v1::SolveRequest> {
    (
        prop::option::of(wire_board()),
        prop::option::of(wire_goal(16)),
        prop_oneof![0i32..5, any::<i32>()],
        any::<u64>(),
        any::<bool>(),
        prop_oneof![Just(0.0), Just(1.2), any::<f64>()],
    )
        .prop_map(|(board, goal, heuristic, timeout_ms, skip_cache, within)| {
            v1::SolveRequest {
                board,
                goal,
                heuristic,
                timeout_ms,
                skip_cache,
                within,
            }
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn boards_convert_or_name_the_problem(b in wire_board()) {
        match board_from_wire(Some(&b)) {
            Ok(board) => prop_assert_eq!(board_to_wire(&board), b),
            Err(e) => prop_assert!(board_error_names_the_problem(&b, &e), "{:?} → {}", b, e),
        }
    }

    #[test]
    fn goals_convert_or_say_the_goal_is_invalid(
        (s, g) in shape().prop_flat_map(|s| (Just(s), wire_goal(s.cells()))),
    ) {
        match goal_from_wire(Some(&g), s) {
            Ok(goal) => {
                prop_assert_eq!(goal.shape(), s);
                if g.kind == v1::GoalKind::Custom as i32 {
                    let wire: Vec<u32> = goal.tiles().iter().map(|&t| t as u32).collect();
                    prop_assert_eq!(wire, g.tiles);
                } else {
                    prop_assert!(g.tiles.is_empty());
                }
            }
            Err(e) => {
                let m = e.to_string();
                let named = match &e {
                    WireError::UnknownEnum { value, .. } => {
                        *value == g.kind && m == format!("unknown GoalKind value {value}")
                    }
                    WireError::MissingGoalTiles => {
                        g.tiles.is_empty() && m.contains("needs the goal's tiles")
                    }
                    WireError::UnexpectedGoalTiles => {
                        !g.tiles.is_empty() && m.contains("only allowed with GOAL_KIND_CUSTOM")
                    }
                    WireError::Goal(p) => {
                        m.starts_with("invalid goal: ") && parse_error_names(p, &g.tiles, &m)
                    }
                    _ => false,
                };
                prop_assert!(named, "{:?} for {} → {}", g, s, m);
            }
        }
    }

    #[test]
    fn enums_and_move_strings_convert_or_name_the_value(
        value in any::<i32>(),
        text in prop_oneof![any::<String>(), "[UDLRudlr, ]{0,3}"],
    ) {
        match heuristic_from_wire(value) {
            Ok(_) => prop_assert!((0..=4).contains(&value)),
            Err(e) => prop_assert_eq!(e.to_string(), format!("unknown Heuristic value {value}")),
        }
        let letters = text.chars().filter(|c| !c.is_whitespace() && *c != ',').count();
        match moves_from_wire(&text) {
            Ok(m) => prop_assert_eq!(m.len(), letters),
            Err(e) => prop_assert!(e.to_string().starts_with("invalid moves: unknown move")),
        }
        match last_move_from_wire(&text) {
            Ok(Some(_)) => prop_assert_eq!(letters, 1),
            Ok(None) => prop_assert_eq!(letters, 0),
            Err(e) => prop_assert!(e.to_string().starts_with("invalid moves: unknown move")),
        }
    }

    #[test]
    fn pattern_databases_convert_or_name_the_problem(
        width in side(),
        height in side(),
        partition in prop_oneof![any::<String>(), "[0-9]-[0-9](-[0-9]){0,2}"],
    ) {
        let db = v1::PatternDatabase { width, height, partition };
        if let Err(e) = pattern_database_from_wire(&db) {
            let m = e.to_string();
            prop_assert!(
                m.starts_with("invalid board size") || m.starts_with("invalid pattern database"),
                "{}",
                m
            );
        }
    }

    #[test]
    fn arbitrary_bytes_decode_or_fail_and_what_decodes_validates(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        if let Ok(r) = v1::SolveRequest::decode(bytes.as_slice()) {
            validate_request(&r);
        }
        if let Ok(a) = v1::Assignment::decode(bytes.as_slice()) {
            validate_assignment(&a);
        }
        let _ = v1::WorkerMessage::decode(bytes.as_slice());
        let _ = v1::CoordinatorMessage::decode(bytes.as_slice());
    }

    #[test]
    fn corrupted_requests_decode_or_fail_and_what_decodes_validates(
        r in a_request(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        cut in any::<prop::sample::Index>(),
    ) {
        validate_request(&r);
        let mut bytes = r.encode_to_vec();
        if !bytes.is_empty() {
            for (at, value) in &edits {
                let i = at.index(bytes.len());
                bytes[i] = *value;
            }
            bytes.truncate(cut.index(bytes.len() + 1));
        }
        if let Ok(r) = v1::SolveRequest::decode(bytes.as_slice()) {
            validate_request(&r);
        }
    }
}
