//! What the tests of every crate share (feature `test-util`; a dev-dependency only).
//!
//! - [`TestCluster`]: a [`LocalCluster`] for tests that call the coordinator themselves: it
//!   panics instead of returning errors, keeps the securities its clients and workers use, and
//!   starts its workers one at a time ([`TestCluster::add_worker`]), each through the one join
//!   wait.
//! - [`ClusterThread`]: a [`LocalCluster`] on a runtime thread of its own, for tests that run a
//!   blocking binary (`npuzzle`, `npuzzle-worker`) against it.
//! - [`certs`]: a CA and a coordinator certificate made at test time.
//! - [`process`]: [`Process`], a child process (a binary under test) killed and reaped when
//!   dropped, with signals and a wait for the stderr line that says it is ready.
//! - [`prometheus`]: a plain HTTP `GET`, and the Prometheus text format scraped and parsed.
//! - [`korf`]: Korf's instances, and requests for them.
//! - [`optimal`]: [`assert_optimal`], the one check of an answer whose optimum is known (replayed
//!   from the board, reaching the goal, of the optimal length).
//! - [`eventually`]: polls a condition until it holds, or panics saying what did not happen.
//! - [`flags`]: every option of a command line names its `NPUZZLE_*` variable.

pub mod certs;
pub mod flags;
pub mod korf;
pub mod optimal;
pub mod process;
pub mod prometheus;

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use npuzzle_coordinator::{Config, SchedulerConfig};
use npuzzle_proto::security::ClientSecurity;
use npuzzle_proto::v1;
use npuzzle_proto::v1::solver_client::SolverClient;

use crate::{ClusterError, Coordinator, LocalCluster, Options};

pub use optimal::{assert_optimal, assert_reaches_goal};
pub use process::Process;

/// Polls `check` every `every` until it gives `Some`, and returns that; panics saying `what`
/// did not happen if it has not within `within`.
pub async fn eventually<T, F>(
    within: Duration,
    every: Duration,
    what: &str,
    mut check: impl FnMut() -> F,
) -> T
where
    F: Future<Output = Option<T>>,
{
    let began = Instant::now();
    loop {
        if let Some(done) = check().await {
            return done;
        }
        assert!(
            began.elapsed() < within,
            "{what}: not within {} s",
            within.as_secs_f64()
        );
        tokio::time::sleep(every).await;
    }
}

/// A coordinator config that distributes anything beyond a few nodes.
pub fn eager_config() -> Config {
    Config {
        probe_nodes: 500,
        units_per_slot: 16,
        unavailable_after: Duration::from_secs(2),
        tick: Duration::from_millis(100),
        scheduler: SchedulerConfig {
            lease_timeout: Duration::from_secs(2),
            ..SchedulerConfig::default()
        },
        ..Config::default()
    }
}

/// A [`LocalCluster`] that starts without workers, for tests that call its coordinator
/// themselves: see [the module](self).
pub struct TestCluster {
    pub url: String,
    /// What [`TestCluster::client`] connects with: the client token, the CA.
    pub client_security: ClientSecurity,
    /// What [`TestCluster::add_worker`]'s workers connect with: the worker token, the CA.
    pub worker_security: ClientSecurity,
    local: LocalCluster,
}

impl TestCluster {
    /// A coordinator with `config` on `127.0.0.1:0`, with no workers.
    pub async fn start(config: Config) -> TestCluster {
        TestCluster::start_secured(config, ClientSecurity::default(), ClientSecurity::default())
            .await
    }

    /// A coordinator with `config` (tokens, TLS: its URL is `https://` with [`Config::tls`]),
    /// whose clients and workers connect with `client` and `worker`.
    pub async fn start_secured(
        config: Config,
        client: ClientSecurity,
        worker: ClientSecurity,
    ) -> TestCluster {
        TestCluster::start_secured_on("127.0.0.1:0", config, client, worker).await
    }

    /// [`TestCluster::start`] listening on `address`: on `0.0.0.0:0` it accepts other hosts
    /// (as `npuzzle cluster --listen 0.0.0.0:PORT` does); its clients and workers still
    /// connect over loopback.
    pub async fn start_on(address: &str, config: Config) -> TestCluster {
        let open = ClientSecurity::default();
        TestCluster::start_secured_on(address, config, open.clone(), open).await
    }

    async fn start_secured_on(
        address: &str,
        config: Config,
        client: ClientSecurity,
        worker: ClientSecurity,
    ) -> TestCluster {
        let listener = tokio::net::TcpListener::bind(address).await.unwrap();
        let options = Options {
            coordinator: config,
            tls_ca: worker.tls_ca.clone().or_else(|| client.tls_ca.clone()),
            workers: 0,
            ..Options::default()
        };
        let local = LocalCluster::start_on(listener, options)
            .await
            .unwrap_or_else(|e| panic!("the test cluster does not start: {e}"));
        TestCluster {
            url: local.url().to_string(),
            client_security: client,
            worker_security: worker,
            local,
        }
    }

