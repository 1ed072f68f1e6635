//! Bearer tokens on a real coordinator: `npuzzle.v1.Solver` needs the client token and
//! `npuzzle.v1.Cluster` the worker token (missing or wrong: UNAUTHENTICATED, the token never
//! echoed); neither token opens the other service; health and reflection need none; equal
//! tokens stop the coordinator before it serves.

use std::time::Duration;

use crate::common::{
    EASIEST_KORF, GoalSpec, TestCluster, assert_optimal, eager_config, korf, request,
};
use npuzzle_coordinator::{Auth, AuthError, Config};
use npuzzle_proto::security::{ClientSecurity, Token};
use npuzzle_proto::v1;
use npuzzle_proto::v1::solver_client::SolverClient;
use tokio_util::sync::CancellationToken;
use tonic::Code;
use tonic::transport::Channel;

const CLIENT_TOKEN: &str = "client-8c1f0e5d2b7a";
const WORKER_TOKEN: &str = "worker-3e9a4c6f1d0b";

fn token(secret: &str) -> Option<Token> {
    Some(Token::new(secret, "test").unwrap())
}

fn with_token(secret: &str) -> ClientSecurity {
    ClientSecurity {
        token: token(secret),
        ..ClientSecurity::default()
    }
}

/// A coordinator that requires both tokens, with one worker joined (with the worker token).
async fn guarded_cluster() -> TestCluster {
    let config = Config {
        auth: Auth {
            client: token(CLIENT_TOKEN),
            worker: token(WORKER_TOKEN),
        },
        ..eager_config()
    };
    let mut cluster =
        TestCluster::start_secured(config, with_token(CLIENT_TOKEN), with_token(WORKER_TOKEN))
            .await;
    cluster.add_worker(2).await;
    cluster
}

/// A client of the cluster's coordinator that sends `secret` (or nothing).
async fn client_with(cluster: &TestCluster, secret: Option<&str>) -> npuzzle_cluster::Coordinator {
    let security = ClientSecurity {
        token: secret.and_then(token),
        ..ClientSecurity::default()
    };
    let channel = security
        .endpoint(&cluster.url)
        .unwrap()
        .connect()
        .await
        .unwrap();
    SolverClient::with_interceptor(channel, security.interceptor())
}

fn easy_korf() -> (usize, String) {
    let (_, length, tiles) = korf(&EASIEST_KORF[..1]).remove(0);
    (length, tiles)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn solve_needs_the_client_token() {
    let cluster = guarded_cluster().await;
    let (optimum, tiles) = easy_korf();
    let board = || request(&tiles, v1::GoalKind::BlankFirst);

    let missing = client_with(&cluster, None)
        .await
        .solve(board())
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::Unauthenticated, "{missing:?}");
    assert!(
        missing.message().contains("token is required"),
        "{missing:?}"
    );

    let wrong = client_with(&cluster, Some("client-guess-000000"))
        .await
        .solve(board())
        .await
        .unwrap_err();
    assert_eq!(wrong.code(), Code::Unauthenticated, "{wrong:?}");
    assert_eq!(wrong.message(), "invalid token");

    // A plain `Authorization: Basic …` or a bare token is refused too, without echoing it.
    let mut raw = SolverClient::new(
        Channel::from_shared(cluster.url.clone())
            .unwrap()
            .connect()
            .await
            .unwrap(),
    );
    let mut basic = tonic::Request::new(v1::StatsRequest {});
    basic
        .metadata_mut()
        .insert("authorization", CLIENT_TOKEN.parse().unwrap());
    let malformed = raw.stats(basic).await.unwrap_err();
    assert_eq!(malformed.code(), Code::Unauthenticated);
    assert!(!malformed.message().contains(CLIENT_TOKEN), "{malformed:?}");

    let mut right = cluster.client().await;
    let answer = right.solve(board()).await.unwrap().into_inner();
    assert_eq!(answer.outcome, v1::Outcome::Solved as i32);
    assert_optimal(&tiles, &GoalSpec::BlankFirst, &answer.moves, optimum);
    assert_eq!(
        right
            .stats(v1::StatsRequest {})
            .await
            .unwrap()
            .into_inner()
            .workers,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_token_cannot_submit_work() {
    let cluster = guarded_cluster().await;
    let (_, tiles) = easy_korf();
    let refused = client_with(&cluster, Some(WORKER_TOKEN))
        .await
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert_eq!(refused.message(), "invalid token");
}

/// Runs a worker that sends `secret` (or nothing) and returns how `run` ended: at once, since a
/// refused token is fatal.
async fn worker_with(cluster: &TestCluster, secret: Option<&str>) -> npuzzle_worker::Error {
    let mut config = npuzzle_worker::Config::new(cluster.url.clone());
    config.threads = 1;
    config.load_pdbs = false;
    config.security.token = secret.and_then(token);
    let ended = tokio::time::timeout(
        Duration::from_secs(20),
        npuzzle_worker::run(config, CancellationToken::new()),
    )
    .await
    .expect("a refused worker stops instead of retrying");
    ended.expect_err("the coordinator refuses the join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_token_cannot_join_as_a_worker() {
    let cluster = guarded_cluster().await;
    for (secret, message) in [
        (Some(CLIENT_TOKEN), "invalid token"),
        (None, "token is required"),
    ] {
        match worker_with(&cluster, secret).await {
            npuzzle_worker::Error::Unauthenticated(status) => {
                assert_eq!(status.code(), Code::Unauthenticated);
                assert!(status.message().contains(message), "{status:?}");
            }
            other => panic!("{other}"),
        }
    }
    // Only the worker that joined with the worker token counts.
    assert_eq!(cluster.stats().await.workers, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_reflection_answer_without_a_token() {
    use tokio_stream::StreamExt;
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

    let cluster = guarded_cluster().await;
    let channel = Channel::from_shared(cluster.url.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let health = HealthClient::new(channel.clone())
        .check(HealthCheckRequest {
            service: "npuzzle.v1.Solver".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(health.status, ServingStatus::Serving as i32);

    let list = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = ServerReflectionClient::new(channel)
        .server_reflection_info(tokio_stream::once(list))
        .await
        .unwrap()
        .into_inner();
    let Some(MessageResponse::ListServicesResponse(services)) =
        answers.next().await.unwrap().unwrap().message_response
    else {
        panic!("no service list");
    };
    let names: Vec<String> = services.service.into_iter().map(|s| s.name).collect();
    assert!(
        names.contains(&"npuzzle.v1.Solver".to_string()),
        "{names:?}"
    );
}

#[tokio::test]
async fn equal_tokens_refuse_to_start() {
    let config = Config {
        auth: Auth {
            client: token("the-same-token"),
            worker: token("the-same-token"),
        },
        ..Config::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ended = tokio::time::timeout(
        Duration::from_secs(5),
        npuzzle_coordinator::run(listener, config, CancellationToken::new()),
    )
    .await
    .expect("run returns at once");
    match ended {
        Err(npuzzle_coordinator::Error::Config(AuthError::SameTokens)) => {}
        other => panic!("{other:?}"),
    }
}
