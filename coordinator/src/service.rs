//! The gRPC services, thin adapters: `npuzzle.v1.Solver` (`Solve`, `SolveStream`, `Stats`) for
//! clients and `npuzzle.v1.Cluster` (`Join`) for workers. What they answer is decided elsewhere:
//! a request's path in `solve.rs` (its searches in `searches.rs`), what a worker's hello gets in
//! `handshake.rs`, the workers' messages in `wire.rs`, `Stats` in `console.rs`. Here are the
//! tonic impls and the gRPC form of each refusal: `SolveError` and `Refused` to [`Status`].

use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use npuzzle_proto::v1;
use npuzzle_proto::v1::cluster_server::Cluster;
use npuzzle_proto::v1::solver_server::Solver as SolverRpc;
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::{ReceiverStream, UnboundedReceiverStream};
use tonic::{Code, Request, Response, Status, Streaming};

use crate::handshake::{Admitted, Refused, WorkerPlace, handshake};
use crate::jobs::{self, JobError, Jobs};
use crate::metrics::RequestMetric;
use crate::scheduler::WorkerId;
use crate::solve::{self, Begun, Pipeline, SolveError};
use crate::wire::{bound_event, queued_event, result_event, result_from_wire};

/// Within a bound, `SolveStream` reports the search's progress at most this often.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// `RESOURCE_EXHAUSTED` with a `retry-after-ms` hint.
fn exhausted(message: String, retry_after: Duration) -> Status {
    let mut status = Status::resource_exhausted(message);
    status.metadata_mut().insert(
        "retry-after-ms",
        tonic::metadata::MetadataValue::from(retry_after.as_millis().max(1) as u64),
    );
    status
}

impl From<SolveError> for Status {
    /// The gRPC form of a request's refusal: its message, under the code that means it (past
    /// the search limits, with a `retry-after-ms` hint).
    fn from(error: SolveError) -> Status {
        let code = match &error {
            SolveError::Invalid(_) => Code::InvalidArgument,
            SolveError::NoTables(_) => Code::FailedPrecondition,
            SolveError::Busy { retry_after, .. } => {
                return exhausted(error.to_string(), *retry_after);
            }
            SolveError::Draining
            | SolveError::NoWorker { .. }
            | SolveError::TablesGone { .. }
            | SolveError::ShuttingDown
            | SolveError::Stopped { .. } => Code::Unavailable,
            SolveError::Failed(_) | SolveError::Lost => Code::Internal,
        };
        Status::new(code, error.to_string())
    }
}

impl From<JobError> for Status {
    fn from(error: JobError) -> Status {
        match error {
            JobError::Solve(e) => e.into(),
            JobError::BadId(_) => Status::invalid_argument(error.to_string()),
            JobError::NotFound(_) => Status::not_found(error.to_string()),
            JobError::Full => Status::resource_exhausted(error.to_string()),
        }
    }
}

impl From<Refused> for Status {
    /// The gRPC form of a join's refusal: its message, under the code that means it (too many
    /// joins, with a `retry-after-ms` hint).
    fn from(refused: Refused) -> Status {
        let code = match &refused {
            Refused::TooManyJoins { retry_after } => {
                return exhausted(refused.to_string(), *retry_after);
            }
            Refused::NoHello { .. } => Code::DeadlineExceeded,
            Refused::NotHello => Code::InvalidArgument,
            Refused::Quarantined { .. } => Code::PermissionDenied,
            Refused::Full { .. } => Code::ResourceExhausted,
        };
        Status::new(code, refused.to_string())
    }
}

/// The `grpc-timeout` header, if the client set a deadline (`None` for one too large to count).
fn grpc_timeout<T>(request: &Request<T>) -> Option<Duration> {
    let value = request.metadata().get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.checked_mul(3600)?),
        "M" => Duration::from_secs(n.checked_mul(60)?),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Who a request counts against for [`crate::Config::max_searches_per_client`]: its peer's IP
/// address (behind a proxy, every client is the proxy).
fn client_address<T>(request: &Request<T>) -> Option<IpAddr> {
    request.remote_addr().map(|a| a.ip())
}

/// The client-facing service.
#[derive(Clone)]
pub struct SolverService {
    pub(crate) pipeline: Arc<Pipeline>,
    pub(crate) jobs: Arc<Jobs>,
}

type EventStream = Pin<Box<dyn Stream<Item = Result<v1::SolveEvent, Status>> + Send>>;

#[tonic::async_trait]
impl SolverRpc for SolverService {
    async fn solve(
        &self,
        request: Request<v1::SolveRequest>,
    ) -> Result<Response<v1::SolveResponse>, Status> {
        let mut metric = RequestMetric::start("Solve");
        let answer = self
            .pipeline
            .solve(
                request.get_ref(),
                grpc_timeout(&request),
                client_address(&request),
            )
            .await;
        metric.finish(solve::outcome(&answer));
        answer.map(Response::new).map_err(Status::from)
    }

    type SolveStreamStream = EventStream;

