//! The real `npuzzle-worker` binary refuses what it must not trust, and says so: a coordinator
//! whose TLS certificate does not verify is never joined (an ERROR names the failure, and the
//! worker keeps trying); a coordinator that refuses its token stops it (an ERROR, exit status 1,
//! the token never printed).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use npuzzle_cluster::Options;
use npuzzle_cluster::testing::{ClusterThread, Process, certs};
use npuzzle_coordinator::{Auth, Config, ServerTls};
use npuzzle_proto::security::{PemCertificates, Token};

/// A coordinator with `config` (and no workers) on a runtime thread of its own, reached with
/// `tls_ca` when it serves TLS.
fn start_coordinator(config: Config, tls_ca: Option<PemCertificates>) -> ClusterThread {
    ClusterThread::start(Options {
        coordinator: config,
        tls_ca,
        workers: 0,
        ..Options::default()
    })
}

/// The worker binary with `args`, JSON logs on stderr, and no token or TLS settings from the
/// environment.
fn worker(args: &[&str]) -> Process {
    let empty = std::env::temp_dir().join(format!("npuzzle-no-tables-{}", std::process::id()));
    let mut command = Command::new(env!("CARGO_BIN_EXE_npuzzle-worker"));
    command
        .args(["--threads", "1", "--log-format", "json"])
        .args(args)
        .env("NPUZZLE_PDB_DIR", &empty)
        .env_remove("RUST_LOG");
    for name in [
        "NPUZZLE_WORKER_TOKEN",
        "NPUZZLE_WORKER_TOKEN_FILE",
        "NPUZZLE_TLS_CA",
        "NPUZZLE_TLS_DOMAIN",
    ] {
        command.env_remove(name);
    }
    Process::spawn(
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
}

/// A stderr line of the worker as a JSON object (`{"raw": line}` if it is not one).
fn event(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap_or(serde_json::json!({ "raw": line }))
}

#[test]
fn a_coordinator_whose_certificate_does_not_verify_is_never_joined() {
    let pki = certs::pki();
    let config = Config {
        tls: Some(ServerTls::read(&pki.cert, &pki.key).unwrap()),
        ..Config::default()
    };
    let cluster = start_coordinator(config, Some(PemCertificates::read(&pki.ca).unwrap()));
    let url = cluster.url.clone();
    let other_ca = pki.other_ca.to_str().unwrap();
    let mut child = worker(&["--coordinator", &url, "--tls-ca", other_ca]);
    let lines = child.stderr_lines();
    let started = Instant::now();
    let mut errors = 0;
    while errors < 2 && started.elapsed() < Duration::from_secs(30) {
        let Ok(line) = lines.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        let event = event(&line);
        assert_ne!(event["message"], "joined", "{event}");
        if event["level"] == "ERROR" {
            let why = event["tls_error"].as_str().unwrap_or_default();
            assert!(why.contains("UnknownIssuer"), "{event}");
            assert!(
                event["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("not joining")),
                "{event}"
            );
            errors += 1;
        }
    }
    // Two errors: it tried again rather than exit.
    assert_eq!(errors, 2, "no ERROR naming the certificate failure");
    assert!(child.try_wait().is_none(), "the worker exited");
    child.kill();
    cluster.stop();
}

#[test]
fn a_refused_token_stops_the_worker() {
    let config = Config {
        auth: Auth {
            client: None,
            worker: Some(Token::new("the-real-worker-token", "test").unwrap()),
        },
        ..Config::default()
    };
    let cluster = start_coordinator(config, None);
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "a-wrong-guess-1234\n").unwrap();
    let url = cluster.url.clone();
    let mut child = worker(&[
        "--coordinator",
        &url,
        "--token-file",
        token_file.to_str().unwrap(),
    ]);
    let lines = child.stderr_lines();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the worker keeps running with a refused token"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1));
    let events: Vec<serde_json::Value> = lines.iter().map(|l| event(&l)).collect();
    let text = events
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        events.iter().any(|e| e["level"] == "ERROR"
            && e["error"]
                .as_str()
                .is_some_and(|m| m.contains("refused this worker's token"))),
        "{text}"
    );
    assert!(!text.contains("a-wrong-guess"), "{text}");
    assert!(!text.contains("the-real-worker-token"), "{text}");
    cluster.stop();
}
