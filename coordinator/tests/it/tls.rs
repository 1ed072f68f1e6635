//! TLS on a real coordinator, with certificates made by rcgen at test time: a worker and a client
//! that trust the coordinator's CA solve through it; a worker that trusts another CA never joins
//! (and keeps trying, without giving up its settings); plaintext and unverified clients get
//! nothing from the TLS port.

use std::time::{Duration, Instant};

use crate::common::{
    EASIEST_KORF, GoalSpec, TestCluster, assert_optimal, eager_config, korf, request,
};
use npuzzle_cluster::testing::certs::pki;
use npuzzle_coordinator::{Config, ServerTls};
use npuzzle_proto::security::{ClientSecurity, PemCertificates, tls_failure};
use npuzzle_proto::v1;
use npuzzle_proto::v1::solver_client::SolverClient;
use tokio_util::sync::CancellationToken;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

fn trusting(ca: &std::path::Path) -> ClientSecurity {
    ClientSecurity {
        tls_ca: Some(PemCertificates::read(ca).unwrap()),
        ..ClientSecurity::default()
    }
}

/// A coordinator serving TLS with `pki`'s certificate; its clients trust `pki.ca`, and so do
/// the workers `add_worker` starts.
async fn tls_cluster(pki: &npuzzle_cluster::testing::certs::Pki) -> TestCluster {
    let config = Config {
        tls: Some(ServerTls::read(&pki.cert, &pki.key).unwrap()),
        ..eager_config()
    };
    TestCluster::start_secured(config, trusting(&pki.ca), trusting(&pki.ca)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_and_a_client_that_trust_the_ca_solve() {
    let pki = pki();
    let mut cluster = tls_cluster(&pki).await;
    assert!(cluster.url.starts_with("https://127.0.0.1:"));
    // The worker checks the certificate's IP address; this client its name (`localhost`).
    cluster.add_worker(2).await;
    cluster.client_security.tls_domain = Some("localhost".into());
    let (_, optimum, tiles) = korf(&EASIEST_KORF[..1]).remove(0);
    let answer = cluster
        .client()
        .await
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.outcome, v1::Outcome::Solved as i32);
    assert_optimal(&tiles, &GoalSpec::BlankFirst, &answer.moves, optimum);
    assert!(answer.units > 0, "searched by the worker, over TLS");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_does_not_trust_the_certificate_never_joins() {
    let pki = pki();
    let cluster = tls_cluster(&pki).await;
    let mut config = npuzzle_worker::Config::new(cluster.url.clone());
    config.threads = 1;
    config.load_pdbs = false;
    config.max_backoff = Duration::from_millis(200);
    config.security = trusting(&pki.other_ca);
    let stop = CancellationToken::new();
    let worker = tokio::spawn(npuzzle_worker::run(config, stop.clone()));

    let channel = trusting(&pki.ca)
        .endpoint(&cluster.url)
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = HealthClient::new(channel);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        assert_eq!(cluster.stats().await.workers, 0);
        let status = health
            .check(HealthCheckRequest::default())
            .await
            .unwrap()
            .into_inner()
            .status;
        assert_eq!(status, ServingStatus::NotServing as i32);
        assert!(
            !worker.is_finished(),
            "the worker gave up: {:?}",
            worker.await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // It was retrying all along, and stops cleanly when told to.
    stop.cancel();
    let ended = tokio::time::timeout(Duration::from_secs(5), worker)
        .await
        .expect("the worker stops")
        .unwrap();
    assert!(ended.is_ok(), "{ended:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_and_unverified_clients_get_nothing() {
    let pki = pki();
    let cluster = tls_cluster(&pki).await;
    let address = cluster.url.trim_start_matches("https://");

    // h2c to the TLS port: no answer.
    let plaintext = async {
        let mut client = SolverClient::connect(format!("http://{address}")).await?;
        client.stats(v1::StatsRequest {}).await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    let plaintext = tokio::time::timeout(Duration::from_secs(10), plaintext)
        .await
        .expect("a plaintext client fails quickly");
    assert!(plaintext.is_err());

    // TLS with the default roots (or with the wrong CA): the certificate does not verify.
    for security in [ClientSecurity::default(), trusting(&pki.other_ca)] {
        let error = security
            .endpoint(&cluster.url)
            .unwrap()
            .connect()
            .await
            .unwrap_err();
        let why = tls_failure(&error).map(ToString::to_string);
        assert!(
            why.as_deref().is_some_and(|w| w.contains("UnknownIssuer")),
            "{why:?}: {error:?}"
        );
    }

    // The right CA but a name the certificate does not carry.
    let wrong_name = ClientSecurity {
        tls_domain: Some("coordinator.example".into()),
        ..trusting(&pki.ca)
    };
    let error = wrong_name
        .endpoint(&cluster.url)
        .unwrap()
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(
            tls_failure(&error),
            Some(rustls::Error::InvalidCertificate(_))
        ),
        "{error:?}"
    );
}
