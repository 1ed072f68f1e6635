//! [`LocalCluster`]: a coordinator on loopback and in-process workers, on the current tokio
//! runtime. The spawned coordinator and workers are kept in a [`JoinSet`], so that a task that
//! fails is reported ([`LocalCluster::watch`], [`LocalCluster::shutdown`]) instead of dropped.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use npuzzle_proto::security::{ClientSecurity, PemCertificates};
use npuzzle_proto::v1;
use npuzzle_solver::Shape;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::{ConnectError, JoinError, connect, wait_for_workers};

/// Why a local cluster did not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cannot listen on 127.0.0.1: {0}")]
    Listen(#[source] std::io::Error),
    #[error("a local cluster serving TLS needs the CA its workers are to trust (Options::tls_ca)")]
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
    /// cluster's own workers and by the join check; with TLS settings, so is [`Options::tls_ca`].
    pub coordinator: npuzzle_coordinator::Config,
    /// The CA the workers and the join check trust when the coordinator serves TLS (tests);
    /// TLS without it is [`ClusterError::Tls`].
    pub tls_ca: Option<PemCertificates>,
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
            tls_ca: None,
            workers: 1,
            threads: None,
            name: "local".into(),
            load_pdbs: true,
            pdb_dir: None,
            pdb_shapes: None,
        }
    }
}

/// What a task of the cluster is, for its errors, and the token that stops it: a task that
/// ends without an error after it was told to stop ended as asked.
enum Task {
    Coordinator(CancellationToken),
    Worker(String, CancellationToken),
}

impl Task {
    fn asked_to_stop(&self) -> bool {
        match self {
            Task::Coordinator(stop) | Task::Worker(_, stop) => stop.is_cancelled(),
        }
    }
}

type Ended = Result<(Task, Result<(), ClusterError>), tokio::task::JoinError>;

/// A coordinator and its workers running on the current tokio runtime, until
/// [`LocalCluster::shutdown`] (or until dropped: then they are told to stop and left to it).
pub struct LocalCluster {
    url: String,
    address: SocketAddr,
    /// How the join check (and a test's client) reaches the coordinator: its client token and
    /// [`Options::tls_ca`].
    client_security: ClientSecurity,
    /// How the cluster's workers reach it: its worker token and [`Options::tls_ca`].
    worker_security: ClientSecurity,
    /// The options, kept for [`LocalCluster::add_worker`] (their coordinator settings moved
    /// into the running coordinator).
    workers_like: WorkerOptions,
    /// The coordinator's own stop ([`LocalCluster::stop_coordinator`]).
    coordinator: CancellationToken,
    /// Each worker's stop, in the order they started ([`LocalCluster::stop_worker`]).
    workers: Vec<CancellationToken>,
    tasks: JoinSet<(Task, Result<(), ClusterError>)>,
}

/// What every worker of a cluster gets from its [`Options`].
struct WorkerOptions {
    threads: usize,
    name: String,
    load_pdbs: bool,
    pdb_dir: Option<PathBuf>,
    pdb_shapes: Option<BTreeSet<Shape>>,
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

    /// Starts the cluster's coordinator on `listener` and returns once every worker has
    /// joined. A task that fails meanwhile is the error. On `0.0.0.0` the coordinator accepts
    /// other hosts; its own workers still reach it over loopback.
    pub async fn start_on(
        listener: TcpListener,
        options: Options,
    ) -> Result<LocalCluster, ClusterError> {
        let scheme = match (&options.coordinator.tls, &options.tls_ca) {
            (None, _) => "http",
            (Some(_), Some(_)) => "https",
            (Some(_), None) => return Err(ClusterError::Tls),
        };
        let address = listener.local_addr().map_err(ClusterError::Listen)?;
        let mut reached = address;
        if reached.ip().is_unspecified() {
            reached.set_ip(Ipv4Addr::LOCALHOST.into());
        }
        let url = format!("{scheme}://{reached}");
        let security = |token| ClientSecurity {
            token,
            tls_ca: options.tls_ca.clone(),
            tls_domain: None,
        };
        let client_security = security(options.coordinator.auth.client.clone());
        let worker_security = security(options.coordinator.auth.worker.clone());
        let workers = options.workers;
        let mut cluster = LocalCluster {
            url,
            address,
            client_security,
            worker_security,
            workers_like: WorkerOptions {
                // The cores' share is at least 1; a count given is the worker's to check.
                threads: options
                    .threads
                    .unwrap_or_else(|| (cores() / workers.max(1)).max(1)),
                name: options.name,
                load_pdbs: options.load_pdbs,
                pdb_dir: options.pdb_dir,
                pdb_shapes: options.pdb_shapes,
            },
            coordinator: CancellationToken::new(),
            workers: Vec::new(),
            tasks: JoinSet::new(),
        };
        let stop = cluster.coordinator.clone();
        let config = options.coordinator;
        cluster.tasks.spawn(async move {
            let result = npuzzle_coordinator::run(listener, config, stop.clone()).await;
            (
                Task::Coordinator(stop),
                result.map_err(ClusterError::Coordinator),
            )
        });
        for _ in 0..workers {
            let config = cluster.worker_config();
            cluster.spawn_worker(config);
        }
        cluster.joined(workers as u32).await?;
        Ok(cluster)
    }

