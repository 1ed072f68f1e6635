//! `npuzzle cluster` audits worker reports when it listens where other hosts can join, and says
//! so when it starts; on loopback it does not.

use std::process::{Command, Stdio};
use std::time::Duration;

use npuzzle_cluster::testing::Process;

/// The line `npuzzle cluster --listen LISTEN ARGS…` prints once its worker has joined.
fn start_line(listen: &str, args: &[&str]) -> String {
    let empty = tempfile::tempdir().unwrap();
    let mut cluster = Process::spawn(
        Command::new(env!("CARGO_BIN_EXE_npuzzle"))
            .args([
                "cluster",
                "--listen",
                listen,
                "--workers",
                "1",
                "--threads",
                "1",
            ])
            .args(args)
            .env("NPUZZLE_PDB_DIR", empty.path())
            .env_remove("NPUZZLE_AUDIT_FRACTION")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    cluster.wait_for_line(Duration::from_secs(60), |_| true)
}

#[test]
fn npuzzle_cluster_audits_when_other_hosts_can_join() {
    let everywhere = start_line("0.0.0.0:0", &[]);
    assert!(
        everywhere.starts_with("npuzzle cluster on 0.0.0.0:"),
        "{everywhere}"
    );
    assert!(everywhere.contains("audit fraction 0.01"), "{everywhere}");
    let loopback = start_line("127.0.0.1:0", &[]);
    assert!(loopback.contains("audits off"), "{loopback}");
    let off = start_line("0.0.0.0:0", &["--audit-fraction", "0"]);
    assert!(off.contains("audits off"), "{off}");
}
