//! `npuzzle load`: a load test. Many concurrent clients send one coordinator a mix of boards it
//! has answered before (cache hits), new solvable boards, malformed requests and unsolvable
//! boards, and every answer is checked here:
//!
//! - a solvable board: the path is replayed on the board, must reach the goal, and must be as
//!   long as the optimum computed in this process (the exact table up to 9 cells, IDA* with
//!   linear conflict above: larger boards are random walks, so that this stays quick);
//! - an unsolvable board (a solvable one with two tiles swapped): `OUTCOME_UNSOLVABLE`;
//! - a malformed request (wrong tile count, a duplicate tile, width 0, …): `INVALID_ARGUMENT`;
//! - `RESOURCE_EXHAUSTED` (past the coordinator's `--max-searches`) is no answer yet: the client
//!   waits the `retry-after-ms` hint (at most [`LoadPlan::max_retry_wait`]), asks again and counts
//!   the retry.
//!
//! Anything else is **lost** (no answer within [`LoadPlan::timeout`]: a transport error,
//! `UNAVAILABLE`, a search cancelled or past its deadline, still `RESOURCE_EXHAUSTED` at the
//! timeout) or **wrong** (an answer that is not the right one). The [`LoadReport`] counts them by
//! kind, with throughput and latency percentiles.
//!
//! The workload is drawn from [`LoadPlan::seed`] before anything is sent: the same seed sends the
//! same requests (in an order that depends on timing, as clients take the next request when
//! they are free).
//!
//! # Layout
//!
//! - [`plan`]: the kinds, the mix and the plan;
//! - `workload`: the requests drawn from the seed, and what each must get back;
//! - `drive`: the client tasks, the retries and the judging of each answer;
//! - [`report`]: the counts, the latencies and the text.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use npuzzle_proto::security::ClientSecurity;
use npuzzle_solver::Shape;

use npuzzle_cluster::{ConnectError, JoinError, connect, wait_for_workers};

mod drive;
pub mod plan;
pub mod report;
mod workload;

pub use plan::{DEFAULT_MIX, Kind, LoadPlan, Mix, MixError};
pub use report::{Latency, LoadReport, Tally};

use drive::{Verdict, drive};
use workload::{Workload, workload};

/// Failures reported in full, at most.
const FAILURES_SHOWN: usize = 20;

/// Why a load test could not run (lost and wrong answers are not errors: they are in the report).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "{shape} boards need --walk K: the optimum of a uniformly random one takes far too long to check"
    )]
    NeedsWalk { shape: Shape },
    #[error("the mix asks for cached boards but --warm is 0: there is nothing to repeat")]
    NothingToRepeat,
    #[error(transparent)]
    Mix(#[from] MixError),
    #[error("cannot reach the coordinator at {url}: {source}")]
    Connect { url: String, source: ConnectError },
    #[error(transparent)]
    Join(#[from] JoinError),
    #[error("cannot find the optimum of {board}: {why}")]
    Optimum { board: String, why: String },
}

/// Connects `plan.connections` channels (one per client when 0) to the coordinator at `url`,
/// waits for a worker, sends the warm-up and then the measured run, and reports.
pub async fn run(
    url: &str,
    security: &ClientSecurity,
    plan: &LoadPlan,
) -> Result<LoadReport, LoadError> {
    plan.check()?;
    let connections = match plan.connections {
        0 => plan.clients.max(1),
        n => n,
    };
    let mut clients = Vec::with_capacity(connections);
    for _ in 0..connections {
        let client = connect(url, security)
            .await
            .map_err(|source| LoadError::Connect {
                url: url.to_string(),
                source,
            })?;
        clients.push(client);
    }
    let stats = wait_for_workers(&mut clients[0], url, 1).await?;

    let drawn = plan.clone();
    let Workload { warm, run } = tokio::task::spawn_blocking(move || workload(&drawn))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;

    let warm = drive(&clients, Arc::new(warm), plan, None, plan.seed).await;
    let stop_at = Instant::now() + plan.duration;
    let measured = drive(&clients, Arc::new(run), plan, Some(stop_at), !plan.seed).await;

    let warmup = Tally::of(warm.answers.iter()).with_vanished(warm.vanished);
    let total = Tally::of(measured.answers.iter()).with_vanished(measured.vanished);
    let kinds = Kind::ALL
        .iter()
        .map(|&k| {
            let tally = Tally::of(measured.answers.iter().filter(|a| a.kind == k));
            (k.name(), tally)
        })
        .collect();
    let mut answers = BTreeMap::new();
    for a in &measured.answers {
        *answers.entry(a.how.clone()).or_insert(0) += 1;
    }
    let mut failures = Vec::new();
    for (phase, a) in warm
        .answers
        .iter()
        .map(|a| ("warm-up", a))
        .chain(measured.answers.iter().map(|a| ("run", a)))
    {
        let (what, why) = match &a.verdict {
            Verdict::Right => continue,
            Verdict::Lost(why) => ("lost", why),
            Verdict::Wrong(why) => ("wrong", why),
        };
        if failures.len() < FAILURES_SHOWN {
            failures.push(format!(
                "{what}: {phase} {} {}: {why}",
                a.kind.name(),
                a.request
            ));
        }
    }
    for (phase, n) in [("warm-up", warm.vanished), ("run", measured.vanished)] {
        if n > 0 {
            failures.push(format!(
                "lost: {phase}: {n} requests of a client task that failed"
            ));
        }
    }
    let wall_s = measured.elapsed.as_secs_f64();
    let lost = warmup.lost + total.lost;
    let wrong = warmup.wrong + total.wrong;
    Ok(LoadReport {
        coordinator: url.to_string(),
        workers: stats.workers,
        slots: stats.slots,
        shape: plan.shape.to_string(),
        walk: plan.walk,
        mix: plan.mix.to_string(),
        seed: plan.seed,
        clients: plan.clients,
        connections,
        throughput_rps: if wall_s > 0.0 {
            total.requests as f64 / wall_s
        } else {
            0.0
        },
        warmup,
        warmup_s: warm.elapsed.as_secs_f64(),
        kinds,
        total,
        not_sent: measured.not_sent,
        answers,
        wall_s,
        lost,
        wrong,
        passed: lost == 0 && wrong == 0,
        failures,
    })
}
