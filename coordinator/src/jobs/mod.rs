//! Detached jobs: searches that go on after the call that submitted them has ended, looked at,
//! waited for and cancelled by id from any client (gRPC `SubmitJob`, `GetJob`, `WatchJob`,
//! `CancelJob`, `ListJobs`; the HTTP API's `/api/v1/jobs`; the CLI's `submit`, `jobs`, `wait`,
//! `cancel`).
//!
//! A job is a request run through the solve pipeline (`solve.rs`) by a task of its own instead
//! of by a waiting call: the same validation, admission under the search limits, flight (so a
//! job and `Solve` calls for the same puzzle share one search) and cache. Its id is derived from
//! the puzzle (the board as its goal relabels it, and the heuristic asked for), so the same
//! puzzle always has the same id, on this coordinator or after a restart, and submitting it
//! again joins the job kept for it. Finished jobs are kept for [`crate::Config::job_ttl`]; at
//! most [`MAX_JOBS`] are kept at once (past it, the one that finished first makes room), so what
//! a client can make the coordinator hold is bounded and finished jobs never keep new ones out.
//! No tonic here: refusals are [`JobError`]s, mapped to statuses by `service.rs`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use npuzzle_proto::v1;
use npuzzle_solver::BoardKey;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::solve::{Begun, Pipeline, SolveError};
use crate::store::JobChange;

pub(crate) mod durable;

/// Jobs kept at most (running and finished): a client cannot make the coordinator hold more.
pub const MAX_JOBS: usize = 10_000;

/// Within a bound, a job's progress is updated at most this often.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// Why a job request got no job.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JobError {
    /// The request was refused as `Solve` would refuse it.
    #[error(transparent)]
    Solve(#[from] SolveError),
    #[error("job id {0:?} is not 16 hexadecimal digits")]
    BadId(String),
    #[error("no job {0} (never submitted, or finished and expired)")]
    NotFound(String),
    #[error("{MAX_JOBS} jobs are running already; retry when some have finished")]
    Full,
}

/// One job: its state for readers, and what stops its search.
pub(crate) struct DetachedJob {
    submitted: Instant,
    status: watch::Sender<v1::JobStatus>,
    cancel: CancellationToken,
    /// When it finished (running jobs never expire).
    finished: Mutex<Option<Instant>>,
}

impl DetachedJob {
    /// A running job for `request`, resumed `resumed` times so far.
    fn new(id: &str, request: &v1::SolveRequest, resumed: u32) -> DetachedJob {
        DetachedJob {
            submitted: Instant::now(),
            status: watch::Sender::new(v1::JobStatus {
                id: id.to_string(),
                state: v1::JobState::Running as i32,
                board: request.board.clone(),
                goal: request.goal.clone(),
                heuristic: request.heuristic,
                resumed,
                ..Default::default()
            }),
            cancel: CancellationToken::new(),
            finished: Mutex::new(None),
        }
    }

    /// Its state now (with its age).
    pub fn status(&self) -> v1::JobStatus {
        let mut status = self.status.borrow().clone();
        status.age_seconds = self.submitted.elapsed().as_secs_f64();
        status
    }

    /// Its state now and on each change.
    pub fn subscribe(&self) -> watch::Receiver<v1::JobStatus> {
        self.status.subscribe()
    }

    /// Ends the job with `update`, unless it has ended already: the first end stands (a
    /// cancel and the answer may cross).
    fn finish(&self, update: impl FnOnce(&mut v1::JobStatus)) {
        let Ok(mut finished) = self.finished.lock() else {
            return;
        };
        if finished.is_some() {
            return;
        }
        *finished = Some(Instant::now());
        self.status.send_modify(update);
    }

    fn finished_at(&self) -> Option<Instant> {
        self.finished.lock().ok().and_then(|f| *f)
    }
}

/// Whether a job in `state` has ended (its state changes no more).
pub(crate) fn is_final(state: i32) -> bool {
    state != v1::JobState::Running as i32 && state != v1::JobState::Unspecified as i32
}

/// The jobs kept, by id.
#[derive(Default)]
pub(crate) struct JobTable {
    map: Mutex<HashMap<String, Arc<DetachedJob>>>,
}

impl JobTable {
    /// The job `id`, if it is kept.
    pub fn get(&self, id: &str) -> Result<Arc<DetachedJob>, JobError> {
        let id = parse_id(id)?;
        let map = self
            .map
            .lock()
            .map_err(|_| JobError::NotFound(id.clone()))?;
        map.get(&id).cloned().ok_or(JobError::NotFound(id))
    }

