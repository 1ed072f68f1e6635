//! Detached jobs on a coordinator, for `npuzzle submit`, `jobs`, `wait` and `cancel`: a search
//! submitted by one process goes on after it exits, and any process with the client token reads
//! its progress and answer by id.

use std::time::Duration;

use npuzzle_cluster::Coordinator;
use npuzzle_proto::v1;
use npuzzle_solver::Shape;

use crate::engine::Settings;
use crate::remote::request;
use npuzzle_proto::answer::{Answer, FailReason};

/// Why a job command got no job.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The board cannot be sent as given.
    #[error("{0}")]
    Invalid(String),
    /// The coordinator refused the call (a bad id, an unknown job, a wrong token, ...).
    #[error("{}", .0.message())]
    Status(#[from] tonic::Status),
}

/// Submits `text` as a detached job; its state as the coordinator first reports it.
pub async fn submit(
    client: &mut Coordinator,
    text: &str,
    shape: Option<Shape>,
    settings: &Settings,
) -> Result<v1::JobStatus, JobError> {
    let request = request(text, shape, settings).map_err(JobError::Invalid)?;
    Ok(client.submit_job(request).await?.into_inner())
}

/// The jobs the coordinator keeps, oldest first.
pub async fn list(client: &mut Coordinator) -> Result<Vec<v1::JobStatus>, JobError> {
    Ok(client
        .list_jobs(v1::ListJobsRequest {})
        .await?
        .into_inner()
        .jobs)
}

/// Cancels job `id`; its state after.
pub async fn cancel(client: &mut Coordinator, id: &str) -> Result<v1::JobStatus, JobError> {
    Ok(client
        .cancel_job(v1::JobRequest { id: id.into() })
        .await?
        .into_inner())
}

/// Follows job `id` to its end, telling `progress` of each state on the way; returns the final
/// state. A stream cut before the end (a coordinator restarting) is opened again for `retry_for`.
pub async fn wait(
    client: &mut Coordinator,
    id: &str,
    retry_for: Duration,
    mut progress: impl FnMut(&v1::JobStatus),
) -> Result<v1::JobStatus, JobError> {
    let mut cut_since: Option<std::time::Instant> = None;
    loop {
        let opened = client.watch_job(v1::JobRequest { id: id.into() }).await;
        let mut stream = match opened {
            Ok(s) => s.into_inner(),
            Err(status) if status.code() == tonic::Code::Unavailable => {
                let since = *cut_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() > retry_for {
                    return Err(status.into());
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            Err(status) => return Err(status.into()),
        };
        cut_since = None;
        // A stream that ends or is cut before the final state is opened again.
        while let Ok(Some(status)) = stream.message().await {
            progress(&status);
            if is_final(&status) {
                return Ok(status);
            }
        }
    }
}

/// Whether a job in this state has ended.
pub fn is_final(status: &v1::JobStatus) -> bool {
    !matches!(
        v1::JobState::try_from(status.state),
        Ok(v1::JobState::Running | v1::JobState::Unspecified)
    )
}

/// A final job state as the answer `npuzzle solve` would print for the same board.
pub fn answer(status: &v1::JobStatus) -> Answer {
    match v1::JobState::try_from(status.state) {
        Ok(v1::JobState::Done) => match &status.result {
            Some(r) => Answer {
                nodes: r.nodes,
                cached: r.cached,
                millis: (r.millis * 1e3).round() / 1e3,
                ..Answer::from_response(0, r)
            },
            None => Answer::failed(0, FailReason::Internal, "the job is done without a result"),
        },
        Ok(v1::JobState::Cancelled) => {
            Answer::failed(0, FailReason::Cancelled, "the job was cancelled")
        }
        Ok(v1::JobState::Failed) => Answer::failed(0, FailReason::Internal, status.error.clone()),
        _ => Answer::failed(0, FailReason::Internal, "the job has not ended"),
    }
}

/// A job's state in one word.
pub fn state_name(status: &v1::JobStatus) -> &'static str {
    match v1::JobState::try_from(status.state) {
        Ok(v1::JobState::Running) => "running",
        Ok(v1::JobState::Done) => "done",
        Ok(v1::JobState::Failed) => "failed",
        Ok(v1::JobState::Cancelled) => "cancelled",
        _ => "unknown",
    }
}

/// `npuzzle jobs`'s line for a job: id, state, bound, progress, ETA, age and board.
pub fn table_line(status: &v1::JobStatus) -> String {
    let p = status.progress.as_ref();
    let bound = p.map_or("-".to_string(), |p| p.bound.to_string());
    let progress = match p {
        Some(p) if p.predicted_nodes > 0 && !is_final(status) => format!(
            "{}{:.0}% of ~{}",
            if p.extrapolated { "~" } else { "" },
            p.fraction * 100.0,
            short_count(p.predicted_nodes)
        ),
        // A finished search: its answer's count (progress reports lag behind it).
        _ if status.result.is_some() => short_count(status.result.as_ref().map_or(0, |r| r.nodes)),
        Some(p) => short_count(p.nodes),
        None => "-".into(),
    };
    let eta = p
        .and_then(|p| p.eta_seconds)
        .filter(|_| !is_final(status))
        .map_or("-".into(), short_duration);
    let board = status.board.as_ref().map_or(String::new(), |b| {
        b.tiles
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    });
    format!(
        "{:<16}  {:<9}  {:>5}  {:>16}  {:>8}  {:>8}  {}",
        status.id,
        state_name(status),
        bound,
        progress,
        eta,
        short_duration(status.age_seconds),
        board
    )
}

/// The heading of [`table_line`]'s columns.
pub const TABLE_HEADING: &str =
    "ID                STATE      BOUND          PROGRESS       ETA       AGE  BOARD";

/// 1234567 as `1.2M`.
fn short_count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1}M", n as f64 / 1e6),
        _ => format!("{:.1}G", n as f64 / 1e9),
    }
}

