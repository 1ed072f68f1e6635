//! Solving through a coordinator: one gRPC `Solve` per board, many in flight, answers in input
//! order; and the embedded cluster `npuzzle` starts when no `--coordinator` is given
//! ([`embedded`]).

use std::io::{self, BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use std::collections::BTreeSet;

use npuzzle_cluster::{Coordinator, Options};
use npuzzle_proto::{board_to_wire, v1};
use npuzzle_solver::{Board, GoalSpec, HeuristicKind, Shape};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::batch::{BatchOptions, Sink, Summary};
use crate::engine::{Answer, FailReason, HeuristicChoice, Settings};
use crate::input::{Format, Item, Reader};

/// The embedded cluster of `npuzzle solve` and `batch` without `--coordinator`: one worker
/// with `threads` search threads, loading the pattern databases of `settings.pdb_dir` when
/// `settings` may use them (`auto` or `pdb`); `shapes`, when known, are the board shapes the run
/// will ask for, so that only their tables are loaded (most of a second each).
pub fn embedded(threads: usize, settings: &Settings, shapes: Option<BTreeSet<Shape>>) -> Options {
    Options {
        threads: Some(threads),
        name: "embedded".into(),
        load_pdbs: matches!(
            settings.heuristic,
            HeuristicChoice::Auto | HeuristicChoice::Use(HeuristicKind::Pdb)
        ),
        pdb_dir: settings.pdb_dir.clone(),
        pdb_shapes: shapes,
        ..Options::default()
    }
}

/// The request for one board, or the reason it cannot be sent.
pub(crate) fn request(
    text: &str,
    shape: Option<Shape>,
    settings: &Settings,
) -> Result<v1::SolveRequest, String> {
    let board = Board::parse(text, shape.or(settings.shape)).map_err(|e| e.to_string())?;
    let goal = match &settings.goal {
        GoalSpec::BlankLast => v1::Goal {
            kind: v1::GoalKind::BlankLast as i32,
            tiles: vec![],
        },
        GoalSpec::BlankFirst => v1::Goal {
            kind: v1::GoalKind::BlankFirst as i32,
            tiles: vec![],
        },
        custom => {
            let goal = custom.resolve(board.shape()).map_err(|e| e.to_string())?;
            npuzzle_proto::goal_to_wire(&goal)
        }
    };
    // `auto` is the coordinator's choice: it knows which workers hold pattern databases.
    let heuristic = match settings.heuristic {
        HeuristicChoice::Auto => v1::Heuristic::Auto,
        HeuristicChoice::Use(kind) => npuzzle_proto::heuristic_to_wire(kind),
    };
    Ok(v1::SolveRequest {
        board: Some(board_to_wire(&board)),
        goal: Some(goal),
        heuristic: heuristic as i32,
        within: if settings.within.is_optimal() {
            0.0
        } else {
            settings.within.factor()
        },
        ..Default::default()
    })
}

/// How long a board may take, and how long a coordinator that cannot take it now is waited
/// for.
#[derive(Clone, Copy, Debug)]
pub struct Patience {
    /// A board the coordinator cannot take now (at its limit of searches, unreachable,
    /// restarting, without workers) is sent again, with backoff, for this long; then it
    /// `failed`.
    pub retry_for: Duration,
    /// Each board's deadline at the coordinator (`timeout_ms`); past it the board `failed`
    /// (`deadline`). `None`: no deadline.
    pub timeout: Option<Duration>,
}

impl Default for Patience {
    fn default() -> Self {
        Patience {
            retry_for: Duration::from_secs(300),
            timeout: None,
        }
    }
}

/// Why a run through a coordinator stopped.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// Refused for good (a wrong or missing token, a call not allowed): retrying cannot help.
    #[error("the coordinator refused the request ({code:?}): {message}")]
    Refused { code: tonic::Code, message: String },
    #[error("cannot read the input: {0}")]
    Input(io::Error),
    #[error("cannot write the answers: {0}")]
    Output(#[from] io::Error),
}

/// The wait a `RESOURCE_EXHAUSTED` status asks for (its `retry-after-ms` hint, 1 s without
/// one), at most `cap`.
pub fn retry_wait(status: &tonic::Status, cap: Duration) -> Duration {
    status
        .metadata()
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(1), Duration::from_millis)
        .min(cap)
}