    /// Every job kept, oldest first.
    pub fn list(&self) -> Vec<Arc<DetachedJob>> {
        let mut jobs: Vec<Arc<DetachedJob>> = self
            .map
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default();
        jobs.sort_by_key(|j| j.submitted);
        jobs
    }

    /// Makes room by dropping the job that finished first (its answer stays in the cache), so
    /// that finished jobs never keep new ones out; false when every job kept is running.
    fn evict_oldest_finished(map: &mut HashMap<String, Arc<DetachedJob>>) -> bool {
        let oldest = map
            .iter()
            .filter_map(|(id, job)| Some((job.finished_at()?, id.clone())))
            .min();
        oldest.is_some_and(|(_, id)| map.remove(&id).is_some())
    }

    /// Drops the jobs that finished more than `ttl` ago.
    fn expire(map: &mut HashMap<String, Arc<DetachedJob>>, ttl: Duration) {
        map.retain(|_, job| job.finished_at().is_none_or(|at| at.elapsed() < ttl));
    }
}

/// A job's id: 16 hex digits of the SHA-256 of what makes its puzzle (the board relabelled by
/// its goal, the board's shape, the heuristic asked for).
pub(crate) fn job_id(key: &BoardKey, heuristic: i32) -> String {
    let shape = key.shape();
    let mut bytes = Vec::with_capacity(16 + 2 + 4);
    bytes.extend_from_slice(&key.packed().to_le_bytes());
    bytes.extend_from_slice(&[shape.width() as u8, shape.height() as u8]);
    bytes.extend_from_slice(&heuristic.to_le_bytes());
    let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
    digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `id` as a job id (16 hex digits, lower case), or why not.
fn parse_id(id: &str) -> Result<String, JobError> {
    let id = id.trim();
    if id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(id.to_ascii_lowercase())
    } else {
        Err(JobError::BadId(id.chars().take(40).collect()))
    }
}

/// A job started again from the store: the checkpoint to resume from (if one was accepted),
/// and the times it has been resumed, this one included.
pub(crate) struct Resume {
    pub checkpoint: Option<crate::scheduler::Checkpoint>,
    pub resumed: u32,
}

/// Detached jobs: a client of the solve pipeline that runs each request in a task of its own,
/// and keeps its state by id.
pub(crate) struct Jobs {
    table: JobTable,
    pipeline: Arc<Pipeline>,
    /// [`crate::Config::job_ttl`] and [`crate::Config::checkpoint_every`].
    ttl: Duration,
    checkpoint_every: Duration,
}

impl Jobs {
    /// No job yet; each will run through `pipeline`.
    pub(crate) fn new(pipeline: Arc<Pipeline>) -> Jobs {
        Jobs {
            table: JobTable::default(),
            ttl: pipeline.config.job_ttl,
            checkpoint_every: pipeline.config.checkpoint_every,
            pipeline,
        }
    }

