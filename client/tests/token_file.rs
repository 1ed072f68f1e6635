//! `npuzzle --token-file` against a coordinator that requires a client token: with the file the
//! board is solved; without it the command fails, saying a token is required.

mod common;

use common::{assert_solves, npuzzle};
use npuzzle_coordinator::Auth;
use npuzzle_proto::security::{ClientSecurity, Token};
use tokio_util::sync::CancellationToken;

const CLIENT_TOKEN: &str = "cli-token-5d0c9a71e4";
const WORKER_TOKEN: &str = "cli-worker-token-82b6f3";

fn token(secret: &str) -> Option<Token> {
    Some(Token::new(secret, "test").unwrap())
}

/// A coordinator requiring both tokens, with one worker (sending the worker token), on its own
/// runtime thread.
fn start_cluster() -> (String, CancellationToken) {
    let shutdown = CancellationToken::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let stop = shutdown.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}", listener.local_addr().unwrap());
            let config = npuzzle_coordinator::Config {
                auth: Auth {
                    client: token(CLIENT_TOKEN),
                    worker: token(WORKER_TOKEN),
                },
                ..npuzzle_coordinator::Config::default()
            };
            tokio::spawn(npuzzle_coordinator::run(listener, config, stop.clone()));
            let mut w = npuzzle_worker::Config::new(url.clone());
            w.threads = 1;
            w.load_pdbs = false;
            w.security = ClientSecurity {
                token: token(WORKER_TOKEN),
                ..ClientSecurity::default()
            };
            tokio::spawn(npuzzle_worker::run(w, stop.clone()));
            tx.send(url).unwrap();
            stop.cancelled().await;
        });
    });
    (rx.recv().unwrap(), shutdown)
}

#[test]
fn token_file_reaches_a_guarded_coordinator() {
    let (url, shutdown) = start_cluster();
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
    assert_eq!(assert_solves(board, solved.stdout.trim(), &goal), 31);

    let refused = npuzzle(&["solve", board, "--coordinator", &url], "");
    assert_eq!(refused.code, 2, "{}", refused.stdout);
    assert!(
        refused.stderr.contains("token is required"),
        "{}",
        refused.stderr
    );
    shutdown.cancel();
}