    /// The next worker's settings, as [`Options`] asked.
    fn worker_config(&self) -> npuzzle_worker::Config {
        let like = &self.workers_like;
        let mut config = npuzzle_worker::Config::new(self.url.clone());
        config.threads = like.threads;
        config.name = format!("{}-{}", like.name, self.workers.len());
        config.load_pdbs = like.load_pdbs;
        config.pdb_dir = like.pdb_dir.clone();
        config.pdb_shapes = like.pdb_shapes.clone();
        config.security = self.worker_security.clone();
        config
    }

    fn spawn_worker(&mut self, config: npuzzle_worker::Config) {
        let stop = CancellationToken::new();
        self.workers.push(stop.clone());
        self.tasks.spawn(async move {
            let name = config.name.clone();
            let result = npuzzle_worker::run(config, stop.clone()).await;
            let result = result.map_err(|source| ClusterError::Worker {
                name: name.clone(),
                source,
            });
            (Task::Worker(name, stop), result)
        });
    }

    /// Starts one more worker, set up as the cluster's own and then changed by `configure`,
    /// and waits until the coordinator counts one worker more than before (the one join wait).
    pub async fn add_worker(
        &mut self,
        configure: impl FnOnce(&mut npuzzle_worker::Config),
    ) -> Result<(), ClusterError> {
        let before = self.stats().await?.workers;
        let mut config = self.worker_config();
        configure(&mut config);
        self.spawn_worker(config);
        self.joined(before + 1).await
    }

    /// The coordinator's stats, asked with the cluster's client token.
    async fn stats(&self) -> Result<v1::StatsResponse, ClusterError> {
        let mut client = self.connect().await?;
        client
            .stats(v1::StatsRequest {})
            .await
            .map(tonic::Response::into_inner)
            .map_err(|status| {
                ClusterError::Join(JoinError::Stats {
                    url: self.url.clone(),
                    status,
                })
            })
    }

    async fn connect(&self) -> Result<crate::Coordinator, ClusterError> {
        connect(&self.url, &self.client_security)
            .await
            .map_err(|source| ClusterError::Connect {
                url: self.url.clone(),
                source,
            })
    }

    /// Waits until the coordinator counts `wanted` workers, or for a task to end first.
    async fn joined(&mut self, wanted: u32) -> Result<(), ClusterError> {
        let url = self.url.clone();
        let security = self.client_security.clone();
        let wait = async {
            let mut client =
                connect(&url, &security)
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
            Some(ended) = unexpected_end(&mut self.tasks) => Err(ended),
        }
    }

    /// The coordinator's URL (`http://127.0.0.1:PORT`; `https://` when it serves TLS).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The coordinator's address (as bound: `0.0.0.0:PORT` when it accepts other hosts).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// How a client reaches the coordinator: its client token and [`Options::tls_ca`].
    pub fn client_security(&self) -> &ClientSecurity {
        &self.client_security
    }

    /// How the cluster's workers reach it: its worker token and [`Options::tls_ca`].
    pub fn worker_security(&self) -> &ClientSecurity {
        &self.worker_security
    }

    /// Tells the worker started `i`-th (from 0) to stop; the others and the coordinator run on.
    pub fn stop_worker(&self, i: usize) {
        self.workers[i].cancel();
    }

    /// Tells the coordinator alone to stop (it drains); the workers run on.
    pub fn stop_coordinator(&self) {
        self.coordinator.cancel();
    }

    /// Waits until a task of the cluster ends, which it should not before
    /// [`LocalCluster::shutdown`] (or a stop asked for): its error, or [`ClusterError::Ended`].
    pub async fn watch(&mut self) -> ClusterError {
        match unexpected_end(&mut self.tasks).await {
            Some(ended) => ended,
            None => ClusterError::Ended {
                task: "cluster".into(),
            },
        }
    }

    /// Tells the coordinator and the workers to stop, waits for them, and returns the first
    /// error among them.
    pub async fn shutdown(mut self) -> Result<(), ClusterError> {
        self.cancel_all();
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

    fn cancel_all(&self) {
        self.coordinator.cancel();
        for worker in &self.workers {
            worker.cancel();
        }
    }
}

/// The next task to end other than as asked (see [`Task`]), as an error; `None` once none is
/// left.
async fn unexpected_end(
    tasks: &mut JoinSet<(Task, Result<(), ClusterError>)>,
) -> Option<ClusterError> {
    while let Some(ended) = tasks.join_next().await {
        match ended {
            Ok((task, Ok(()))) if task.asked_to_stop() => continue,
            ended => return Some(ended_early(ended)),
        }
    }
    None
}

/// The error of a task that ended while the cluster was meant to run.
fn ended_early(ended: Ended) -> ClusterError {
    match ended {
        Ok((_, Err(e))) => e,
        Ok((Task::Coordinator(_), Ok(()))) => ClusterError::Ended {
            task: "coordinator".into(),
        },
        Ok((Task::Worker(name, _), Ok(()))) => ClusterError::Ended {
            task: format!("worker {name}"),
        },
        Err(e) => ClusterError::Panicked(e.to_string()),
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.cancel_all();
        // They stop on the cancellation (the coordinator flushes its store) while the runtime
        // runs; aborting them would cut that short.
        self.tasks.detach_all();
    }
}
