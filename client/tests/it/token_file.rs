//! `npuzzle --token-file` against a coordinator that requires a client token: with the file the
//! board is solved; without it the command fails, saying a token is required.

use crate::common::{npuzzle, one_worker};
use npuzzle_cluster::testing::ClusterThread;
use npuzzle_cluster::testing::assert_optimal;
use npuzzle_coordinator::Auth;
use npuzzle_proto::security::Token;

const CLIENT_TOKEN: &str = "cli-token-5d0c9a71e4";
const WORKER_TOKEN: &str = "cli-worker-token-82b6f3";

fn token(secret: &str) -> Option<Token> {
    Some(Token::new(secret, "test").unwrap())
}

/// A coordinator requiring both tokens, with one worker (the local cluster sends it the worker
/// token), on its own runtime thread.
fn guarded_cluster() -> ClusterThread {
    ClusterThread::start(one_worker(npuzzle_coordinator::Config {
        auth: Auth {
            client: token(CLIENT_TOKEN),
            worker: token(WORKER_TOKEN),
        },
        ..npuzzle_coordinator::Config::default()
    }))
}

#[test]
fn token_file_reaches_a_guarded_coordinator() {
    let cluster = guarded_cluster();
    let url = cluster.url.clone();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("client.token");
    std::fs::write(&file, format!("{CLIENT_TOKEN}\n")).unwrap();
    let board = "8 6 7 2 5 4 3 0 1";

    let solved = npuzzle(
        &[
            "solve",
            board,
            "--coordinator",
            &url,
            "--token-file",
            file.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(solved.code, 0, "{}", solved.stderr);
    let goal = npuzzle_solver::Goal::blank_last(npuzzle_solver::Shape::new(3, 3).unwrap());
    assert_optimal(board, &goal, solved.stdout.trim(), 31);

    let refused = npuzzle(&["solve", board, "--coordinator", &url], "");
    assert_eq!(refused.code, 2, "{}", refused.stdout);
    assert!(
        refused.stderr.contains("token is required"),
        "{}",
        refused.stderr
    );
    cluster.stop();
}
