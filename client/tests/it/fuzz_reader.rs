//! Hostile batch input for the reader, in every format: arbitrary bytes (invalid UTF-8, NULs,
//! CRs), judge-like files with lying headers (`99999999999999999999`, `0`, more puzzles announced
//! than given) and short or long puzzles. The reader must end (never more items than the input has
//! lines, plus one), number the boards in order, and every board it cuts out must parse or be
//! rejected with a message that names the problem.
//!
//! 10,000 cases per property by default; `PROPTEST_CASES=1000000 cargo test --release -p
//! npuzzle-client --test it fuzz_reader` runs a longer campaign.

use npuzzle_client::input::{Format, Reader};
use npuzzle_solver::Board;
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

fn format() -> impl Strategy<Value = Format> {
    prop::sample::select(vec![
        Format::Auto,
        Format::Lines,
        Format::Uva10181,
        Format::Poj1077,
    ])
}

fn words(numbers: &[u8]) -> String {
    numbers
        .iter()
        .map(u8::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Lines that look like the judges' inputs, and some that do not.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        // A header: a count, honest or not.
        2 => prop_oneof![0u64..5, any::<u64>()].prop_map(|n| n.to_string()),
        1 => Just("99999999999999999999999".to_string()),
        // A row of a 4x4 puzzle, a 3x3 poj line, a board line.
        4 => prop::collection::vec(0u8..17, 4).prop_map(|row| words(&row)),
        2 => Just((1..9).collect::<Vec<u8>>())
            .prop_shuffle()
            .prop_map(|t| format!("{} x", words(&t))),
        1 => "[0-9x ,#\t]{0,30}",
        1 => any::<String>().prop_map(|s| s.chars().take(20).collect()),
        1 => Just(String::new()),
    ]
}

fn line_ending() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["\n", "\r\n", "\n\n", ""])
}

fn judge_like() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec((line(), line_ending()), 0..30).prop_map(|lines| {
        lines
            .into_iter()
            .flat_map(|(l, e)| format!("{l}{e}").into_bytes())
            .collect()
    })
}

fn input() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..1024),
        1 => prop::collection::vec(
            prop::sample::select(b"0123456789 x\n\r,#\xff\x00".to_vec()),
            0..256,
        ),
        3 => judge_like(),
    ]
}

/// Reads `bytes` in `format` and checks every item.
fn check(bytes: &[u8], format: Format) {
    let lines = bytes.split(|&b| b == b'\n').count();
    let mut reader = Reader::new(bytes, format);
    let items: Vec<_> = reader.by_ref().take(lines + 2).collect();
    assert!(
        items.len() <= lines + 1,
        "{} items from {lines} lines ({format:?}): {:?}",
        items.len(),
        &items[..3.min(items.len())]
    );
    assert!(reader.next().is_none() || items.len() <= lines + 1);
    let mut last_line = 0;
    for (i, item) in items.into_iter().enumerate() {
        let item = item.expect("reading from memory cannot fail");
        assert_eq!(item.index, i);
        assert!(item.line <= lines, "line {} of {lines}", item.line);
        if item.line > 0 {
            assert!(item.line >= last_line, "lines go forward");
            last_line = item.line;
        }
        match &item.error {
            Some(e) => assert!(e.len() > 10, "{e:?}"),
            None => {
                assert!(!item.text.trim().is_empty());
                if let Err(e) = Board::parse(&item.text, item.shape) {
                    assert!(!e.to_string().is_empty());
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_input_in_any_format_ends_and_every_item_is_readable(bytes in input(), f in format()) {
        check(&bytes, f);
    }

    #[test]
    fn a_lying_header_cannot_make_the_reader_endless(
        count in prop_oneof![Just(u64::MAX), any::<u64>(), 2u64..100],
        puzzles in 0usize..3,
    ) {
        let mut text = format!("{count}\n");
        for _ in 0..puzzles {
            text.push_str("1 2 3 4\n5 6 7 8\n9 10 11 12\n13 14 15 0\n");
        }
        for f in [Format::Auto, Format::Uva10181] {
            check(text.as_bytes(), f);
        }
    }

    #[test]
    fn format_names_parse_or_are_named_in_the_error(name in any::<String>()) {
        if let Err(e) = name.parse::<Format>() {
            prop_assert!(e.starts_with("unknown format"), "{}", e);
        }
    }
}

#[test]
fn a_short_file_still_reports_what_is_missing() {
    let text = "1000000000000\n1 2 3 4\n5 6 7 8\n9 10 11 12\n13 14 15 0\n";
    let items: Vec<_> = Reader::new(text.as_bytes(), Format::Auto)
        .take(10)
        .map(Result::unwrap)
        .collect();
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(items[0].error.is_none());
    let e = items[1].error.as_deref().unwrap();
    assert!(e.starts_with("missing puzzle"), "{e}");
    assert!(e.contains("1000000000000"), "{e}");
}
