//! Hostile text for every parser of the library: `Board::parse` (with and without a shape),
//! `parse_moves`, `GoalSpec` and `Shape`. Arbitrary strings, soups of plausible and implausible
//! tokens, and valid boards with one thing broken. Nothing may panic, and every rejection must be
//! an error whose message names the problem.
//!
//! 10,000 cases per property by default; `PROPTEST_CASES=1000000 cargo test --release -p
//! npuzzle-solver --test it fuzz_parsers::` runs a longer campaign.

use npuzzle_solver::{Board, GoalSpec, ParseError, Shape, moves_to_string, parse_moves};
use proptest::prelude::*;

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

fn shapes() -> Vec<Shape> {
    (2..=5)
        .flat_map(|w| (2..=5).map(move |h| Shape::new(w, h).unwrap()))
        .collect()
}

fn shape() -> impl Strategy<Value = Shape> {
    prop::sample::select(shapes())
}

/// The tiles of `s` in a random order.
fn permutation(s: Shape) -> impl Strategy<Value = Vec<u8>> {
    Just((0..s.cells() as u8).collect::<Vec<_>>()).prop_shuffle()
}

/// Tokens a person (or an attacker) might type.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0u64..30).prop_map(|n| n.to_string()),
        1 => prop::sample::select(vec![
            "x", "X", "_", "0", "00", "-1", "+3", "1.5", "0x1", "٣", "１", "NaN",
        ])
        .prop_map(str::to_string),
        1 => "[0-9]{1,40}",
        1 => any::<String>().prop_map(|s| s.chars().take(6).collect()),
    ]
}

fn separator() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        " ", ",", "\n", "\t", ", ", "  ", "\u{a0}", "\u{3000}", ",,", ";",
    ])
}

/// Tokens joined by assorted separators.
fn soup() -> impl Strategy<Value = String> {
    prop::collection::vec((token(), separator()), 0..40).prop_map(|parts| {
        parts
            .into_iter()
            .map(|(t, s)| format!("{t}{s}"))
            .collect::<String>()
    })
}

/// A valid board of some shape as text, then possibly one thing broken: a tile dropped,
/// duplicated, out of range or added, or the blank spelled otherwise.
fn near_valid() -> impl Strategy<Value = (Shape, String)> {
    shape()
        .prop_flat_map(|s| {
            (
                Just(s),
                Just((0..s.cells() as u64).collect::<Vec<_>>()).prop_shuffle(),
                0..7usize,
                any::<prop::sample::Index>(),
                0u64..1_000,
            )
        })
        .prop_map(|(s, mut tiles, mutation, at, value)| {
            let i = at.index(tiles.len());
            match mutation {
                0 => {
                    tiles.remove(i);
                }
                1 => tiles.push(tiles[i]),
                2 => tiles[i] = s.cells() as u64 + value,
                3 => tiles.push(value),
                4 => tiles.clear(),
                _ => {}
            }
            let text: Vec<String> = tiles
                .iter()
                .map(|t| match (t, mutation) {
                    (0, 5) => "x".to_string(),
                    (0, 6) => "_".to_string(),
                    _ => t.to_string(),
                })
                .collect();
            (s, text.join(" "))
        })
}

fn tokens(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .collect()
}

