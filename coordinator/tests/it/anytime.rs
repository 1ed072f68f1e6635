//! Never empty-handed (issue 50): a deadline answers with the best legal path found and what
//! was proven; a request with a factor (`within`) gets a path within it; the stream shows the
//! incumbent; an optimal request never gets a path that is not proven optimal, from the search
//! or from the cache.

use crate::common::{
    GoalSpec, TestCluster, assert_optimal, assert_reaches_goal, eager_config, join_by_hand, korf,
    request,
};
use npuzzle_proto::v1;
use npuzzle_proto::v1::solve_event::Event;

/// Korf & Felner's 24-puzzle #1 (95 moves, blank-first goal): hours for linear conflict, so a
/// deadline always comes first, the incumbent long before it.
const KF1: &str = "14 5 9 2 18 8 23 19 12 17 15 0 10 20 4 6 11 21 1 7 24 3 16 22 13";
const KF1_OPTIMUM: usize = 95;

/// Every event of a `SolveStream`, in order, to its end.
async fn all_events(mut stream: tonic::Streaming<v1::SolveEvent>) -> Vec<Event> {
    let mut events = Vec::new();
    while let Some(e) = stream.message().await.unwrap() {
        events.push(e.event.unwrap());
    }
    events
}

/// The bound events among `events`.
fn bounds_of(events: &[Event]) -> Vec<&v1::BoundProgress> {
    (events.iter())
        .filter_map(|e| match e {
            Event::Bound(b) => Some(b),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_answers_with_a_legal_path_and_the_lower_bound_proven() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(1).await;
    let mut client = cluster.client().await;
    let (optimal, tiles) = (KF1_OPTIMUM, KF1.to_string());
    let mut req = request(&tiles, v1::GoalKind::BlankFirst);
    req.timeout_ms = 1500;
    let r = client.solve(req).await.unwrap().into_inner();
    assert_eq!(r.outcome, v1::Outcome::DeadlineExceeded as i32, "{r:?}");
    assert!(!r.optimal, "{r:?}");
    assert_reaches_goal(&tiles, &GoalSpec::BlankFirst, &r.moves);
    assert_eq!(r.length as usize, r.moves.len());
    assert!(r.length as usize >= optimal, "{r:?}");
    assert!(
        r.lower_bound > 0 && r.lower_bound as usize <= optimal,
        "{r:?}"
    );

    // What the deadline answered is cached with its bound: a request with a factor it is
    // within is answered from the cache, the same path and bound.
    let within = (100.0 * f64::from(r.length) / f64::from(r.lower_bound)).ceil() / 100.0;
    assert!(within <= 10.0, "{r:?}");
    let mut req = request(&tiles, v1::GoalKind::BlankFirst);
    req.within = within;
    let cached = client.solve(req).await.unwrap().into_inner();
    assert_eq!(cached.outcome, v1::Outcome::Solved as i32, "{cached:?}");
    assert!(cached.cached && !cached.optimal, "{cached:?}");
    // What the flight held when it ended: the deadline's answer, or (if a bound or a companion
    // came in the moment between) a shorter path or a higher bound.
    assert_reaches_goal(&tiles, &GoalSpec::BlankFirst, &cached.moves);
    assert!(
        cached.length <= r.length && cached.lower_bound >= r.lower_bound,
        "{r:?} then {cached:?}"
    );
    // An optimal request is searched again, from there: never a shorter bound, never a longer
    // incumbent than the first deadline left.
    let mut req = request(&tiles, v1::GoalKind::BlankFirst);
    req.timeout_ms = 500;
    let again = client.solve(req).await.unwrap().into_inner();
    assert_eq!(
        again.outcome,
        v1::Outcome::DeadlineExceeded as i32,
        "{again:?}"
    );
    assert!(!again.cached && !again.optimal, "{again:?}");
    assert_reaches_goal(&tiles, &GoalSpec::BlankFirst, &again.moves);
    assert!(
        again.lower_bound >= r.lower_bound && again.length <= r.length,
        "{r:?} then {again:?}"
    );
}

/// With no quick path of its own (`incumbent_nodes` 0), a search's first incumbent can come only
/// from what an earlier search left in the cache: it is there from the stream's first bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_starts_from_the_bounded_answer_an_earlier_one_left() {
    let mut config = eager_config();
    config.incumbent_nodes = 0;
    let mut cluster = TestCluster::start(config).await;
    cluster.add_worker(1).await;
    let mut client = cluster.client().await;
    let (optimal, tiles) = (KF1_OPTIMUM, KF1.to_string());
    let mut req = request(&tiles, v1::GoalKind::BlankFirst);
    req.within = 3.0;
    let bounded = client.solve(req).await.unwrap().into_inner();
    assert_eq!(bounded.outcome, v1::Outcome::Solved as i32, "{bounded:?}");
    assert_reaches_goal(&tiles, &GoalSpec::BlankFirst, &bounded.moves);
    assert!(bounded.length as usize > optimal, "{bounded:?}");

    let mut req = request(&tiles, v1::GoalKind::BlankFirst);
    req.timeout_ms = 1000;
    let stream = client.solve_stream(req).await.unwrap().into_inner();
    let events = all_events(stream).await;
    let bounds = bounds_of(&events);
    assert!(!bounds.is_empty(), "{events:?}");
    // The cached path from the first bound on (a companion search, from a quarter of the way
    // to the deadline, may replace it later by a shorter one).
    assert_eq!(
        (&bounds[0].incumbent_moves, bounds[0].incumbent_length),
        (&bounded.moves, bounded.length),
        "{:?}",
        bounds[0]
    );
    for b in &bounds {
        assert!(b.incumbent_length <= bounded.length, "{b:?}");
        assert_reaches_goal(&tiles, &GoalSpec::BlankFirst, &b.incumbent_moves);
        assert!(b.lower_bound >= bounded.lower_bound, "{b:?}");
    }
    let Some(Event::Result(r)) = events.last() else {
        panic!("no result: {events:?}")
    };
    assert_eq!(r.outcome, v1::Outcome::DeadlineExceeded as i32, "{r:?}");
    assert!(r.length <= bounded.length, "{r:?}");
    assert_reaches_goal(&tiles, &GoalSpec::BlankFirst, &r.moves);
    assert!(r.lower_bound as usize <= optimal, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_with_a_factor_gets_a_path_within_it() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(2).await;
    let mut client = cluster.client().await;
    for (within, id) in [(3.0, 88), (1.5, 42), (1.1, 42), (1.25, 79)] {
        let (_, optimal, tiles) = korf(&[id]).remove(0);
        let mut req = request(&tiles, v1::GoalKind::BlankFirst);
        req.within = within;
        req.skip_cache = true;
        let r = client.solve(req).await.unwrap().into_inner();
        assert_eq!(
            r.outcome,
            v1::Outcome::Solved as i32,
            "#{id} w={within}: {r:?}"
        );
        assert_reaches_goal(&tiles, &GoalSpec::BlankFirst, &r.moves);
        let length = r.length as usize;
        assert!(
            length >= optimal && length as f64 <= within * optimal as f64,
            "#{id} w={within}: {length} moves, optimum {optimal}"
        );
        assert!(r.lower_bound as usize <= optimal, "#{id}: {r:?}");
        if r.optimal {
            assert_eq!(length, optimal, "#{id}: claimed optimal");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_optimal_request_is_never_answered_by_a_bounded_answer_from_the_cache() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(2).await;
    let mut client = cluster.client().await;
    let (_, optimal, tiles) = korf(&[42]).remove(0);
    let mut req = request(&tiles, v1::GoalKind::BlankFirst);
    req.within = 3.0;
    let bounded = client.solve(req).await.unwrap().into_inner();
    assert_eq!(bounded.outcome, v1::Outcome::Solved as i32, "{bounded:?}");
    assert!(!bounded.cached, "{bounded:?}");
    // It is cached with what it proves: the same factor is answered from the cache, the same
    // path with the same bound (its path is within 3 of the bound it carries).
    assert!(f64::from(bounded.length) <= 3.0 * f64::from(bounded.lower_bound));
    let mut req = request(&tiles, v1::GoalKind::BlankFirst);
    req.within = 3.0;
    let again = client.solve(req).await.unwrap().into_inner();
    assert!(again.cached, "{again:?}");
    assert_eq!(
        (&again.moves, again.lower_bound, again.optimal),
        (&bounded.moves, bounded.lower_bound, bounded.optimal)
    );
    // An optimal request is searched, unless the bounded answer was proven optimal.
    let r = client
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.cached, bounded.optimal, "{bounded:?} then {r:?}");
    assert!(r.optimal, "{r:?}");
    assert_optimal(&tiles, &GoalSpec::BlankFirst, &r.moves, optimal);
    // Now the optimal path is cached, and it serves any factor.
    let mut req = request(&tiles, v1::GoalKind::BlankFirst);
    req.within = 2.0;
    let cached = client.solve(req).await.unwrap().into_inner();
    assert!(cached.cached && cached.optimal, "{cached:?}");
    assert_eq!(cached.length as usize, optimal);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_shows_the_incumbent_with_its_gap_until_the_deadline() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(2).await;
    let mut client = cluster.client().await;
    let (optimal, tiles) = (KF1_OPTIMUM, KF1.to_string());
    let mut req = request(&tiles, v1::GoalKind::BlankFirst);
    req.timeout_ms = 2500;
    let stream = client.solve_stream(req).await.unwrap().into_inner();
    let events = all_events(stream).await;
    let bounds = bounds_of(&events);
    let with_incumbent: Vec<&&v1::BoundProgress> =
        bounds.iter().filter(|b| b.incumbent_length > 0).collect();
    assert!(!with_incumbent.is_empty(), "{bounds:?}");
    for b in &with_incumbent {
        assert_reaches_goal(&tiles, &GoalSpec::BlankFirst, &b.incumbent_moves);
        assert_eq!(b.incumbent_length as usize, b.incumbent_moves.len());
        assert!(b.incumbent_length as usize >= optimal);
        assert!(b.lower_bound <= b.incumbent_length, "{b:?}");
    }
    // The lower bound never falls and never passes the optimum.
    assert!(
        bounds
            .windows(2)
            .all(|w| w[0].lower_bound <= w[1].lower_bound)
    );
    assert!(bounds.iter().all(|b| b.lower_bound as usize <= optimal));
    let Some(Event::Result(r)) = events.last() else {
        panic!("no result: {events:?}")
    };
    assert_eq!(r.outcome, v1::Outcome::DeadlineExceeded as i32, "{r:?}");
    assert!(!r.optimal, "{r:?}");
    assert_reaches_goal(&tiles, &GoalSpec::BlankFirst, &r.moves);
    let last = bounds.last().expect("progress");
    assert!(r.lower_bound >= last.lower_bound, "{r:?}");
    assert!(r.length <= with_incumbent[0].incumbent_length, "{r:?}");
}

/// An easy board: its search ends optimal whether or not the incumbent came first, and says
/// so (`optimal`, `lower_bound` equal to the length).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_optimal_answer_says_it_is_proven() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(2).await;
    let mut client = cluster.client().await;
    for (_, optimal, tiles) in korf(&[42, 79, 55]) {
        let r = client
            .solve(request(&tiles, v1::GoalKind::BlankFirst))
            .await
            .unwrap()
            .into_inner();
        assert!(r.optimal, "{r:?}");
        assert_eq!(r.lower_bound as usize, optimal);
        assert_optimal(&tiles, &GoalSpec::BlankFirst, &r.moves, optimal);
    }
}

/// A waiter with a deadline gets its incumbent improved by weighted searches on the workers
/// (factors 1.5, then 1.2): with no quick path of the coordinator's own (`incumbent_nodes` 0)
/// and nothing cached, the path the deadline answers can only have come from them, and it is
/// within their factor of the optimum.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_is_answered_with_the_path_a_weighted_companion_found() {
    let mut config = eager_config();
    config.incumbent_nodes = 0;
    let mut cluster = TestCluster::start(config).await;
    cluster.add_worker(2).await;
    let mut client = cluster.client().await;
    let (optimal, tiles) = (KF1_OPTIMUM, KF1.to_string());
    let mut req = request(&tiles, v1::GoalKind::BlankFirst);
    req.timeout_ms = 3000;
    let r = client.solve(req).await.unwrap().into_inner();
    assert_eq!(r.outcome, v1::Outcome::DeadlineExceeded as i32, "{r:?}");
    assert!(!r.optimal && !r.cached, "{r:?}");
    assert!(!r.moves.is_empty(), "no path by the deadline: {r:?}");
    assert_reaches_goal(&tiles, &GoalSpec::BlankFirst, &r.moves);
    assert!(
        r.length as usize >= optimal && 2 * r.length as usize <= 3 * optimal,
        "{r:?}"
    );
    assert!(r.lower_bound as usize <= optimal, "{r:?}");
    // The companions ended with the flight: nothing runs on.
    for _ in 0..100 {
        let s = cluster.stats().await;
        if s.running_jobs == 0 && s.busy_slots == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!(
        "work went on after the deadline: {:?}",
        cluster.stats().await
    );
}

/// A worker that answers the companions' weighted units with a path that does not reach the
/// goal (and holds the optimal search's unit) is dropped like any forger; the search goes on
/// with an honest worker and the deadline answers a legal path or none: a forged incumbent
/// never reaches a client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_forging_the_companions_paths_is_dropped_and_the_answer_stays_legal() {
    let mut config = eager_config();
    config.incumbent_nodes = 0;
    let mut cluster = TestCluster::start(config).await;
    let (tx, mut inbound) = join_by_hand(&cluster, "forger", 4).await;
    let forging = tokio::spawn(async move {
        let mut weighted = 0;
        loop {
            match inbound.message().await {
                Ok(Some(v1::CoordinatorMessage {
                    message: Some(v1::coordinator_message::Message::Assign(a)),
                })) if a.weight_hundredths > 100 => {
                    weighted += 1;
                    // Two moves from the board: legal, nowhere near the goal.
                    let _ = tx.send(v1::WorkerMessage {
                        message: Some(v1::worker_message::Message::Result(v1::UnitResult {
                            job: a.job,
                            epoch: a.epoch,
                            unit: a.unit,
                            status: v1::UnitStatus::Found as i32,
                            moves: "RL".into(),
                            expanded: 1,
                            ..Default::default()
                        })),
                    });
                }
                Ok(Some(_)) => {}
                Ok(None) => return (weighted, None),
                Err(status) => return (weighted, Some(status)),
            }
        }
    });
    let mut client = cluster.client().await;
    let (optimal, tiles) = (KF1_OPTIMUM, KF1.to_string());
    let mut req = request(&tiles, v1::GoalKind::BlankFirst);
    req.timeout_ms = 4000;
    let asked = tokio::spawn(async move { client.solve(req).await });
    // The companion (from 1 s on) can go only to the forger, which forges its answer.
    let (weighted, closed) = tokio::time::timeout(std::time::Duration::from_secs(10), forging)
        .await
        .expect("the forger's stream was closed")
        .unwrap();
    assert!(weighted >= 1, "the forger got no companion's unit");
    let closed = closed.expect("closed with a status");
    assert_eq!(closed.code(), tonic::Code::FailedPrecondition, "{closed:?}");
    cluster.add_worker(1).await;
    let r = asked.await.unwrap().unwrap().into_inner();
    assert_eq!(r.outcome, v1::Outcome::DeadlineExceeded as i32, "{r:?}");
    assert!(!r.optimal, "{r:?}");
    if !r.moves.is_empty() {
        assert_reaches_goal(&tiles, &GoalSpec::BlankFirst, &r.moves);
        assert!(2 * r.length as usize <= 3 * optimal, "{r:?}");
    }
    assert_eq!(
        cluster.stats().await.workers,
        1,
        "only the honest worker is left"
    );
}
