//! Batches through a coordinator that is busy, killed and restarted, or too slow for a board's
//! deadline: every board gets exactly one answer, every answer is optimal, and a board without
//! an answer is `failed` (not `invalid`) and retried by `--resume`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{npuzzle, one_worker, records};
use npuzzle_cluster::Options;
use npuzzle_cluster::testing::assert_optimal;
use npuzzle_cluster::testing::{ClusterThread, Process};
use npuzzle_solver::{Board, Goal, HeuristicKind, Limits, SearchOutcome, Solver};

/// `count` 15-puzzles, random walks of 45 moves from the goal (blank-last).
fn boards(count: usize, seed: u64) -> String {
    boards_to(count, seed, "blank-last")
}

fn boards_to(count: usize, seed: u64, goal: &str) -> String {
    let out = npuzzle(
        &[
            "gen",
            "--goal",
            goal,
            "--size",
            "4x4",
            "--walk",
            "45",
            "--count",
            &count.to_string(),
            "--seed",
            &seed.to_string(),
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
}

fn optimal(board: &str) -> usize {
    let board = Board::parse(board, None).unwrap();
    let goal = Goal::blank_last(board.shape());
    let solver = Solver::new(goal, HeuristicKind::LinearConflict).unwrap();
    match solver.solve(&board, &Limits::default()).unwrap().outcome {
        SearchOutcome::Solved(path) => path.len(),
        other => panic!("{other:?}"),
    }
}

/// Every board answered once, in order, solved at its optimal length.
fn check_all_optimal(input: &str, jsonl: &str) {
    let boards: Vec<&str> = input.lines().collect();
    let answers = records(jsonl);
    assert_eq!(answers.len(), boards.len(), "one answer per board");
    let goal = Goal::blank_last(npuzzle_solver::Shape::new(4, 4).unwrap());
    for (i, (board, answer)) in boards.iter().zip(&answers).enumerate() {
        assert_eq!(answer["index"], i, "answers in input order, each once");
        assert_eq!(answer["status"], "solved", "board {i}: {answer}");
        let moves = answer["moves"].as_str().unwrap();
        assert_optimal(board, &goal, moves, optimal(board));
    }
}

#[test]
fn a_batch_against_a_busy_coordinator_waits_its_turn_and_finishes() {
    let config = npuzzle_coordinator::Config {
        max_searches: 2,
        ..npuzzle_coordinator::Config::default()
    };
    let cluster = ClusterThread::start(Options {
        load_pdbs: true,
        ..one_worker(config)
    });
    let url = cluster.url.clone();
    let input = boards(60, 3);
    let out = npuzzle(
        &[
            "batch",
            "--coordinator",
            &url,
            "--jobs",
            "8",
            "--output",
            "jsonl",
        ],
        &input,
    );
    cluster.stop();
    assert_eq!(out.code, 0, "{}", out.stderr);
    check_all_optimal(&input, &out.stdout);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `npuzzle cluster` (a coordinator and a one-thread worker) as a process of its own.
fn cluster_process(port: u16) -> Process {
    Process::spawn(
        Command::new(env!("CARGO_BIN_EXE_npuzzle"))
            .args([
                "cluster",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--threads",
                "1",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
}

#[test]
fn a_batch_outlives_a_coordinator_killed_and_restarted_mid_run() {
    let input = boards(120, 5);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("boards.txt");
    std::fs::write(&file, &input).unwrap();
    let port = free_port();
    let mut cluster = cluster_process(port);
    let mut batch = Process::spawn(
        Command::new(env!("CARGO_BIN_EXE_npuzzle"))
            .args([
                "batch",
                file.to_str().unwrap(),
                "--coordinator",
                &format!("http://127.0.0.1:{port}"),
                "--jobs",
                "2",
                "--output",
                "jsonl",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let mut stdout = BufReader::new(batch.take_stdout());
    let mut answers = String::new();
    // Five answers in: the coordinator dies without a word (SIGKILL), and comes back later.
    for _ in 0..5 {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the batch ended early"
        );
        answers.push_str(&line);
    }
    assert!(
        batch.try_wait().is_none(),
        "the batch was over before the kill: this proves nothing"
    );
    cluster.kill();
    let killed = Instant::now();
    std::thread::sleep(Duration::from_millis(1500));
    let mut cluster = cluster_process(port);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    answers.push_str(&rest);
    let status = batch.wait();
    let mut stderr = String::new();
    let mut pipe = batch.child().stderr.take().expect("stderr piped");
    std::io::Read::read_to_string(&mut pipe, &mut stderr).unwrap();
    cluster.kill();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(killed.elapsed() > Duration::from_millis(1500));
    check_all_optimal(&input, &answers);
}

#[test]
fn a_deadline_is_failed_not_invalid_and_resume_retries_it() {
    let cluster = ClusterThread::start(Options {
        load_pdbs: true,
        ..one_worker(npuzzle_coordinator::Config::default())
    });
    let url = cluster.url.clone();
    // Korf's #11 (57 moves, about half a second with linear conflict on one thread): past a
    // deadline of 50 ms, while the random walks are answered within it.
    let hard = "5 9 13 14 6 3 7 12 10 8 4 0 15 2 11 1";
    let input = format!("{}{hard}\n", boards_to(3, 9, "blank-first"));
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("answers.jsonl");
    let out_path = out_file.to_str().unwrap();
    let args = |extra: &[&'static str]| {
        let mut a = vec![
            "batch",
            "--coordinator",
            &url,
            "--goal",
            "blank-first",
            "--output",
            "jsonl",
            "--out",
            out_path,
        ];
        a.extend_from_slice(extra);
        a
    };
    let first = npuzzle(&args(&["--timeout", "0.05"]), &input);
    assert_eq!(first.code, 3, "exit 3: some board failed; {}", first.stderr);
    let answers = records(&std::fs::read_to_string(&out_file).unwrap());
    let hard_answer = &answers[3];
    assert_eq!(hard_answer["status"], "failed", "{hard_answer}");
    assert_eq!(hard_answer["reason"], "deadline", "{hard_answer}");

    let second = npuzzle(&args(&["--resume"]), &input);
    cluster.stop();
    assert_eq!(second.code, 0, "{}", second.stderr);
    let answers = records(&std::fs::read_to_string(&out_file).unwrap());
    assert_eq!(answers.len(), 4, "each board once: {answers:?}");
    let mut indices: Vec<u64> = answers
        .iter()
        .map(|a| a["index"].as_u64().unwrap())
        .collect();
    indices.sort_unstable();
    assert_eq!(indices, vec![0, 1, 2, 3]);
    let retried = answers.iter().find(|a| a["index"] == 3).unwrap();
    assert_eq!(retried["status"], "solved", "{retried}");
    assert_eq!(retried["length"], 57, "Korf #11 is 57 moves");
}
