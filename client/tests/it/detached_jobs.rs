//! `npuzzle submit`, `jobs`, `wait` and `cancel` through the real binary against a real
//! coordinator: the submitting process exits with the id alone; another process waits and
//! prints what `solve --json` prints (the path replays at the optimal length) with `resumed`;
//! `jobs` lists the job; an unknown or malformed id is refused with a message that says so.

use crate::common::{npuzzle, one_worker};
use npuzzle_cluster::testing::ClusterThread;
use npuzzle_cluster::testing::assert_optimal;
use npuzzle_cluster::testing::korf::korf;
use npuzzle_solver::GoalSpec;

#[test]
fn a_job_submitted_by_one_process_is_waited_for_by_another() {
    let cluster = ClusterThread::start(one_worker(npuzzle_coordinator::Config::default()));
    let url = cluster.url.clone();
    let (_, optimal, tiles) = korf(&[42]).remove(0);
    let submitted = npuzzle(
        &[
            "submit",
            &tiles,
            "--goal",
            "blank-first",
            "--coordinator",
            &url,
        ],
        "",
    );
    assert_eq!(submitted.code, 0, "{}", submitted.stderr);
    let id = submitted.stdout.trim().to_string();
    assert_eq!(id.len(), 16, "one line, the id: {:?}", submitted.stdout);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");

    let waited = npuzzle(&["wait", &id, "--json", "--coordinator", &url], "");
    assert_eq!(waited.code, 0, "{}", waited.stderr);
    let answer: serde_json::Value = serde_json::from_str(waited.stdout.trim()).unwrap();
    assert_eq!(answer["status"], "solved", "{answer}");
    assert_eq!(answer["length"], optimal, "{answer}");
    assert_eq!(answer["resumed"], 0, "{answer}");
    let moves = answer["moves"].as_str().expect("the moves");
    assert_optimal(&tiles, &GoalSpec::BlankFirst, moves, optimal);
    // The fields of `solve --json`, in its order, and `resumed` after them.
    let solved = npuzzle(
        &[
            "solve",
            &tiles,
            "--goal",
            "blank-first",
            "--json",
            "--coordinator",
            &url,
        ],
        "",
    );
    let mut expected = keys(&solved.stdout);
    expected.push("resumed".into());
    assert_eq!(keys(&waited.stdout), expected);
    let solved: serde_json::Value = serde_json::from_str(solved.stdout.trim()).unwrap();
    assert_eq!(answer["moves"], solved["moves"]);

    let listed = npuzzle(&["jobs", "--coordinator", &url], "");
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let line = listed
        .stdout
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{id} not listed: {}", listed.stdout));
    assert!(line.contains("done"), "{line}");
    // The same puzzle submitted again is the same job.
    let again = npuzzle(
        &[
            "submit",
            &tiles,
            "--goal",
            "blank-first",
            "--coordinator",
            &url,
        ],
        "",
    );
    assert_eq!(again.stdout.trim(), id);
}

/// The keys of a flat JSON object, in the order they are written.
fn keys(json: &str) -> Vec<String> {
    let (mut keys, mut current) = (Vec::new(), String::new());
    let (mut in_string, mut escaped, mut last_string) = (false, false, None);
    for c in json.chars() {
        match (in_string, c) {
            (true, _) if escaped => escaped = false,
            (true, '\\') => escaped = true,
            (true, '"') => {
                in_string = false;
                last_string = Some(std::mem::take(&mut current));
            }
            (true, c) => current.push(c),
            (false, '"') => in_string = true,
            (false, ':') => keys.extend(last_string.take()),
            (false, c) if !c.is_whitespace() => last_string = None,
            _ => {}
        }
    }
    keys
}

#[test]
fn unknown_and_malformed_ids_are_refused_with_what_is_wrong() {
    let cluster = ClusterThread::start(one_worker(npuzzle_coordinator::Config::default()));
    let url = cluster.url.clone();
    let unknown = npuzzle(&["wait", "0123456789abcdef", "--coordinator", &url], "");
    assert_ne!(unknown.code, 0);
    assert!(
        unknown.stderr.contains("no job 0123456789abcdef"),
        "{}",
        unknown.stderr
    );
    let malformed = npuzzle(&["cancel", "nope", "--coordinator", &url], "");
    assert_ne!(malformed.code, 0);
    assert!(
        malformed.stderr.contains("16 hexadecimal digits"),
        "{}",
        malformed.stderr
    );
    let bad_board = npuzzle(&["submit", "1 2 3", "--coordinator", &url], "");
    assert_ne!(bad_board.code, 0);
    assert!(!bad_board.stderr.is_empty());
    assert!(bad_board.stdout.is_empty(), "{}", bad_board.stdout);
}
