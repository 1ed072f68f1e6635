//! The one wait for workers to join: for a local cluster ([`crate::LocalCluster`]), for a
//! coordinator named by URL (`npuzzle load`, `cluster-bench`) and for every test alike.

use std::time::{Duration, Instant};

use npuzzle_proto::v1;

use crate::Coordinator;

/// How long workers may take to join a coordinator (loading their pattern databases
/// included), whoever waits for them.
pub const JOIN_TIMEOUT: Duration = Duration::from_secs(120);

/// Why the workers were not seen to join.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    #[error("the coordinator at {url} did not answer Stats: {}", .status.message())]
    Stats { url: String, status: tonic::Status },
    #[error(
        "{joined} of {wanted} worker(s) joined the coordinator at {url} within {} s",
        JOIN_TIMEOUT.as_secs()
    )]
    Timeout {
        url: String,
        joined: u32,
        wanted: u32,
    },
}

/// Waits until the coordinator counts `wanted` workers (at most [`JOIN_TIMEOUT`]), and returns
/// its stats then.
pub async fn wait_for_workers(
    client: &mut Coordinator,
    url: &str,
    wanted: u32,
) -> Result<v1::StatsResponse, JoinError> {
    let started = Instant::now();
    loop {
        let stats = client
            .stats(v1::StatsRequest {})
            .await
            .map_err(|status| JoinError::Stats {
                url: url.to_string(),
                status,
            })?
            .into_inner();
        if stats.workers >= wanted {
            return Ok(stats);
        }
        if started.elapsed() > JOIN_TIMEOUT {
            return Err(JoinError::Timeout {
                url: url.to_string(),
                joined: stats.workers,
                wanted,
            });
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
