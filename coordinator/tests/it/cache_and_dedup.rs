//! The cache answers repeats (and every state along a solved path) without touching a worker;
//! identical concurrent requests share one search.

use crate::common::{
    GoalSpec, TestCluster, assert_optimal, assert_reaches_goal, eager_config, korf, request,
};
use npuzzle_proto::v1;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeat_is_cached_and_so_is_every_state_on_the_path() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(2).await;
    let mut client = cluster.client().await;
    let (_, optimal, tiles) = korf(&[55]).remove(0);
    let first = client
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert!(!first.cached && first.units > 0);

    let again = client
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert!(again.cached);
    assert_eq!((again.units, again.nodes), (0, 0), "a hit assigns no unit");
    assert_eq!(again.length as usize, optimal);
    assert_optimal(&tiles, &GoalSpec::BlankFirst, &again.moves, optimal);

    // Ten moves along the answer: a state the cluster never saw as a request.
    let board = npuzzle_solver::Board::parse(&tiles, None).unwrap();
    let path = npuzzle_solver::parse_moves(&first.moves).unwrap();
    let suffix_state = board.apply(&path[..10]).unwrap();
    let r = client
        .solve(request(&suffix_state.to_string(), v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert!(r.cached, "{r:?}");
    assert_eq!(r.length as usize, optimal - 10);

    let stats = cluster.stats().await;
    assert_eq!(stats.cache_hits, 2);
    assert!(stats.cache_entries as usize > optimal);

    // skip_cache searches again.
    let mut req = request(&tiles, v1::GoalKind::BlankFirst);
    req.skip_cache = true;
    let r = client.solve(req).await.unwrap().into_inner();
    assert!(!r.cached && r.units > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_concurrent_requests_share_one_search() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(1).await;
    let (_, optimal, tiles) = korf(&[1]).remove(0);
    let mut handles = Vec::new();
    for _ in 0..4 {
        let mut client = cluster.client().await;
        let req = request(&tiles, v1::GoalKind::BlankFirst);
        handles.push(tokio::spawn(async move {
            client.solve(req).await.unwrap().into_inner()
        }));
    }
    // While they run, the coordinator holds one job for them.
    let mut seen_one = false;
    for _ in 0..50 {
        let s = cluster.stats().await;
        if s.running_jobs == 1 {
            seen_one = true;
        }
        assert!(s.running_jobs <= 1, "{s:?}");
        if s.running_jobs == 0 && seen_one {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert!(seen_one, "the search was never seen running");
    let mut answers = Vec::new();
    for h in handles {
        answers.push(h.await.unwrap());
    }
    for a in &answers {
        assert_eq!(a.length as usize, optimal);
        assert_eq!(a.moves, answers[0].moves, "one search, one answer");
    }
}

/// Regression: these two boards relabel to the same cells by their goals, but the blank is a
/// different label in each, so they are different puzzles. The second must not get the first's
/// answer from the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_puzzle_whose_blank_is_another_label_is_not_answered_from_the_cache() {
    let cluster = TestCluster::start(eager_config()).await;
    let mut client = cluster.client().await;
    let (a, b) = ("7 1 4 5 0 3 8 6 2", "8 2 5 6 1 4 0 7 3");
    let first = client
        .solve(request(a, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert_reaches_goal(a, &GoalSpec::BlankFirst, &first.moves);
    let second = client
        .solve(request(b, v1::GoalKind::BlankLast))
        .await
        .unwrap()
        .into_inner();
    assert!(!second.cached, "{second:?}");
    assert_reaches_goal(b, &GoalSpec::BlankLast, &second.moves);
}
