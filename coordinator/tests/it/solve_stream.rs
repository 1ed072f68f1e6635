//! `SolveStream`: queued, then each bound as it starts and finishes, with at most an update a
//! second within it (never per node), then the result; a cached answer is one result event.

use crate::common::{GoalSpec, TestCluster, assert_optimal, eager_config, korf, request};
use npuzzle_proto::v1;
use npuzzle_proto::v1::solve_event::Event;

/// Every event of one `SolveStream` for `tiles` (blank-first goal).
async fn stream_events(client: &mut npuzzle_cluster::Coordinator, tiles: &str) -> Vec<Event> {
    let mut stream = client
        .solve_stream(request(tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    let mut events = Vec::new();
    while let Some(e) = stream.message().await.unwrap() {
        events.push(e.event.unwrap());
    }
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_then_the_optimal_result() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(2).await;
    let mut client = cluster.client().await;
    let (_, optimal, tiles) = korf(&[42]).remove(0);
    let started = std::time::Instant::now();
    let events = stream_events(&mut client, &tiles).await;
    let took = started.elapsed().as_secs() as usize;
    assert!(
        matches!(events.first(), Some(Event::Queued(_))),
        "{events:?}"
    );
    let bounds: Vec<&v1::BoundProgress> = events
        .iter()
        .filter_map(|e| match e {
            Event::Bound(b) => Some(b),
            _ => None,
        })
        .collect();
    assert!(!bounds.is_empty(), "{events:?}");
    assert!(
        bounds.windows(2).all(|w| w[0].bound <= w[1].bound),
        "{bounds:?}"
    );
    assert!(
        bounds
            .iter()
            .all(|b| b.units_total > 0 && b.units_done <= b.units_total)
    );
    // A sane rate: at most a start and a finish per bound, and an update a second within one.
    assert!(
        bounds.len() <= 2 * (optimal / 2 + 1) + took + 1,
        "{} progress events in {took} s",
        bounds.len()
    );
    // The forecast, where there is one, is consistent with the counts it comes with.
    for b in &bounds {
        assert!(b.nodes_in_bound <= b.nodes, "{b:?}");
        assert!((0.0..=1.0).contains(&b.fraction), "{b:?}");
        if b.predicted_nodes > 0 {
            assert!(b.predicted_nodes >= b.nodes_in_bound, "{b:?}");
            assert!(!b.finished, "{b:?}");
        } else {
            assert_eq!((b.fraction, b.eta_seconds), (0.0, None), "{b:?}");
        }
    }
    let Some(Event::Result(r)) = events.last() else {
        panic!("no result: {events:?}")
    };
    assert_eq!(
        (r.outcome, r.length as usize),
        (v1::Outcome::Solved as i32, optimal)
    );
    assert_optimal(&tiles, &GoalSpec::BlankFirst, &r.moves, optimal);
    assert!(bounds.last().unwrap().bound as usize <= optimal);

    // Now cached: a single result event.
    let events = stream_events(&mut client, &tiles).await;
    assert_eq!(events.len(), 1);
    let Event::Result(r) = &events[0] else {
        panic!("{events:?}")
    };
    assert!(r.cached);
}

#[tokio::test]
async fn invalid_input_is_invalid_argument_before_any_event() {
    let cluster = TestCluster::start(eager_config()).await;
    let mut client = cluster.client().await;
    let err = client
        .solve_stream(v1::SolveRequest::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
}