    /// The coordinator's address (as bound).
    pub fn address(&self) -> SocketAddr {
        self.local.address()
    }

    /// Stops the workers and the coordinator, and waits until they have returned (the
    /// coordinator's answer store written and closed).
    pub async fn stop(self) {
        tokio::time::timeout(Duration::from_secs(10), self.local.shutdown())
            .await
            .expect("the cluster stops within 10 s")
            .expect("the cluster stops without an error");
    }

    /// Starts a worker with `threads` search threads and no pattern databases, and waits until
    /// the coordinator counts it.
    pub async fn add_worker(&mut self, threads: usize) {
        self.add_worker_with_tables(threads, None).await;
    }

    /// The same, loading the pattern databases in `pdb_dir` (none when `None`, whatever the
    /// environment says).
    pub async fn add_worker_with_tables(&mut self, threads: usize, pdb_dir: Option<&Path>) {
        self.add_worker_with(|config| {
            config.threads = threads;
            config.heartbeat = Duration::from_millis(200);
            config.pdb_dir = pdb_dir.map(Path::to_path_buf);
            config.load_pdbs = pdb_dir.is_some();
        })
        .await;
    }

    /// Starts a worker with the library's settings (its name included) and
    /// [`TestCluster::worker_security`], changed by `configure`, and waits until the
    /// coordinator counts it.
    pub async fn add_worker_with(&mut self, configure: impl FnOnce(&mut npuzzle_worker::Config)) {
        let url = self.url.clone();
        let security = self.worker_security.clone();
        self.local
            .add_worker(|config| {
                *config = npuzzle_worker::Config::new(url);
                config.security = security;
                configure(config);
            })
            .await
            .unwrap_or_else(|e| panic!("worker did not join: {e}"));
    }

    /// Tells the worker added `i`-th (from 0) to stop.
    pub fn stop_worker(&self, i: usize) {
        self.local.stop_worker(i);
    }

    /// Tells the coordinator alone to stop (it drains); the workers run on.
    pub fn stop_coordinator(&self) {
        self.local.stop_coordinator();
    }

    /// A client of `npuzzle.v1.Solver` with [`TestCluster::client_security`] (and tonic's
    /// default message limits).
    pub async fn client(&self) -> Coordinator {
        let endpoint = self.client_security.endpoint(&self.url).unwrap();
        for _ in 0..100 {
            if let Ok(channel) = endpoint.connect().await {
                return SolverClient::with_interceptor(channel, self.client_security.interceptor());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("coordinator unreachable at {}", self.url);
    }

    pub async fn stats(&self) -> v1::StatsResponse {
        self.client()
            .await
            .stats(v1::StatsRequest {})
            .await
            .unwrap()
            .into_inner()
    }

    /// Waits (the one join wait) until the coordinator counts `wanted` workers, however they
    /// joined (a test's hand-driven ones too).
    pub async fn wait_for_workers(&self, wanted: u32) -> v1::StatsResponse {
        let mut client = self.client().await;
        crate::wait_for_workers(&mut client, &self.url, wanted)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

/// A [`LocalCluster`] on a runtime thread of its own (for tests that run a blocking binary),
/// from the moment its workers have joined until [`ClusterThread::stop`] (or drop).
pub struct ClusterThread {
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), ClusterError>>>,
}

impl ClusterThread {
    /// Starts a local cluster; panics if it does not start.
    pub fn start(options: Options) -> ClusterThread {
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
            runtime.block_on(async move {
                let cluster = match LocalCluster::start(options).await {
                    Ok(cluster) => cluster,
                    Err(e) => {
                        let _ = url_tx.send(Err(e.to_string()));
                        return Ok(());
                    }
                };
                let _ = url_tx.send(Ok(cluster.url().to_string()));
                let _ = stop_rx.await;
                cluster.shutdown().await
            })
        });
        let url = url_rx
            .recv()
            .expect("the cluster thread answers")
            .unwrap_or_else(|e| panic!("the local cluster does not start: {e}"));
        ClusterThread {
            url,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// Shuts the cluster down and waits for it; panics if a task of it failed.
    pub fn stop(mut self) {
        if let Err(e) = self.halt() {
            panic!("the local cluster failed: {e}");
        }
    }

    fn halt(&mut self) -> Result<(), ClusterError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take() {
            Some(thread) => thread.join().expect("the cluster thread does not panic"),
            None => Ok(()),
        }
    }
}

impl Drop for ClusterThread {
    fn drop(&mut self) {
        let _ = self.halt();
    }
}
