//! A batch killed partway (a real process, SIGKILL) and run again with `--resume` ends with
//! every board answered exactly once, optimally; and a batch whose stderr is not a terminal
//! writes nothing there (no progress bar).

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{npuzzle, records};
use npuzzle_cluster::testing::{Process, assert_optimal};
use npuzzle_solver::{Goal, Shape};

/// Korf instances that take tens of milliseconds each with linear conflict.
const IDS: [usize; 22] = [
    2, 4, 6, 8, 18, 20, 35, 36, 38, 39, 43, 44, 50, 51, 57, 58, 62, 68, 69, 75, 77, 87,
];

/// `(board, optimal length)` of the chosen Korf instances, in `IDS` order.
fn instances() -> Vec<(String, usize)> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../data/korf100.txt"))
        .unwrap();
    let by_id: HashMap<usize, (String, usize)> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].parse().unwrap(),
                (f[2..].join(" "), f[1].parse().unwrap()),
            )
        })
        .collect();
    IDS.iter().map(|id| by_id[id].clone()).collect()
}

fn batch_command(input: &std::path::Path, out: &std::path::Path, resume: bool) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_npuzzle"));
    c.args(["batch", "--serial", "--jobs", "1", "--heuristic", "lc"])
        .args(["--goal", "blank-first", "--output", "jsonl", "--out"])
        .arg(out)
        .arg(input)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if resume {
        c.arg("--resume");
    }
    c
}

fn complete_lines(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.matches('\n').count())
        .unwrap_or(0)
}

#[test]
fn a_killed_batch_resumes_without_losing_or_repeating_a_board() {
    let dir = tempfile::tempdir().unwrap();
    let boards = instances();
    let input = dir.path().join("boards.txt");
    let text: String = boards.iter().map(|(b, _)| format!("{b}\n")).collect();
    std::fs::write(&input, text).unwrap();
    let out = dir.path().join("answers.jsonl");

    let mut first = Process::spawn(&mut batch_command(&input, &out, false));
    let started = Instant::now();
    while complete_lines(&out) < 4 && started.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(5));
    }
    first.kill();
    let before = complete_lines(&out);
    assert!(before >= 4, "the first run wrote {before} answers");
    assert!(
        before < boards.len(),
        "the first run finished before it was killed; the test proves nothing"
    );

    let second = batch_command(&input, &out, true).output().unwrap();
    assert!(second.status.success(), "{second:?}");
    assert!(
        second.stderr.is_empty(),
        "stderr is not a terminal: {second:?}"
    );

    let answers = records(&std::fs::read_to_string(&out).unwrap());
    let mut indices: Vec<u64> = answers
        .iter()
        .map(|r| r["index"].as_u64().unwrap())
        .collect();
    indices.sort_unstable();
    let expected: Vec<u64> = (0..boards.len() as u64).collect();
    assert_eq!(indices, expected, "every board exactly once");
    let goal = Goal::blank_first(Shape::new(4, 4).unwrap());
    for r in &answers {
        let (board, optimal) = &boards[r["index"].as_u64().unwrap() as usize];
        assert_optimal(board, &goal, r["moves"].as_str().unwrap(), *optimal);
    }
}

#[test]
fn without_a_terminal_stderr_stays_empty_and_csv_has_one_row_per_board() {
    let out = npuzzle(
        &["batch", "--output", "csv", "--serial"],
        "1 2 3 4 5 6 0 7 8\n1 2 3\n2 1 3 4 5 6 7 8 0\n",
    );
    assert_eq!(out.code, 1, "an invalid board makes the exit code 1");
    assert_eq!(out.stderr, "");
    let mut rows = csv::Reader::from_reader(out.stdout.as_bytes());
    let statuses: Vec<String> = rows.records().map(|r| r.unwrap()[1].to_string()).collect();
    assert_eq!(statuses, ["solved", "invalid", "unsolvable"]);
}