/// 3725 s as `1h02m`.
fn short_duration(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_durations_are_short() {
        assert_eq!(short_count(999), "999");
        assert_eq!(short_count(1_234_567), "1.2M");
        assert_eq!(short_count(5_600_000_000), "5.6G");
        assert_eq!(short_duration(59.4), "59s");
        assert_eq!(short_duration(3725.0), "1h02m");
        assert_eq!(short_duration(-3.0), "0s");
    }

    #[test]
    fn a_running_job_shows_its_forecast_and_a_finished_one_its_nodes() {
        let mut status = v1::JobStatus {
            id: "0123456789abcdef".into(),
            state: v1::JobState::Running as i32,
            progress: Some(v1::BoundProgress {
                bound: 52,
                nodes: 1_500_000,
                predicted_nodes: 4_000_000,
                fraction: 0.25,
                eta_seconds: Some(90.0),
                ..Default::default()
            }),
            ..Default::default()
        };
        let line = table_line(&status);
        assert!(
            line.contains("running") && line.contains("25% of ~4.0M"),
            "{line}"
        );
        assert!(line.contains("1m30s"), "{line}");
        status.state = v1::JobState::Done as i32;
        status.result = Some(v1::SolveResponse {
            nodes: 2_500_000,
            ..Default::default()
        });
        let line = table_line(&status);
        assert!(line.contains("done") && line.contains("2.5M"), "{line}");
        assert!(!line.contains("1m30s"), "{line}");
    }

    #[test]
    fn final_states_become_the_answers_solve_prints() {
        let done = v1::JobStatus {
            state: v1::JobState::Done as i32,
            result: Some(v1::SolveResponse {
                outcome: v1::Outcome::Solved as i32,
                moves: "RR".into(),
                length: 2,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            answer(&done),
            Answer::from_response(0, done.result.as_ref().unwrap())
        );
        let cancelled = v1::JobStatus {
            state: v1::JobState::Cancelled as i32,
            ..Default::default()
        };
        assert_eq!(answer(&cancelled).reason, Some(FailReason::Cancelled));
        assert!(is_final(&cancelled));
        assert!(!is_final(&v1::JobStatus {
            state: v1::JobState::Running as i32,
            ..Default::default()
        }));
    }
}