/// What to do with a status the coordinator (or the transport) answered with.
enum Next {
    /// The board is invalid: this message says why.
    Invalid(String),
    /// Stop the run.
    Refused(RemoteError),
    /// Send it again after this long; if time runs out, it failed for this reason.
    Retry(Duration, FailReason),
}

/// Backoff for an unreachable coordinator: 100 ms doubling to 5 s.
fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(100u64 << attempt.min(6)).min(Duration::from_secs(5))
}

fn judge(status: &tonic::Status, attempt: u32) -> Next {
    use tonic::Code;
    match status.code() {
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => {
            Next::Invalid(status.message().to_string())
        }
        Code::Unauthenticated | Code::PermissionDenied | Code::Unimplemented => {
            Next::Refused(RemoteError::Refused {
                code: status.code(),
                message: status.message().to_string(),
            })
        }
        Code::ResourceExhausted => Next::Retry(
            retry_wait(status, Duration::from_secs(30)),
            FailReason::Busy,
        ),
        Code::Internal | Code::DataLoss => Next::Retry(backoff(attempt), FailReason::Internal),
        // Unavailable (down, restarting, draining, no worker), a connection cut mid-call.
        _ => Next::Retry(backoff(attempt), FailReason::Unavailable),
    }
}

/// Solves one board through the coordinator. Invalid input (here or at the coordinator), and a
/// heuristic no connected worker serves (no pattern databases for the shape), is an `invalid`
/// record. A coordinator that cannot take the board now is asked again, with backoff (its
/// `retry-after-ms` hint when it is busy, with jitter), for `patience.retry_for`; then the
/// board `failed`. `waiting` counts the boards waiting to be sent again, for a progress bar.
/// With `on_bound`, the board goes through `SolveStream` and each bound's progress (with its
/// forecast) is told to it as it comes.
#[allow(clippy::too_many_arguments)]
pub async fn solve(
    client: &mut Coordinator,
    index: usize,
    text: &str,
    shape: Option<Shape>,
    settings: &Settings,
    patience: Patience,
    waiting: &AtomicUsize,
    on_bound: Option<&(dyn Fn(&v1::BoundProgress) + Send + Sync)>,
) -> Result<Answer, RemoteError> {
    let started = Instant::now();
    let mut req = match request(text, shape, settings) {
        Ok(r) => r,
        Err(e) => return Ok(Answer::invalid(index, e)),
    };
    if let Some(t) = patience.timeout {
        req.timeout_ms = (t.as_millis() as u64).max(1);
    }
    let give_up = started + patience.retry_for;
    let mut attempt = 0u32;
    let r = loop {
        let answered = match on_bound {
            None => client.solve(req.clone()).await.map(|r| r.into_inner()),
            Some(tell) => solve_streamed(client, req.clone(), tell).await,
        };
        let status = match answered {
            Ok(r) => break r,
            Err(status) => status,
        };
        let (wait, reason) = match judge(&status, attempt) {
            Next::Invalid(message) => return Ok(Answer::invalid(index, message)),
            Next::Refused(e) => return Err(e),
            Next::Retry(wait, reason) => (wait, reason),
        };
        // Spread out the clients that were refused together.
        let wait = wait.mul_f64(1.0 + rand::random::<f64>() * 0.5);
        if Instant::now() + wait > give_up {
            let error = format!(
                "{} (still after {:.0} s of retries; --retry-for sets how long)",
                status.message(),
                patience.retry_for.as_secs_f64()
            );
            return Ok(Answer::failed(index, reason, error).costing(0, false, started));
        }
        attempt += 1;
        waiting.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(wait).await;
        waiting.fetch_sub(1, Ordering::Relaxed);
    };
    Ok(Answer::from_response(index, &r).costing(r.nodes, r.cached, started))
}

