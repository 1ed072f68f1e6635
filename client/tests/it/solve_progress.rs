//! `remote::solve` with a progress callback (what `npuzzle solve` shows on a terminal): the board
//! goes through `SolveStream`, every bound's progress reaches the callback in order, and the
//! answer is the same optimal one the plain call gives.

use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

use crate::common::one_worker;
use npuzzle_client::engine::Settings;
use npuzzle_client::remote::{self, Patience};
use npuzzle_cluster::testing::assert_optimal;
use npuzzle_cluster::testing::eager_config;
use npuzzle_cluster::testing::korf::korf;
use npuzzle_cluster::{LocalCluster, connect};
use npuzzle_proto::answer::Status;
use npuzzle_proto::v1;
use npuzzle_solver::GoalSpec;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_solve_reports_each_bound_and_answers_optimally() {
    let cluster = LocalCluster::start(one_worker(eager_config()))
        .await
        .unwrap();
    let mut client = connect(cluster.url(), cluster.client_security())
        .await
        .unwrap();
    let (_, optimal, tiles) = korf(&[42]).remove(0);
    let settings = Settings {
        goal: GoalSpec::BlankFirst,
        ..Settings::default()
    };
    let seen: Mutex<Vec<v1::BoundProgress>> = Mutex::new(Vec::new());
    let tell = |p: &v1::BoundProgress| seen.lock().unwrap().push(p.clone());
    let waiting = AtomicUsize::new(0);
    let answer = remote::solve(
        &mut client,
        0,
        &tiles,
        None,
        &settings,
        Patience::default(),
        &waiting,
        Some(&tell),
    )
    .await
    .unwrap();
    assert_eq!(answer.status, Status::Solved, "{answer:?}");
    assert_eq!(answer.length, Some(optimal));
    let moves = answer
        .moves
        .as_deref()
        .expect("the moves of a solved board");
    assert_optimal(&tiles, &GoalSpec::BlankFirst, moves, optimal);
    let seen = seen.into_inner().unwrap();
    assert!(!seen.is_empty(), "no bound reached the callback");
    assert!(
        seen.windows(2).all(|w| w[0].bound <= w[1].bound),
        "{seen:?}"
    );
    assert!(
        seen.iter().all(|p| (0.0..=1.0).contains(&p.fraction)),
        "{seen:?}"
    );
    assert!(seen.last().unwrap().bound as usize <= optimal, "{seen:?}");
    cluster.shutdown().await.unwrap();
}