/// Parses `text` and checks the answer: a board that prints back to itself, or an error whose
/// message names the problem (and quotes the offending token where there is one).
fn check_board(text: &str, shape: Option<Shape>) {
    match Board::parse(text, shape) {
        Ok(board) => {
            if let Some(s) = shape {
                assert_eq!(board.shape(), s);
            }
            let mut tiles = board.tiles().to_vec();
            tiles.sort_unstable();
            assert!(tiles.iter().enumerate().all(|(i, &t)| t as usize == i));
            assert_eq!(
                Board::parse(&board.to_string(), Some(board.shape())),
                Ok(board)
            );
        }
        Err(e) => {
            let message = e.to_string();
            let found = tokens(text);
            let names = match &e {
                ParseError::Empty => message.contains("empty board") && found.is_empty(),
                ParseError::UnknownToken { token, position } => {
                    message.contains("unknown token")
                        && found.get(*position) == Some(&token.as_str())
                }
                ParseError::CannotInferShape { found: n } => {
                    shape.is_none()
                        && *n == found.len()
                        && message.contains(&format!("from {n} tiles"))
                }
                ParseError::WrongCount { found: n, .. } => {
                    message.contains("wrong tile count") && *n == found.len()
                }
                ParseError::TileOutOfRange {
                    token, position, ..
                } => {
                    message.contains(&format!(
                        "tile {token} at position {position} is out of range"
                    )) && found.get(*position) == Some(&token.as_str())
                }
                ParseError::DuplicateTile { first, second, .. } => {
                    message.starts_with("duplicate") && first < second && *second < found.len()
                }
                ParseError::MissingTile { .. } => message.starts_with("missing"),
                ParseError::Shape(_) => message.contains("board size"),
            };
            assert!(names, "{text:?} ({shape:?}) → {e:?}: {message:?}");
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_text_is_a_board_or_a_named_error(
        text in any::<String>(),
        s in prop::option::of(shape()),
    ) {
        check_board(&text, s);
    }

    #[test]
    fn token_soup_is_a_board_or_a_named_error(text in soup(), s in prop::option::of(shape())) {
        check_board(&text, s);
    }

    #[test]
    fn a_valid_board_with_one_thing_broken_names_it(
        (s, text) in near_valid(),
        give_shape in any::<bool>(),
    ) {
        check_board(&text, give_shape.then_some(s));
    }

    #[test]
    fn arbitrary_bytes_as_lossy_text_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        check_board(&String::from_utf8_lossy(&bytes), None);
    }

    #[test]
    fn move_strings_parse_or_name_the_first_bad_letter(
        text in prop_oneof![any::<String>(), "[UDLRudlr ,xX]{0,40}"],
    ) {
        let letters: Vec<char> = text.chars().filter(|c| !c.is_whitespace() && *c != ',').collect();
        match parse_moves(&text) {
            Ok(moves) => {
                prop_assert_eq!(moves.len(), letters.len());
                let upper: String = letters.iter().map(|c| c.to_ascii_uppercase()).collect();
                prop_assert_eq!(moves_to_string(&moves), upper);
            }
            Err(e) => {
                prop_assert_eq!(letters.get(e.index), Some(&e.found));
                prop_assert!(letters[..e.index].iter().all(|c| "UDLRudlr".contains(*c)));
                let message = e.to_string();
                prop_assert!(message.contains("unknown move"), "{}", message);
                prop_assert!(message.contains(&format!("{:?}", e.found)), "{}", message);
            }
        }
    }

    #[test]
    fn arbitrary_moves_on_a_board_apply_or_name_the_illegal_one(
        (s, tiles) in shape().prop_flat_map(|s| (Just(s), permutation(s))),
        moves in "[UDLR]{0,60}",
    ) {
        let board = Board::new(s, &tiles).unwrap();
        let moves = parse_moves(&moves).unwrap();
        match board.apply(&moves) {
            Ok(end) => prop_assert_eq!(end.shape(), s),
            Err(e) => {
                prop_assert!(e.index < moves.len());
                prop_assert!(board.apply(&moves[..e.index]).is_ok());
                prop_assert!(e.to_string().contains("is illegal"));
            }
        }
    }

    #[test]
    fn goal_specs_resolve_or_say_the_goal_is_invalid(
        text in prop_oneof![any::<String>(), soup(), near_valid().prop_map(|(_, t)| t)],
        s in shape(),
    ) {
        let spec: GoalSpec = text.parse().unwrap();
        match spec.resolve(s) {
            Ok(goal) => prop_assert_eq!(goal.shape(), s),
            Err(e) => {
                let message = e.to_string();
                prop_assert!(
                    message.starts_with("invalid goal: ") && message.len() > 14,
                    "{}",
                    message
                );
                prop_assert!(matches!(spec, GoalSpec::Tiles(_)));
            }
        }
    }

    #[test]
    fn shapes_parse_or_name_the_size(
        text in prop_oneof![any::<String>(), "[0-9]{0,25}[xX*×][0-9]{0,25}"],
    ) {
        match text.parse::<Shape>() {
            Ok(s) => prop_assert!((2..=5).contains(&s.width()) && (2..=5).contains(&s.height())),
            Err(e) => prop_assert!(e.to_string().contains("board size"), "{}", e),
        }
    }
}
