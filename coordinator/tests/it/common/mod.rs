//! A real cluster on loopback: a coordinator on port 0 and in-process workers.
#![allow(dead_code)]

pub mod certs;
pub mod prometheus;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use npuzzle_coordinator::{Config, SchedulerConfig};
use npuzzle_proto::security::{AttachToken, ClientSecurity};
use npuzzle_proto::v1;
use npuzzle_proto::v1::solver_client::SolverClient;
use tokio_util::sync::CancellationToken;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

/// A client of `npuzzle.v1.Solver` that sends the cluster's client token (if any).
pub type Client = SolverClient<InterceptedService<Channel, AttachToken>>;

pub struct Cluster {
    pub url: String,
    pub shutdown: CancellationToken,
    pub workers: Vec<CancellationToken>,
    /// What [`Cluster::client`] connects with: the client token, the CA.
    pub client_security: ClientSecurity,
    /// What [`Cluster::add_worker`]'s workers connect with: the worker token, the CA.
    pub worker_security: ClientSecurity,
    /// The coordinator's `run`, to wait for in [`Cluster::stop`].
    pub server: Option<tokio::task::JoinHandle<Result<(), npuzzle_coordinator::Error>>>,
}

/// A config that distributes anything beyond a few nodes.
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

impl Cluster {
    pub async fn start(config: Config) -> Cluster {
        Cluster::start_secured(config, ClientSecurity::default(), ClientSecurity::default()).await
    }

    /// A coordinator with `config` (tokens, TLS: its URL is `https://` with [`Config::tls`]),
    /// whose clients and workers connect with `client` and `worker`.
    pub async fn start_secured(
        config: Config,
        client: ClientSecurity,
        worker: ClientSecurity,
    ) -> Cluster {
        Cluster::start_secured_on("127.0.0.1:0", config, client, worker).await
    }

    /// [`Cluster::start`] listening on `address`: on `0.0.0.0:0` it accepts other hosts (as
    /// `npuzzle cluster --listen 0.0.0.0:PORT` does); its clients and workers still connect
    /// over loopback.
    pub async fn start_on(address: &str, config: Config) -> Cluster {
        let open = ClientSecurity::default();
        Cluster::start_secured_on(address, config, open.clone(), open).await
    }

    async fn start_secured_on(
        address: &str,
        config: Config,
        client: ClientSecurity,
        worker: ClientSecurity,
    ) -> Cluster {
        let listener = tokio::net::TcpListener::bind(address).await.unwrap();
        let scheme = if config.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let mut reached = listener.local_addr().unwrap();
        if reached.ip().is_unspecified() {
            reached.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        let url = format!("{scheme}://{reached}");
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(npuzzle_coordinator::run(listener, config, shutdown.clone()));
        Cluster {
            url,
            shutdown,
            workers: Vec::new(),
            client_security: client,
            worker_security: worker,
            server: Some(server),
        }
    }

    /// Stops the workers and the coordinator, and waits until the coordinator's `run` has
    /// returned (its answer store written and closed).
    pub async fn stop(mut self) {
        for w in &self.workers {
            w.cancel();
        }
        self.shutdown.cancel();
        if let Some(server) = self.server.take() {
            tokio::time::timeout(Duration::from_secs(10), server)
                .await
                .expect("the coordinator stops within 10 s")
                .expect("the coordinator's task does not panic")
                .expect("the coordinator stops without an error");
        }
    }

    /// Starts a worker with `threads` search threads and no pattern databases, and waits until
    /// the coordinator counts it.
    pub async fn add_worker(&mut self, threads: usize) {
        self.add_worker_with_tables(threads, None).await;
    }

    /// The same, loading the pattern databases in `pdb_dir` (none when `None`, whatever the
    /// environment says).
    pub async fn add_worker_with_tables(&mut self, threads: usize, pdb_dir: Option<&Path>) {
        let before = self.stats().await.workers;
        let mut config = npuzzle_worker::Config::new(self.url.clone());
        config.security = self.worker_security.clone();
        config.threads = threads;
        config.heartbeat = Duration::from_millis(200);
        config.pdb_dir = pdb_dir.map(Path::to_path_buf);
        config.load_pdbs = pdb_dir.is_some();
        let token = CancellationToken::new();
        tokio::spawn(npuzzle_worker::run(config, token.clone()));
        self.workers.push(token);
        for _ in 0..200 {
            if self.stats().await.workers > before {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("worker did not join");
    }

    pub async fn client(&self) -> Client {
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
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for w in &self.workers {
            w.cancel();
        }
        self.shutdown.cancel();
    }
}

/// A request for `tiles` (row-major, square) towards `goal`.
pub fn request(tiles: &str, goal: v1::GoalKind) -> v1::SolveRequest {
    let tiles: Vec<u32> = tiles
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect();
    let side = (tiles.len() as f64).sqrt() as u32;
    v1::SolveRequest {
        board: Some(v1::Board {
            width: side,
            height: side,
            tiles,
        }),
        goal: Some(v1::Goal {
            kind: goal as i32,
            tiles: vec![],
        }),
        ..Default::default()
    }
}

/// Korf's instances: (id, optimal length, tiles) for the blank-first goal.
pub fn korf(ids: &[usize]) -> Vec<(usize, usize, String)> {
    include_str!("../../../../data/korf100.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let id: usize = f[0].parse().ok()?;
            ids.contains(&id)
                .then(|| (id, f[1].parse().unwrap(), f[2..].join(" ")))
        })
        .collect()
}

/// Replays `moves` from `tiles` and checks they reach the blank-first goal.
pub fn replays_to_blank_first(tiles: &str, moves: &str) -> bool {
    let board = npuzzle_solver::Board::parse(tiles, None).unwrap();
    let goal = npuzzle_solver::Goal::blank_first(board.shape());
    let path = npuzzle_solver::parse_moves(moves).unwrap();
    board.verify(&path, &goal).is_ok_and(|v| v.reaches_goal)
}

/// A directory holding 4x4 `5-5-5` pattern databases (the larger partitions take far too long
/// for tests). It lives in cargo's scratch directory for integration tests and is kept between
/// runs: the tables are verified on every run and built (about a second) only when missing or
/// damaged.
pub fn tables_5_5_5() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pdb-5-5-5");
        let store = npuzzle_worker::tables::TableStore::new(Some(dir.clone()));
        let shape = npuzzle_solver::Shape::new(4, 4).unwrap();
        let partition = npuzzle_solver::Partition::named(shape, "5-5-5").unwrap();
        store.load(&partition, true, true, |_, _, _| {}).unwrap();
        dir
    })
}

