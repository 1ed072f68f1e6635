//! `Config::validate` refuses settings a worker cannot work with, naming each; `run` and the
//! binary refuse them at start instead of raising them to a floor.

use std::process::{Command, Stdio};
use std::time::Duration;

use npuzzle_worker::Config;
use tokio_util::sync::CancellationToken;

#[test]
fn settings_out_of_range_are_refused_by_name() {
    Config::new("http://127.0.0.1:9").validate().unwrap();
    type Change = fn(&mut Config);
    let cases: [(Change, &str); 3] = [
        (|c| c.threads = 0, "threads is 0"),
        (|c| c.heartbeat = Duration::ZERO, "the heartbeat is zero"),
        (
            |c| c.max_backoff = Duration::ZERO,
            "the largest backoff is zero",
        ),
    ];
    for (change, name) in cases {
        let mut config = Config::new("http://127.0.0.1:9");
        change(&mut config);
        let message = config.validate().unwrap_err().to_string();
        assert!(message.contains(name), "{name}: {message}");
    }
}

#[tokio::test]
async fn run_refuses_them_at_once() {
    let mut config = Config::new("http://127.0.0.1:9");
    config.threads = 0;
    config.load_pdbs = false;
    let ran = tokio::time::timeout(
        Duration::from_secs(10),
        npuzzle_worker::run(config, CancellationToken::new()),
    )
    .await
    .expect("run returns at once");
    let error = ran.unwrap_err();
    assert!(
        matches!(error, npuzzle_worker::Error::Config(_)),
        "{error:?}"
    );
    assert!(error.to_string().contains("threads is 0"), "{error}");
}

#[test]
fn the_binary_refuses_no_threads() {
    let out = Command::new(env!("CARGO_BIN_EXE_npuzzle-worker"))
        .args(["--coordinator", "http://127.0.0.1:9", "--threads", "0"])
        .env_remove("NPUZZLE_METRICS_LISTEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("threads is 0"), "{stderr}");
}
