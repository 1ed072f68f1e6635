//! Solving through a coordinator: one gRPC `Solve` per board, many in flight, answers in input
//! order; and the embedded cluster (a coordinator and a worker in this process, on loopback)
//! that `npuzzle` uses when no `--coordinator` is given.

use std::io::{self, BufRead, Write};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use npuzzle_proto::security::{AttachToken, ClientSecurity, SecurityError, tls_failure};
use npuzzle_proto::v1::solver_client::SolverClient;
use npuzzle_proto::{board_to_wire, v1};
use npuzzle_solver::{Board, GoalSpec, Shape};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use crate::batch::{BatchOptions, Sink, Summary};
use crate::engine::{HeuristicChoice, Record, Settings};
use crate::input::{Format, Item, Reader};

/// A connection to a coordinator's `npuzzle.v1.Solver`, every call carrying the client token
/// (if any).
pub type Coordinator = SolverClient<InterceptedService<Channel, AttachToken>>;

/// Why no connection to the coordinator was made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(transparent)]
    Settings(#[from] SecurityError),
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
}

/// A coordinator and one worker running inside this process on `127.0.0.1:0`.
pub struct EmbeddedCluster {
    /// The coordinator's URL.
    pub url: String,
    shutdown: CancellationToken,
}

/// How long the embedded worker may take to load its pattern databases and join.
const JOIN_TIMEOUT: Duration = Duration::from_secs(120);

impl EmbeddedCluster {
    /// Starts both on the current tokio runtime, and returns once the worker has joined (so that
    /// the coordinator knows which pattern databases it serves before the first request). The
    /// worker uses `threads` search threads and, when `settings` may use them (`auto` or `pdb`),
    /// the pattern databases in `settings.pdb_dir`.
    ///
    /// `shapes`, when known, are the board shapes the run will ask for: only their tables are
    /// loaded (loading a shape's tables takes most of a second).
    pub async fn start(
        threads: usize,
        settings: &Settings,
        shapes: Option<std::collections::BTreeSet<Shape>>,
    ) -> io::Result<EmbeddedCluster> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let shutdown = CancellationToken::new();
        let coordinator = npuzzle_coordinator::Config::default();
        tokio::spawn(npuzzle_coordinator::run(
            listener,
            coordinator,
            shutdown.clone(),
        ));
        let mut worker = npuzzle_worker::Config::new(url.clone());
        worker.threads = threads.max(1);
        worker.name = "embedded".into();
        worker.pdb_dir = settings.pdb_dir.clone();
        worker.pdb_shapes = shapes;
        worker.load_pdbs = matches!(
            settings.heuristic,
            HeuristicChoice::Auto | HeuristicChoice::Use(npuzzle_solver::HeuristicKind::Pdb)
        );
        tokio::spawn(npuzzle_worker::run(worker, shutdown.clone()));
        let cluster = EmbeddedCluster { url, shutdown };
        cluster.joined().await?;
        Ok(cluster)
    }

    /// Waits until the coordinator counts the worker (at most [`JOIN_TIMEOUT`]).
    async fn joined(&self) -> io::Result<()> {
        let mut client = connect(&self.url, &ClientSecurity::default())
            .await
            .map_err(io::Error::other)?;
        let started = Instant::now();
        loop {
            let stats = client
                .stats(v1::StatsRequest {})
                .await
                .map_err(|s| io::Error::other(s.message().to_string()))?;
            if stats.into_inner().workers > 0 {
                return Ok(());
            }
            if started.elapsed() > JOIN_TIMEOUT {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the embedded worker did not join its coordinator",
                ));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl Drop for EmbeddedCluster {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Connects to a coordinator with `security` (its client token, and for `https://` the CA to
/// verify it with), retrying briefly (an embedded one may still be starting). A TLS failure
/// (the certificate does not verify) is not retried.
pub async fn connect(url: &str, security: &ClientSecurity) -> Result<Coordinator, ConnectError> {
    let endpoint = security
        .endpoint(url)?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true);
    let client = |channel| {
        SolverClient::with_interceptor(channel, security.interceptor())
            .max_decoding_message_size(16 << 20)
            .max_encoding_message_size(16 << 20)
    };
    let mut last = None;
    for _ in 0..20 {
        match endpoint.connect().await {
            Ok(channel) => return Ok(client(channel)),
            Err(e) if tls_failure(&e).is_some() => return Err(e.into()),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    match last {
        Some(e) => Err(e.into()),
        None => Ok(client(endpoint.connect().await?)),
    }
}

/// The request for one board, or the reason it cannot be sent.
fn request(
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
        ..Default::default()
    })
}

/// Solves one board through the coordinator. Invalid input (here or at the coordinator), and a
/// heuristic no connected worker serves (no pattern databases for the shape), is an `invalid`
/// record; transport failures are errors.
pub async fn solve(
    client: &mut Coordinator,
    index: usize,
    text: &str,
    shape: Option<Shape>,
    settings: &Settings,
) -> Result<Record, tonic::Status> {
    let started = Instant::now();
    let req = match request(text, shape, settings) {
        Ok(r) => r,
        Err(e) => return Ok(Record::invalid(index, e)),
    };
    let r = match client.solve(req).await {
        Ok(r) => r.into_inner(),
        Err(s)
            if matches!(
                s.code(),
                tonic::Code::InvalidArgument | tonic::Code::FailedPrecondition
            ) =>
        {
            return Ok(Record::invalid(index, s.message()));
        }
        Err(s) => return Err(s),
    };
    let record = Record::answered(index, r.nodes, r.cached, started);
    let record = match v1::Outcome::try_from(r.outcome) {
        Ok(v1::Outcome::Solved) => record.with_moves(r.moves),
        Ok(v1::Outcome::Unsolvable) => record,
        _ => {
            let why = if r.error.is_empty() {
                "search stopped"
            } else {
                &r.error
            };
            record.failed(format!("no answer: {why} (lower bound {})", r.lower_bound))
        }
    };
    Ok(record)
}

/// Batch through a coordinator: up to `options.jobs` requests in flight (default 4 per core),
/// answers written in input order. Input is read on a blocking thread, as a stream.
pub async fn batch<R, W>(
    input: R,
    mut sink: Sink<W>,
    client: Coordinator,
    options: &BatchOptions,
) -> io::Result<Summary>
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
    let mut answers = ReceiverStream::new(rx)
        .map(|item| {
            let mut client = client.clone();
            let settings = settings.clone();
            async move {
                let (item, format) = item?;
                let mut record = match &item.error {
                    Some(e) => Record::invalid(item.index, e.clone()),
                    None => solve(&mut client, item.index, &item.text, item.shape, &settings)
                        .await
                        .map_err(|s| io::Error::other(format!("coordinator: {}", s.message())))?,
                };
                if let Some(e) = record.error.as_mut() {
                    *e = format!("line {}: {e}", item.line);
                }
                Ok::<_, io::Error>((record, format))
            }
        })
        .buffered(in_flight);
    while let Some(answer) = answers.next().await {
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
