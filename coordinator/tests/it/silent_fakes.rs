//! Eight workers that join first, each claiming a million search threads, take work and never
//! answer (while they heartbeat): each holds at most two tasks until it answers one, is found
//! out when the honest worker idles and asks its task back, and is dropped 3 s later; the
//! honest worker's optimal answer arrives within 30 s, and the coordinator never counted the
//! claimed threads.

use std::time::{Duration, Instant};

use crate::common::{
    GoalSpec, TestCluster, assert_optimal, eager_config, hand_hello, join_with_hello, korf, request,
};
use npuzzle_proto::v1;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_workers_claiming_many_slots_delay_an_answer_by_seconds_only() {
    let mut cluster = TestCluster::start(eager_config()).await;
    let mut fakes = Vec::new();
    for i in 0..8 {
        let (tx, mut inbound) =
            join_with_hello(&cluster, hand_hello(&format!("fake-{i}"), 1_000_000)).await;
        fakes.push(tokio::spawn(async move {
            let mut held = 0usize;
            let mut beat = tokio::time::interval(Duration::from_millis(500));
            loop {
                tokio::select! {
                    _ = beat.tick() => {
                        let heartbeat = v1::WorkerMessage {
                            message: Some(v1::worker_message::Message::Heartbeat(v1::Heartbeat { busy_slots: 0 })),
                        };
                        if tx.send(heartbeat).is_err() {
                            return held;
                        }
                    }
                    m = inbound.message() => match m {
                        Ok(Some(v1::CoordinatorMessage { message: Some(v1::coordinator_message::Message::Assign(_)) })) => held += 1,
                        Ok(Some(_)) => {}
                        _ => return held,
                    },
                }
            }
        }));
    }
    cluster.add_worker(1).await;
    let stats = cluster.stats().await;
    assert_eq!(stats.workers, 9);
    assert!(
        stats.slots <= 8 * 256 + 1,
        "claimed slots are capped: {stats:?}"
    );
    let (id, optimal, tiles) = korf(&[79]).remove(0);
    let mut client = cluster.client().await;
    let started = Instant::now();
    let r = client
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    let took = started.elapsed();
    assert_eq!(r.outcome, v1::Outcome::Solved as i32, "#{id}: {r:?}");
    assert_eq!(r.length as usize, optimal, "#{id}");
    assert_optimal(&tiles, &GoalSpec::BlankFirst, &r.moves, optimal);
    assert!(
        took < Duration::from_secs(30),
        "#{id} answered after {took:?}"
    );
    cluster.stop().await;
    for fake in fakes {
        let held = fake.await.unwrap();
        assert!(held <= 2, "a silent worker was given {held} tasks");
    }
}
