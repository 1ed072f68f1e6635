//! `--cache-dir`: answers survive a restart of the coordinator; a corrupt store is set aside and
//! rebuilt; stored answers that do not replay to their goal are dropped, not served.

use std::path::Path;

use crate::common::{GoalSpec, TestCluster, assert_optimal, eager_config, korf, request};
use npuzzle_coordinator::Config;
use npuzzle_coordinator::store::{FILE_NAME, Store, StoredAnswer};
use npuzzle_proto::v1;
use npuzzle_solver::{Board, Goal, parse_moves};

fn with_store(dir: &Path) -> Config {
    Config {
        cache_dir: Some(dir.to_path_buf()),
        ..eager_config()
    }
}

/// Solves `tiles` towards the blank-first goal on a cluster with one worker: not from the cache,
/// `optimal` moves that replay to the goal.
async fn solve_fresh(dir: &Path, tiles: &str, optimal: usize) {
    let mut cluster = TestCluster::start(with_store(dir)).await;
    cluster.add_worker(2).await;
    let first = cluster
        .client()
        .await
        .solve(request(tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert!(!first.cached, "{first:?}");
    assert_eq!(first.length as usize, optimal);
    assert_optimal(tiles, &GoalSpec::BlankFirst, &first.moves, optimal);
    cluster.stop().await;
}

/// Asks for `tiles` (blank-first goal) on a coordinator with no worker: it must be a cache hit
/// of `optimal` moves that replay to the goal. Returns the moves.
async fn answered_from_the_store(cluster: &TestCluster, tiles: &str, optimal: usize) -> String {
    let again = cluster
        .client()
        .await
        .solve(request(tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert!(again.cached, "{again:?}");
    assert_eq!((again.units, again.nodes), (0, 0));
    assert_eq!(again.length as usize, optimal);
    assert_optimal(tiles, &GoalSpec::BlankFirst, &again.moves, optimal);
    again.moves
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_survive_a_coordinator_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (_, optimal, tiles) = korf(&[79]).remove(0);
    solve_fresh(dir.path(), &tiles, optimal).await;

    let cluster = TestCluster::start(with_store(dir.path())).await;
    assert_eq!(cluster.stats().await.workers, 0);
    let moves = answered_from_the_store(&cluster, &tiles, optimal).await;
    // A state along the answer, never asked for: its suffix was derived again on loading.
    let path = parse_moves(&moves).unwrap();
    let board = Board::parse(&tiles, None).unwrap();
    let midway = board.apply(&path[..20]).unwrap().to_string();
    answered_from_the_store(&cluster, &midway, optimal - 20).await;
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_store_is_set_aside_and_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let garbage: Vec<u8> = (0..64 * 1024).map(|i| (i * 7 + 3) as u8).collect();
    std::fs::write(dir.path().join(FILE_NAME), &garbage).unwrap();

    let (_, optimal, tiles) = korf(&[12]).remove(0);
    solve_fresh(dir.path(), &tiles, optimal).await;
    let aside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{FILE_NAME}.corrupt-")))
        })
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(std::fs::read(&aside[0]).unwrap(), garbage, "kept as it was");

    let cluster = TestCluster::start(with_store(dir.path())).await;
    answered_from_the_store(&cluster, &tiles, optimal).await;
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_that_do_not_replay_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (_, optimal, tiles) = korf(&[79]).remove(0);
    let forged_board = Board::parse(&tiles, None).unwrap();
    let goal = Goal::blank_first(forged_board.shape());
    // As long as the optimum, and legal, but it does not reach the goal.
    let forged_path = parse_moves(&"RL".repeat(optimal / 2)).unwrap();
    let small = Board::parse("1 2 0 3 4 5 6 7 8", None).unwrap();
    let small_path = parse_moves("LL").unwrap();
    {
        let opened = Store::open(dir.path(), 1000).unwrap();
        let mut store = opened.store;
        store
            .put(&[
                StoredAnswer {
                    board: forged_board,
                    goal,
                    path: forged_path,
                },
                StoredAnswer {
                    board: small,
                    goal: Goal::blank_first(small.shape()),
                    path: small_path,
                },
            ])
            .unwrap();
    }

    let cluster = TestCluster::start(with_store(dir.path())).await;
    // The good entry is served from the store…
    answered_from_the_store(&cluster, "1 2 0 3 4 5 6 7 8", 2).await;
    // … the forged one is not: with no worker, the board needs a search nobody can run.
    let status = cluster
        .client()
        .await
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    cluster.stop().await;

    // And it was deleted from the store on loading.
    let opened = Store::open(dir.path(), 1000).unwrap();
    assert_eq!((opened.valid, opened.dropped), (1, 0));
}