    /// The job `id`, if it is kept.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<DetachedJob>, JobError> {
        self.table.get(id)
    }

    /// Submits `request` as a detached job for `client`, or joins the one kept for its puzzle
    /// (one that failed or was cancelled is submitted again). Refusals are `Solve`'s, checked
    /// before this returns; the search then runs on without the caller.
    pub(crate) async fn submit(
        self: &Arc<Self>,
        request: &v1::SolveRequest,
        client: Option<IpAddr>,
    ) -> Result<Arc<DetachedJob>, JobError> {
        self.start(request, client, None).await
    }

    /// The jobs the store kept from before a restart (see `durable.rs`): each is listed as
    /// running at once, and started again (from its checkpoint, if one was accepted) once a
    /// worker has joined, so that its heuristic is settled from what the workers serve.
    pub(crate) fn resume(self: &Arc<Self>, stored: Vec<crate::store::StoredJob>) {
        let store = self.pipeline.searches.store();
        let resumable = durable::resumable(store, stored);
        if resumable.is_empty() {
            return;
        }
        for r in &resumable {
            if let Ok(mut map) = self.table.map.lock() {
                map.insert(
                    r.id.clone(),
                    Arc::new(DetachedJob::new(&r.id, &r.request, r.resumed)),
                );
            }
        }
        let jobs = Arc::clone(self);
        tokio::spawn(async move {
            let mut membership = jobs.pipeline.scheduler.watch_membership();
            while membership.borrow_and_update().workers == 0 {
                tokio::select! {
                    changed = membership.changed() => if changed.is_err() { return },
                    _ = jobs.pipeline.draining.cancelled() => return,
                }
            }
            for r in resumable {
                tracing::info!(
                    job = %r.id,
                    resumed = r.resumed,
                    bound = r.checkpoint.as_ref().map(|c| c.bound),
                    "resuming a detached job"
                );
                let resume = Resume {
                    checkpoint: r.checkpoint,
                    resumed: r.resumed,
                };
                if let Err(e) = jobs.start(&r.request, None, Some(resume)).await {
                    tracing::warn!(job = %r.id, error = %e, "a detached job could not be resumed");
                }
            }
        });
    }

    /// [`Jobs::submit`], or with `resume` a job kept by the store (already listed by
    /// [`Jobs::resume`]) started again.
    async fn start(
        self: &Arc<Self>,
        request: &v1::SolveRequest,
        client: Option<IpAddr>,
        resume: Option<Resume>,
    ) -> Result<Arc<DetachedJob>, JobError> {
        let started = tokio::time::Instant::now();
        let puzzle = self
            .pipeline
            .validate(request, None)
            .map_err(SolveError::from)?;
        let id = job_id(&puzzle.key, request.heuristic);
        let resumed = resume.as_ref().map_or(0, |r| r.resumed);
        let job = {
            let mut map = self.table.map.lock().map_err(|_| JobError::Full)?;
            JobTable::expire(&mut map, self.ttl);
            match map.get(&id) {
                Some(job) if resume.is_some() => job.clone(),
                Some(job)
                    if [v1::JobState::Running, v1::JobState::Done]
                        .map(|s| s as i32)
                        .contains(&job.status.borrow().state) =>
                {
                    return Ok(job.clone());
                }
                _ => {
                    if map.len() >= MAX_JOBS
                        && !map.contains_key(&id)
                        && !JobTable::evict_oldest_finished(&mut map)
                    {
                        return Err(JobError::Full);
                    }
                    let job = Arc::new(DetachedJob::new(&id, request, resumed));
                    map.insert(id.clone(), job.clone());
                    job
                }
            }
        };
        let search = match self.pipeline.begin(request, None, client, started).await {
            Ok(Begun::Searching(search)) => search.patient(),
            Ok(Begun::Answered(response)) => {
                job.finish(|s| {
                    s.state = v1::JobState::Done as i32;
                    s.result = Some(response);
                });
                if resume.is_some() {
                    self.save(JobChange::Ended { id });
                }
                return Ok(job);
            }
            Err(e) => {
                if let Ok(mut map) = self.table.map.lock() {
                    map.remove(&id);
                }
                return Err(e.into());
            }
        };
        self.save(JobChange::Request {
            id: id.clone(),
            record: durable::request_record(&id, request, resumed),
        });
        if let Some(checkpoint) = resume.and_then(|r| r.checkpoint) {
            self.pipeline.searches.resume_at(search.key(), checkpoint);
        }
        tracing::info!(job = %id, "detached job submitted");
        let (jobs, runner) = (Arc::clone(self), job.clone());
        tokio::spawn(async move {
            let mut last = (0u32, false, Instant::now());
            let flight = Arc::new(AtomicU64::new(0));
            let joined = Arc::clone(&flight);
            let following = jobs.pipeline.follow(
                &search,
                |f| joined.store(f.job.0, Ordering::Relaxed),
                |s| {
                    let changed = (s.bound, s.bound_finished) != (last.0, last.1);
                    if s.bound > 0 && (changed || last.2.elapsed() >= PROGRESS_EVERY) {
                        last = (s.bound, s.bound_finished, Instant::now());
                        let progress = crate::wire::bound_progress(s);
                        runner.status.send_modify(|j| j.progress = Some(progress));
                    }
                },
            );
            let status = runner.status.subscribe();
            let checkpoints = durable::checkpoint_loop(
                Arc::clone(&jobs.pipeline),
                jobs.checkpoint_every,
                id.clone(),
                move || flight.load(Ordering::Relaxed),
                move || status.borrow().progress.as_ref().map_or(0, |p| p.bound),
            );
            let answer = tokio::select! {
                answer = following => answer,
                _ = runner.cancel.cancelled() => {
                    runner.finish(|s| s.state = v1::JobState::Cancelled as i32);
                    jobs.save(JobChange::Ended { id: id.clone() });
                    tracing::info!(job = %id, "detached job cancelled");
                    return;
                }
                () = checkpoints => return,
            };
            // A job stopped by the coordinator's own shutdown stays in the store, to be
            // resumed by the next one.
            let stopping = matches!(
                &answer,
                Err(SolveError::Stopped { .. } | SolveError::ShuttingDown)
            );
            if !stopping {
                jobs.save(JobChange::Ended { id: id.clone() });
            }
            runner.finish(|s| match answer {
                Ok(response) => {
                    s.state = v1::JobState::Done as i32;
                    s.result = Some(response);
                }
                Err(e) => {
                    s.state = v1::JobState::Failed as i32;
                    s.error = e.to_string();
                }
            });
            // The search's place under the limits is held until its answer is recorded.
            drop(search);
        });
        Ok(job)
    }

    /// Cancels job `id` if it is running (its search stops unless a call waits on the same
    /// puzzle); returns it.
    pub(crate) fn cancel(&self, id: &str) -> Result<Arc<DetachedJob>, JobError> {
        let job = self.table.get(id)?;
        job.finish(|s| s.state = v1::JobState::Cancelled as i32);
        job.cancel.cancel();
        Ok(job)
    }

    /// The jobs kept, oldest first (finished ones past their time dropped first).
    pub(crate) fn list(&self) -> Vec<Arc<DetachedJob>> {
        if let Ok(mut map) = self.table.map.lock() {
            JobTable::expire(&mut map, self.ttl);
        }
        self.table.list()
    }

    /// Writes `change` to the store, if the coordinator keeps one.
    fn save(&self, change: JobChange) {
        durable::save(self.pipeline.searches.store(), change);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npuzzle_solver::{Board, Goal};

    fn key(tiles: &str) -> BoardKey {
        let board = Board::parse(tiles, None).unwrap();
        BoardKey::new(&board, &Goal::blank_last(board.shape())).unwrap()
    }

    #[test]
    fn the_same_puzzle_always_has_the_same_id_and_others_differ() {
        let a = job_id(&key("1 2 3 4 5 6 0 7 8"), 0);
        assert_eq!(a, job_id(&key("1 2 3 4 5 6 0 7 8"), 0));
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, job_id(&key("1 2 3 4 5 6 7 0 8"), 0));
        assert_ne!(a, job_id(&key("1 2 3 4 5 6 0 7 8"), 2));
        // A value pinned so that a change of derivation (which would orphan ids that clients
        // and checkpoints hold) fails here.
        assert_eq!(a, "e416c06c049ef2a4");
    }

    #[test]
    fn ids_are_parsed_strictly() {
        assert_eq!(parse_id(" 00FFaa0011223344 ").unwrap(), "00ffaa0011223344");
        for bad in [
            "",
            "xyz",
            "00ffaa001122334",
            "00ffaa00112233445",
            "00ffaa001122334g",
        ] {
            assert!(matches!(parse_id(bad), Err(JobError::BadId(_))), "{bad}");
        }
        let long = "z".repeat(10_000);
        let Err(JobError::BadId(shown)) = parse_id(&long) else {
            panic!()
        };
        assert_eq!(shown.len(), 40);
    }

    fn job(finished: Option<Instant>) -> Arc<DetachedJob> {
        Arc::new(DetachedJob {
            submitted: Instant::now(),
            status: watch::Sender::new(v1::JobStatus::default()),
            cancel: CancellationToken::new(),
            finished: Mutex::new(finished),
        })
    }

    #[test]
    fn a_full_table_makes_room_by_its_oldest_finished_job_never_a_running_one() {
        let now = Instant::now();
        let mut map = HashMap::new();
        map.insert("running".to_string(), job(None));
        map.insert("newer".to_string(), job(Some(now)));
        map.insert(
            "older".to_string(),
            job(now.checked_sub(Duration::from_secs(5))),
        );
        assert!(JobTable::evict_oldest_finished(&mut map));
        assert!(!map.contains_key("older") && map.contains_key("newer"));
        assert!(JobTable::evict_oldest_finished(&mut map));
        assert!(!JobTable::evict_oldest_finished(&mut map));
        assert!(map.contains_key("running"));
    }

    #[test]
    fn unknown_jobs_are_not_found() {
        let jobs = JobTable::default();
        assert!(matches!(
            jobs.get("0123456789abcdef"),
            Err(JobError::NotFound(_))
        ));
        assert!(jobs.list().is_empty());
    }
}