/// One `SolveStream` call: each bound's progress to `tell`, then the response.
async fn solve_streamed(
    client: &mut Coordinator,
    req: v1::SolveRequest,
    tell: &(dyn Fn(&v1::BoundProgress) + Send + Sync),
) -> Result<v1::SolveResponse, tonic::Status> {
    let mut events = client.solve_stream(req).await?.into_inner();
    while let Some(event) = events.message().await? {
        match event.event {
            Some(v1::solve_event::Event::Bound(progress)) => tell(&progress),
            Some(v1::solve_event::Event::Result(response)) => return Ok(response),
            Some(v1::solve_event::Event::Queued(_)) | None => {}
        }
    }
    Err(tonic::Status::unavailable(
        "the coordinator ended the stream without an answer",
    ))
}

/// Batch through a coordinator: up to `options.jobs` requests in flight (default 4 per core),
/// answers written in input order. Input is read on a blocking thread, as a stream.
pub async fn batch<R, W>(
    input: R,
    mut sink: Sink<W>,
    client: Coordinator,
    options: &BatchOptions,
    patience: Patience,
) -> Result<Summary, RemoteError>
where
    R: BufRead + Send + 'static,
    W: Write,
{
    let started = Instant::now();
    let in_flight = match options.jobs {
        0 => 4 * std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let (tx, rx) = mpsc::channel::<io::Result<(Item, Format)>>(in_flight * 2);
    let format = options.format;
    let skip = options.skip.clone();
    let reader = tokio::task::spawn_blocking(move || {
        let mut reader = Reader::new(input, format);
        while let Some(item) = reader.next() {
            if matches!(&item, Ok(i) if skip.contains(&i.index)) {
                continue;
            }
            let item = item.map(|i| (i, reader.format()));
            if tx.blocking_send(item).is_err() {
                break;
            }
        }
    });
    let settings = options.settings.clone();
    let waiting = Arc::new(AtomicUsize::new(0));
    let mut answers = ReceiverStream::new(rx)
        .map(|item| {
            let mut client = client.clone();
            let settings = settings.clone();
            let waiting = Arc::clone(&waiting);
            async move {
                let (item, format) = item.map_err(RemoteError::Input)?;
                let mut record = match &item.error {
                    Some(e) => Answer::invalid(item.index, e.clone()),
                    None => {
                        solve(
                            &mut client,
                            item.index,
                            &item.text,
                            item.shape,
                            &settings,
                            patience,
                            &waiting,
                            None,
                        )
                        .await?
                    }
                };
                if let Some(e) = record.error.as_mut() {
                    *e = format!("line {}: {e}", item.line);
                }
                Ok::<_, RemoteError>((record, format))
            }
        })
        .buffered(in_flight);
    // Answers in input order; meanwhile the progress bar says when boards wait for the
    // coordinator.
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut shown = 0;
    loop {
        let answer = tokio::select! {
            answer = answers.next() => answer,
            _ = tick.tick() => {
                let now = waiting.load(Ordering::Relaxed);
                if now != shown {
                    shown = now;
                    let note = format!("waiting for the coordinator ({now} boards to send again)");
                    sink.waiting((now > 0).then_some(note.as_str()));
                }
                continue;
            }
        };
        let Some(answer) = answer else { break };
        let (record, format) = answer?;
        sink.write(&record, format)?;
        sink.flush()?;
    }
    drop(answers);
    let _ = reader.await;
    let mut summary = sink.finish()?;
    summary.elapsed = started.elapsed();
    Ok(summary)
}
