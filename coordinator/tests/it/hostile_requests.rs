//! Hostile requests through a real coordinator: deadlines past any clock (`timeout_ms` and the
//! `grpc-timeout` header), a message over the size limit, bytes that do not decode, and a
//! stream of arbitrary requests.
//! Each gets an answer or a status that names the problem; the coordinator keeps serving.
//!
//! The arbitrary requests run 2,000 cases by default (each is a gRPC round trip);
//! `PROPTEST_CASES=100000 cargo test -p npuzzle-coordinator --test it hostile_requests::` runs more.

use std::time::Duration;

use crate::common::TestCluster;
use npuzzle_coordinator::Config;
use npuzzle_proto::v1;
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use tonic::Code;

/// No workers: anything the coordinator does not solve itself is UNAVAILABLE quickly.
fn config() -> Config {
    Config {
        probe_nodes: 20_000,
        unavailable_after: Duration::from_millis(30),
        ..Config::default()
    }
}

fn easy() -> v1::SolveRequest {
    v1::SolveRequest {
        board: Some(v1::Board {
            width: 3,
            height: 3,
            tiles: vec![1, 2, 3, 4, 5, 6, 0, 7, 8],
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn deadlines_past_any_clock_are_no_deadline() {
    let cluster = TestCluster::start(config()).await;
    let mut client = cluster.client().await;
    let headers = [
        None,
        Some("18446744073709551615S"),
        Some("99999999999999999H"),
        Some("9999999999999999999M"),
        Some("18446744073709551615m"),
        Some("18446744073709551615u"),
        Some("18446744073709551615n"),
        Some("99999999H"),
        Some("-1S"),
        Some("S"),
    ];
    for header in headers {
        for timeout_ms in [0, u64::MAX, u64::MAX / 2] {
            let mut request = tonic::Request::new(v1::SolveRequest {
                timeout_ms,
                skip_cache: true,
                ..easy()
            });
            if let Some(h) = header {
                request
                    .metadata_mut()
                    .insert("grpc-timeout", h.parse().unwrap());
            }
            let answer = client
                .solve(request)
                .await
                .unwrap_or_else(|e| panic!("grpc-timeout {header:?}, timeout_ms {timeout_ms}: {e}"))
                .into_inner();
            assert_eq!(answer.outcome, v1::Outcome::Solved as i32);
            assert_eq!(answer.moves, "RR");
        }
    }
}

#[tokio::test]
async fn a_message_over_the_size_limit_is_refused_and_the_coordinator_serves_on() {
    let cluster = TestCluster::start(config()).await;
    let mut client = cluster.client().await;
    let huge = v1::SolveRequest {
        board: Some(v1::Board {
            width: 3,
            height: 3,
            // Four bytes each on the wire: 8 MB, twice the default limit.
            tiles: vec![1 << 21; 2_000_000],
        }),
        ..Default::default()
    };
    let e = client.solve(huge).await.unwrap_err();
    assert!(
        matches!(e.code(), Code::OutOfRange | Code::ResourceExhausted),
        "{e}"
    );
    assert!(e.message().contains("too large"), "{}", e.message());
    let answer = client.solve(easy()).await.unwrap().into_inner();
    assert_eq!(answer.moves, "RR");
}

/// Bytes that are not a `SolveRequest` (field 1, the board, sent as a number) are the client's
/// fault: `INVALID_ARGUMENT` naming the message, and the coordinator serves on.
#[tokio::test]
async fn a_message_that_does_not_decode_is_invalid_argument() {
    let cluster = TestCluster::start(config()).await;
    let channel = tonic::transport::Endpoint::from_shared(cluster.url.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready().await.unwrap();
    let codec: npuzzle_proto::codec::CheckedCodec<u64, v1::SolveResponse> = Default::default();
    let e = grpc
        .unary(
            tonic::Request::new(7u64),
            tonic::codegen::http::uri::PathAndQuery::from_static("/npuzzle.v1.Solver/Solve"),
            codec,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    assert!(e.message().contains("SolveRequest"), "{}", e.message());
    let answer = v1::solver_client::SolverClient::new(channel)
        .solve(easy())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.moves, "RR");
}

fn side() -> impl Strategy<Value = u32> {
    prop_oneof![6 => 2u32..=5, 1 => any::<u32>(), 1 => 0u32..8]
}

fn tiles(n: usize) -> impl Strategy<Value = Vec<u32>> {
    let n = n.min(25);
    prop_oneof![
        1 => prop::collection::vec(any::<u32>(), 0..30),
        1 => (0usize..3_000).prop_map(|len| (0..len as u32).collect()),
        4 => Just((0..n as u32).collect::<Vec<u32>>()).prop_shuffle(),
        1 => Just((0..n as u32).collect::<Vec<u32>>()).prop_shuffle().prop_map(|mut t| {
            t.pop();
            t
        }),
    ]
}

fn request() -> impl Strategy<Value = v1::SolveRequest> {
    (side(), side())
        .prop_flat_map(|(w, h)| {
            let n = (w as usize).saturating_mul(h as usize);
            (
                Just((w, h)),
                tiles(n),
                prop::option::of((prop_oneof![3 => 0i32..3, 1 => any::<i32>()], tiles(n))),
                prop_oneof![3 => 0i32..5, 1 => any::<i32>()],
                prop_oneof![Just(0u64), Just(u64::MAX), 1u64..50],
                (
                    any::<bool>(),
                    prop_oneof![3 => Just(0.0), 1 => Just(1.5), 1 => any::<f64>()],
                ),
            )
        })
        .prop_map(
            |((width, height), tiles, goal, heuristic, timeout_ms, (skip_cache, within))| {
                v1::SolveRequest {
                    board: Some(v1::Board {
                        width,
                        height,
                        tiles,
                    }),
                    goal: goal.map(|(kind, tiles)| v1::Goal {
                        kind,
                        tiles: if kind == v1::GoalKind::Custom as i32 {
                            tiles
                        } else {
                            Vec::new()
                        },
                    }),
                    heuristic,
                    timeout_ms,
                    skip_cache,
                    within,
                }
            },
        )
}

#[test]
fn arbitrary_requests_get_an_answer_or_a_named_status() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (cluster, client) = runtime.block_on(async {
        let cluster = TestCluster::start(config()).await;
        let client = cluster.client().await;
        (cluster, client)
    });
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        ..ProptestConfig::default()
    });
    runner
        .run(&request(), |r| {
            let mut client = client.clone();
            match runtime.block_on(client.solve(r.clone())) {
                Ok(answer) => {
                    let answer = answer.into_inner();
                    prop_assert!(
                        [
                            v1::Outcome::Solved,
                            v1::Outcome::Unsolvable,
                            v1::Outcome::DeadlineExceeded
                        ]
                        .iter()
                        .any(|o| *o as i32 == answer.outcome),
                        "{:?}",
                        answer
                    );
                }
                Err(status) => {
                    prop_assert!(
                        matches!(
                            status.code(),
                            Code::InvalidArgument | Code::Unavailable | Code::FailedPrecondition
                        ),
                        "{:?} → {}",
                        r,
                        status
                    );
                    prop_assert!(status.message().len() > 10, "{}", status);
                }
            }
            Ok(())
        })
        .unwrap();
    let stats = runtime.block_on(cluster.stats());
    assert_eq!(stats.workers, 0);
    drop(cluster);
}