    /// The pipeline of `Solve` in its two halves: a refusal is the call's error, an answer at
    /// once the stream's only event; a search sends `queued`, its bounds, then its result.
    async fn solve_stream(
        &self,
        request: Request<v1::SolveRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let started = tokio::time::Instant::now();
        let mut metric = RequestMetric::start("SolveStream");
        let pipeline = Arc::clone(&self.pipeline);
        let begun = pipeline
            .begin(
                request.get_ref(),
                grpc_timeout(&request),
                client_address(&request),
                started,
            )
            .await
            .map_err(|e| {
                metric.finish(e.outcome());
                Status::from(e)
            })?;
        let (tx, rx) = mpsc::channel(16);
        let search = match begun {
            Begun::Answered(response) => {
                metric.finish(solve::response_outcome(&response));
                pipeline.activity.record(started.elapsed());
                let _ = tx.try_send(Ok(result_event(response)));
                return Ok(Response::new(Box::pin(ReceiverStream::new(rx))));
            }
            Begun::Searching(search) => search,
        };
        tokio::spawn(async move {
            let mut last = (0u32, false);
            let mut last_sent = Instant::now();
            let (queued_tx, progress_tx) = (tx.clone(), tx.clone());
            let following = pipeline.follow(
                &search,
                |flight| {
                    let running_jobs = pipeline.searches.running() as u32;
                    let _ = queued_tx.try_send(Ok(queued_event(flight, running_jobs)));
                },
                |s| {
                    // Bound changes and bound completions, and within a bound at most one
                    // update a second (its nodes, forecast and ETA): never per node. The
                    // flight's state is a watch channel, so bounds that pass while this task
                    // is busy are coalesced into the latest, and `try_send` drops an event
                    // rather than queue it for a client that does not read.
                    let changed = (s.bound, s.bound_finished) != last;
                    if s.bound > 0 && (changed || last_sent.elapsed() >= PROGRESS_EVERY) {
                        last = (s.bound, s.bound_finished);
                        last_sent = Instant::now();
                        let _ = progress_tx.try_send(Ok(bound_event(s)));
                    }
                },
            );
            // A client that goes away drops the receiver: stop waiting (leaving the flight
            // cancels it if no one else waits).
            let answer = tokio::select! {
                a = following => a,
                _ = tx.closed() => return,
            };
            metric.finish(solve::outcome(&answer));
            pipeline.activity.record(started.elapsed());
            let _ = tx
                .send(answer.map(result_event).map_err(Status::from))
                .await;
            // The search's place under the limits is held until its answer is on its way.
            drop(search);
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn stats(
        &self,
        _: Request<v1::StatsRequest>,
    ) -> Result<Response<v1::StatsResponse>, Status> {
        Ok(Response::new(self.pipeline.stats().await))
    }

    async fn submit_job(
        &self,
        request: Request<v1::SolveRequest>,
    ) -> Result<Response<v1::JobStatus>, Status> {
        let client = client_address(&request);
        let job = self.jobs.submit(request.get_ref(), client).await?;
        Ok(Response::new(job.status()))
    }

    async fn get_job(
        &self,
        request: Request<v1::JobRequest>,
    ) -> Result<Response<v1::JobStatus>, Status> {
        Ok(Response::new(
            self.jobs.get(&request.get_ref().id)?.status(),
        ))
    }

    type WatchJobStream = Pin<Box<dyn Stream<Item = Result<v1::JobStatus, Status>> + Send>>;

    /// The job's state now, then each change, until it is final or the client goes away.
    async fn watch_job(
        &self,
        request: Request<v1::JobRequest>,
    ) -> Result<Response<Self::WatchJobStream>, Status> {
        let job = self.jobs.get(&request.get_ref().id)?;
        let mut changes = job.subscribe();
        let (tx, rx) = mpsc::channel(4);
        tokio::spawn(async move {
            loop {
                changes.borrow_and_update();
                let status = job.status();
                let last = jobs::is_final(status.state);
                if tx.send(Ok(status)).await.is_err() || last {
                    return;
                }
                tokio::select! {
                    changed = changes.changed() => if changed.is_err() { return },
                    _ = tx.closed() => return,
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn cancel_job(
        &self,
        request: Request<v1::JobRequest>,
    ) -> Result<Response<v1::JobStatus>, Status> {
        let job = self.jobs.cancel(&request.get_ref().id)?;
        Ok(Response::new(job.status()))
    }

    async fn list_jobs(
        &self,
        _: Request<v1::ListJobsRequest>,
    ) -> Result<Response<v1::ListJobsResponse>, Status> {
        let jobs = self.jobs.list().iter().map(|j| j.status()).collect();
        Ok(Response::new(v1::ListJobsResponse { jobs }))
    }
}

/// The worker-facing service.
#[derive(Clone)]
pub struct ClusterService {
    pub(crate) pipeline: Arc<Pipeline>,
}

/// The first message of a `Join` stream, which must be a hello and come within `patience`.
async fn read_hello(
    inbound: &mut Streaming<v1::WorkerMessage>,
    patience: Duration,
) -> Result<v1::Hello, Status> {
    let first = tokio::time::timeout(patience, inbound.message())
        .await
        .map_err(|_| Refused::NoHello { patience })?;
    match first? {
        Some(v1::WorkerMessage {
            message: Some(v1::worker_message::Message::Hello(hello)),
        }) => Ok(hello),
        _ => Err(Refused::NotHello.into()),
    }
}

#[tonic::async_trait]
impl Cluster for ClusterService {
    type JoinStream = UnboundedReceiverStream<Result<v1::CoordinatorMessage, Status>>;

    /// A worker's stream: its joins rationed per address, its hello read and judged
    /// (`handshake.rs`), a place reserved, then its results and heartbeats passed to the
    /// cluster until the stream ends.
    async fn join(
        &self,
        request: Request<Streaming<v1::WorkerMessage>>,
    ) -> Result<Response<Self::JoinStream>, Status> {
        let address = request.remote_addr().map(|a| a.ip());
        let scheduler = self.pipeline.scheduler.clone();
        let rationed = scheduler.quarantine().admit_join(address, Instant::now());
        if let Err(retry_after) = rationed {
            return Err(Refused::TooManyJoins { retry_after }.into());
        }
        let mut inbound = request.into_inner();
        let config = &self.pipeline.config;
        let hello = read_hello(&mut inbound, config.hello_timeout).await?;
        let id = WorkerId(scheduler.next_id());
        let admitted = {
            let now = Instant::now();
            let mut quarantine = scheduler.quarantine();
            quarantine.purge(now);
            handshake(
                &hello,
                address,
                config.max_slots_per_worker,
                &quarantine,
                now,
            )?
        };
        let place = WorkerPlace::reserve(&self.pipeline.worker_streams, config.max_workers)?;
        let Admitted {
            name,
            version,
            origin,
            slots,
            capabilities,
            ignored,
            first_error,
        } = admitted;
        if ignored > 0 {
            // One line per hello, whatever it holds.
            let error = first_error.unwrap_or_default();
            tracing::warn!(worker = id.0, %name, ignored, first_error = %error, "ignoring pattern databases in hello");
        }
        tracing::info!(worker = id.0, %name, slots, %version, pattern_databases = hello.pattern_databases.len(), "hello");
        let (tx, rx) = mpsc::unbounded_channel();
        scheduler.worker_joined(id, origin, slots, capabilities, tx);
        tokio::spawn(async move {
            let _place = place;
            // The stream ends (or breaks) when the worker goes away.
            while let Ok(Some(msg)) = inbound.message().await {
                match msg.message {
                    Some(v1::worker_message::Message::Result(r)) => {
                        scheduler.result(id, result_from_wire(r))
                    }
                    Some(v1::worker_message::Message::Heartbeat(_)) => scheduler.heartbeat(id),
                    Some(v1::worker_message::Message::Hello(_)) | None => {}
                }
            }
            scheduler.worker_left(id);
        });
        Ok(Response::new(UnboundedReceiverStream::new(rx)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_solve_error_keeps_its_message_under_its_grpc_code() {
        use Code::*;
        let codes = vec![
            Unavailable,
            InvalidArgument,
            ResourceExhausted,
            FailedPrecondition,
            Unavailable,
            Unavailable,
            Unavailable,
            Unavailable,
            Internal,
            Internal,
        ];
        for (error, code) in SolveError::each_paired_with(codes) {
            let status = Status::from(error.clone());
            assert_eq!(status.code(), code, "{error:?}");
            assert_eq!(status.message(), error.to_string());
            let hint = status.metadata().get("retry-after-ms");
            assert_eq!(hint.is_some(), code == ResourceExhausted, "{error:?}");
        }
    }

    #[test]
    fn each_refused_join_keeps_its_message_under_its_grpc_code() {
        let refusals = [
            (
                Refused::TooManyJoins {
                    retry_after: Duration::from_millis(200),
                },
                Code::ResourceExhausted,
            ),
            (
                Refused::NoHello {
                    patience: Duration::from_secs(10),
                },
                Code::DeadlineExceeded,
            ),
            (Refused::NotHello, Code::InvalidArgument),
            (
                Refused::Quarantined {
                    origin: crate::quarantine::Origin::new(None, "w"),
                    left: Duration::from_secs(5),
                },
                Code::PermissionDenied,
            ),
            (Refused::Full { max_workers: 2 }, Code::ResourceExhausted),
        ];
        for (refused, code) in refusals {
            let status = Status::from(refused.clone());
            assert_eq!(status.code(), code, "{refused:?}");
            assert_eq!(status.message(), refused.to_string());
        }
        let rationed = Status::from(Refused::TooManyJoins {
            retry_after: Duration::from_millis(200),
        });
        assert_eq!(rationed.metadata().get("retry-after-ms").unwrap(), "200");
    }
}
