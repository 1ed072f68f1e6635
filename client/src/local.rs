//! A whole cluster inside this process: a coordinator on loopback and in-process workers. The
//! embedded engine (`npuzzle solve` and `batch` without `--coordinator`), `npuzzle cluster`,
//! `load`, `cluster-bench` and the client's tests all start theirs here.
//!
//! One place waits for workers to join ([`wait_for_workers`], at most [`JOIN_TIMEOUT`]), for
//! a local cluster and for a coordinator named by URL alike; and the spawned coordinator and
//! workers are kept in a [`JoinSet`], so that a task that fails is reported
//! ([`LocalCluster::watch`], [`LocalCluster::shutdown`]) instead of dropped.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use npuzzle_proto::security::ClientSecurity;
use npuzzle_proto::v1;
use npuzzle_solver::{HeuristicKind, Shape};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::engine::{HeuristicChoice, Settings};
use crate::remote::{self, ConnectError, Coordinator};

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

/// Why a local cluster did not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cannot listen on 127.0.0.1: {0}")]
    Listen(#[source] std::io::Error),
    #[error("a local cluster serves plaintext only: its coordinator cannot have TLS settings")]
    Tls,
    #[error("cannot reach the local coordinator at {url}: {source}")]
    Connect { url: String, source: ConnectError },
    #[error(transparent)]
    Join(#[from] JoinError),
    #[error("the local coordinator stopped: {0}")]
    Coordinator(#[source] npuzzle_coordinator::Error),
    #[error("the local worker {name} stopped: {source}")]
    Worker {
        name: String,
        #[source]
        source: npuzzle_worker::Error,
    },
    #[error("the local {task} ended before the cluster was shut down")]
    Ended { task: String },
    #[error("a task of the local cluster panicked: {0}")]
    Panicked(String),
}

/// What a local cluster runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The coordinator's settings. Its client and worker tokens (if any) are used by the
    /// cluster's own workers and by the join check; TLS is refused ([`ClusterError::Tls`]).
    pub coordinator: npuzzle_coordinator::Config,
    /// In-process workers (0: a coordinator alone, for tests of one without workers).
    pub workers: usize,
    /// Search threads per worker; `None`: the cores shared among the workers.
    pub threads: Option<usize>,
    /// Workers are named `{name}-{i}` in logs.
    pub name: String,
    /// Whether the workers load (and serve) the pattern databases in `pdb_dir`.
    pub load_pdbs: bool,
    /// Their directory (`None`: `$NPUZZLE_PDB_DIR`, else the user cache).
    pub pdb_dir: Option<PathBuf>,
    /// Load tables for these shapes only (`None`: every shape whose files are present).
    pub pdb_shapes: Option<BTreeSet<Shape>>,
}

impl Default for Options {
    /// One worker on every core, loading the default directory's pattern databases.
    fn default() -> Self {
        Options {
            coordinator: npuzzle_coordinator::Config::default(),
            workers: 1,
            threads: None,
            name: "local".into(),
            load_pdbs: true,
            pdb_dir: None,
            pdb_shapes: None,
        }
    }
}

/// What a task of the cluster is, for its errors.
enum Task {
    Coordinator,
    Worker(String),
}

/// A coordinator and its workers running on the current tokio runtime, until
/// [`LocalCluster::shutdown`] (or until dropped: then they are told to stop and left to it).
pub struct LocalCluster {
    url: String,
    address: SocketAddr,
    workers: u32,
    shutdown: CancellationToken,
    tasks: JoinSet<(Task, Result<(), ClusterError>)>,
}

/// The cores of this machine.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl LocalCluster {
    /// Starts the cluster on `127.0.0.1:0` and returns once every worker has joined.
    pub async fn start(options: Options) -> Result<LocalCluster, ClusterError> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(ClusterError::Listen)?;
        LocalCluster::start_on(listener, options).await
    }

    /// The embedded cluster of `npuzzle solve` and `batch` without `--coordinator`: one worker
    /// with `threads` search threads, loading the pattern databases of `settings.pdb_dir` when
    /// `settings` may use them (`auto` or `pdb`); `shapes`, when known, are the board shapes
    /// the run will ask for, so that only their tables are loaded (most of a second each).
    pub async fn embedded(
        threads: usize,
        settings: &Settings,
        shapes: Option<BTreeSet<Shape>>,
    ) -> Result<LocalCluster, ClusterError> {
        LocalCluster::start(Options {
            threads: Some(threads),
            name: "embedded".into(),
            load_pdbs: matches!(
                settings.heuristic,
                HeuristicChoice::Auto | HeuristicChoice::Use(HeuristicKind::Pdb)
            ),
            pdb_dir: settings.pdb_dir.clone(),
            pdb_shapes: shapes,
            ..Options::default()
        })
        .await
    }

    /// Starts the cluster's coordinator on `listener` and returns once every worker has
    /// joined. A task that fails meanwhile is the error.
    pub async fn start_on(
        listener: TcpListener,
        options: Options,
    ) -> Result<LocalCluster, ClusterError> {
        if options.coordinator.tls.is_some() {
            return Err(ClusterError::Tls);
        }
        let address = listener.local_addr().map_err(ClusterError::Listen)?;
        let url = format!("http://{address}");
        let security = ClientSecurity {
            token: options.coordinator.auth.client.clone(),
            ..ClientSecurity::default()
        };
        let worker_token = options.coordinator.auth.worker.clone();
        let shutdown = CancellationToken::new();
        let mut tasks = JoinSet::new();
        let stop = shutdown.clone();
        tasks.spawn(async move {
            let result = npuzzle_coordinator::run(listener, options.coordinator, stop).await;
            (Task::Coordinator, result.map_err(ClusterError::Coordinator))
        });
        let workers = options.workers;
        for i in 0..workers {
            let mut config = npuzzle_worker::Config::new(url.clone());
            // The cores' share is at least 1; a count given is the worker's to check.
            config.threads = options
                .threads
                .unwrap_or_else(|| (cores() / workers).max(1));
            config.name = format!("{}-{i}", options.name);
            config.load_pdbs = options.load_pdbs;
            config.pdb_dir = options.pdb_dir.clone();
            config.pdb_shapes = options.pdb_shapes.clone();
            config.security.token = worker_token.clone();
            let stop = shutdown.clone();
            tasks.spawn(async move {
                let name = config.name.clone();
                let result = npuzzle_worker::run(config, stop).await;
                let result = result.map_err(|source| ClusterError::Worker {
                    name: name.clone(),
                    source,
                });
                (Task::Worker(name), result)
            });
        }
        let mut cluster = LocalCluster {
            url,
            address,
            workers: workers as u32,
            shutdown,
            tasks,
        };
        cluster.joined(&security).await?;
        Ok(cluster)
    }

    /// Waits for every worker to join, or for a task to end first.
    async fn joined(&mut self, security: &ClientSecurity) -> Result<(), ClusterError> {
        let url = self.url.clone();
        let wanted = self.workers;
        let wait = async {
            let mut client =
                remote::connect(&url, security)
                    .await
                    .map_err(|source| ClusterError::Connect {
                        url: url.clone(),
                        source,
                    })?;
            wait_for_workers(&mut client, &url, wanted).await?;
            Ok::<_, ClusterError>(())
        };
        tokio::select! {
            joined = wait => joined,
            Some(ended) = self.tasks.join_next() => Err(ended_early(ended)),
        }
    }

    /// The coordinator's URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The coordinator's address.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Waits until a task of the cluster ends, which it should not before
    /// [`LocalCluster::shutdown`]: its error, or [`ClusterError::Ended`].
    pub async fn watch(&mut self) -> ClusterError {
        match self.tasks.join_next().await {
            Some(ended) => ended_early(ended),
            None => ClusterError::Ended {
                task: "cluster".into(),
            },
        }
    }

    /// Tells the coordinator and the workers to stop, waits for them, and returns the first
    /// error among them.
    pub async fn shutdown(mut self) -> Result<(), ClusterError> {
        self.shutdown.cancel();
        let mut first = Ok(());
        while let Some(ended) = self.tasks.join_next().await {
            let result = match ended {
                Ok((_, result)) => result,
                Err(e) => Err(ClusterError::Panicked(e.to_string())),
            };
            if first.is_ok() {
                first = result;
            }
        }
        first
    }
}

/// The error of a task that ended while the cluster was meant to run.
fn ended_early(
    ended: Result<(Task, Result<(), ClusterError>), tokio::task::JoinError>,
) -> ClusterError {
    match ended {
        Ok((_, Err(e))) => e,
        Ok((Task::Coordinator, Ok(()))) => ClusterError::Ended {
            task: "coordinator".into(),
        },
        Ok((Task::Worker(name), Ok(()))) => ClusterError::Ended {
            task: format!("worker {name}"),
        },
        Err(e) => ClusterError::Panicked(e.to_string()),
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.shutdown.cancel();
        // They stop on the cancellation (the coordinator flushes its store) while the runtime
        // runs; aborting them would cut that short.
        self.tasks.detach_all();
    }
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