/// Korf's instances with the fewest nodes (Manhattan IDA*, `data/korf100_md_nodes.txt`).
pub const EASIEST_KORF: [usize; 5] = [79, 12, 42, 55, 97];

/// A hand-driven worker: joins with a hello offering `slots` (md and lc only), and waits until
/// the coordinator counts it. The test sends its messages through the sender (keeping it alive
/// keeps the stream open) and reads the coordinator's through the stream.
pub async fn join_by_hand(
    cluster: &Cluster,
    name: &str,
    slots: u32,
) -> (
    tokio::sync::mpsc::UnboundedSender<v1::WorkerMessage>,
    tonic::Streaming<v1::CoordinatorMessage>,
) {
    join_with_hello(cluster, hand_hello(name, slots)).await
}

/// The hello of [`join_by_hand`].
pub fn hand_hello(name: &str, slots: u32) -> v1::Hello {
    v1::Hello {
        worker_id: name.into(),
        slots,
        version: "test".into(),
        heuristics: vec![
            v1::Heuristic::Manhattan as i32,
            v1::Heuristic::LinearConflict as i32,
        ],
        pattern_databases: vec![],
    }
}

/// Opens a `Join` stream with `hello`: the coordinator's answer (its stream, or the status it
/// refused the join with), without waiting to be counted.
pub async fn try_join(
    cluster: &Cluster,
    hello: v1::Hello,
) -> Result<
    (
        tokio::sync::mpsc::UnboundedSender<v1::WorkerMessage>,
        tonic::Streaming<v1::CoordinatorMessage>,
    ),
    tonic::Status,
> {
    let mut client = npuzzle_proto::v1::cluster_client::ClusterClient::connect(cluster.url.clone())
        .await
        .unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tx.send(v1::WorkerMessage {
        message: Some(v1::worker_message::Message::Hello(hello)),
    })
    .unwrap();
    let inbound = client
        .join(tokio_stream::wrappers::UnboundedReceiverStream::new(rx))
        .await?
        .into_inner();
    Ok((tx, inbound))
}

/// [`join_by_hand`] with any hello.
pub async fn join_with_hello(
    cluster: &Cluster,
    hello: v1::Hello,
) -> (
    tokio::sync::mpsc::UnboundedSender<v1::WorkerMessage>,
    tonic::Streaming<v1::CoordinatorMessage>,
) {
    let name = hello.worker_id.clone();
    let before = cluster.stats().await.workers;
    let (tx, inbound) = try_join(cluster, hello).await.unwrap();
    let joined = std::time::Instant::now();
    while cluster.stats().await.workers == before {
        assert!(
            joined.elapsed() < Duration::from_secs(5),
            "{name} not counted as a worker"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (tx, inbound)
}
