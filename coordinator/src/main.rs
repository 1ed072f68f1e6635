//! `npuzzle-coordinator`: serve the npuzzle cluster's coordinator.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use npuzzle_coordinator::{
    Auth, Config, HttpListener, MetricsListener, SchedulerArgs, SchedulerConfig, ServerTls,
};
use npuzzle_proto::security::Token;
use npuzzle_telemetry::cli::LogArgs;
use tokio_util::sync::CancellationToken;

/// jemalloc, not the system's allocator: the scheduler allocates and frees jobs' units and tasks
/// by the thousand, and glibc hands freed pages back to the system and faults them in again
/// (docs/benchmarks/2026-12-scheduler-speed.md, "jemalloc, and a smaller task").
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The npuzzle coordinator: takes solve requests from clients (gRPC service npuzzle.v1.Solver)
/// and hands work units to workers (npuzzle.v1.Cluster), on one address.
///
/// Also serves grpc.health.v1 (SERVING once a worker is connected) and server reflection (so
/// `grpcurl -plaintext ADDR list` works); these two never ask for a token. Stop it with Ctrl-C
/// or SIGTERM. Every flag can also be set by the environment variable named in its help; prefer
/// the *-file flags for tokens (other processes of the same user can read the environment).
#[derive(Parser)]
#[command(name = "npuzzle-coordinator", version, about)]
struct Args {
    /// Address to listen on, for clients and workers alike (0.0.0.0:50051 to accept other
    /// machines).
    #[arg(
        long,
        env = "NPUZZLE_LISTEN",
        default_value = npuzzle_coordinator::DEFAULT_LISTEN,
        value_name = "ADDR"
    )]
    listen: String,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 0.0.0.0:9090). Off by default.
    #[arg(long, env = "NPUZZLE_METRICS_LISTEN", value_name = "ADDR")]
    metrics_listen: Option<String>,
    /// Serve the web console at http://ADDR/ and the JSON API at http://ADDR/api/v1/ (e.g.
    /// 127.0.0.1:8080). Plain HTTP; with --client-token the API requires it too. Off by default.
    #[arg(long, env = "NPUZZLE_HTTP_LISTEN", value_name = "ADDR")]
    http_listen: Option<String>,
    #[command(flatten)]
    log: LogArgs,
    /// Answers kept in the cache at most; each state along a solved path is one entry.
    #[arg(long, env = "NPUZZLE_CACHE_CAPACITY", default_value_t = Config::default().cache_capacity)]
    cache_capacity: usize,
    /// Also keep answers in a store in DIR (created if missing; file answers.redb), so that
    /// they survive a restart. At start-up every stored answer is replayed (bad ones dropped);
    /// a corrupt store is renamed aside and started afresh. Holds --cache-capacity answers at
    /// most. Off by default (memory only).
    #[arg(long, env = "NPUZZLE_CACHE_DIR", value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Work units per worker search thread when the coordinator cuts a search itself (only
    /// while no connected worker can search it; otherwise searches go whole to a worker).
    #[arg(long, env = "NPUZZLE_UNITS_PER_SLOT", default_value_t = Config::default().units_per_slot)]
    units_per_slot: usize,
    /// Nodes the coordinator searches itself on a board that no connected worker can search
    /// (none connected, or none with the tables asked for) before cutting it into units that wait
    /// for one. With a worker, the coordinator searches nothing.
    #[arg(long, env = "NPUZZLE_PROBE_NODES", default_value_t = Config::default().probe_nodes)]
    probe_nodes: u64,
    /// Nodes spent on a fast legal path (the incumbent) beside each search of a board of more
    /// than 9 cells: shown while the search runs, answered at a deadline (0: none).
    #[arg(long, env = "NPUZZLE_INCUMBENT_NODES", default_value_t = Config::default().incumbent_nodes)]
    incumbent_nodes: u64,
    /// Requests that need a search, waiting or running, at most; past it they get
    /// RESOURCE_EXHAUSTED with a retry-after-ms hint (cache hits are always served).
    #[arg(long, env = "NPUZZLE_MAX_SEARCHES", default_value_t = Config::default().max_searches)]
    max_searches: usize,
    /// Of those, at most this many from one client (its IP address; behind a proxy, all
    /// clients share the proxy's); past it that client gets RESOURCE_EXHAUSTED. 0: no limit.
    #[arg(long, env = "NPUZZLE_MAX_SEARCHES_PER_CLIENT", default_value_t = Config::default().max_searches_per_client)]
    max_searches_per_client: usize,
    /// A detached job (SubmitJob, `npuzzle submit`) is kept this many seconds after it finished,
    /// for GetJob, WatchJob and `npuzzle wait` to read its answer.
    #[arg(long, env = "NPUZZLE_JOB_TTL_SECS", default_value_t = Config::default().job_ttl.as_secs())]
    job_ttl_secs: u64,
    /// With --cache-dir: a running detached job's progress is written to the store at each new
    /// bound and at least this often (seconds) within one; after a restart (even kill -9) the
    /// coordinator resumes it from there. 0: at each new bound only.
    #[arg(long, env = "NPUZZLE_CHECKPOINT_SECS", default_value_t = Config::default().checkpoint_every.as_secs())]
    checkpoint_secs: u64,
    /// TCP connections open at most, clients and workers together; past it a new connection is
    /// closed at once (and counted in npuzzle_coordinator_connections_refused_total). A
    /// connection that sends nothing within 10 s of connecting is closed too.
    #[arg(long, env = "NPUZZLE_MAX_CONNECTIONS", default_value_t = Config::default().max_connections)]
    max_connections: usize,
    /// Seconds a new gRPC connection has to send its whole opening (the HTTP/2 preface and its
    /// settings; with TLS, the handshake) before it is closed: peers that trickle it a byte at a
    /// time hold nothing for long.
    #[arg(long, env = "NPUZZLE_HANDSHAKE_SECS", default_value_t = Config::default().handshake_timeout.as_secs())]
    handshake_secs: u64,
    /// Seconds an HTTP request (--http-listen) has to send its whole header, from the
    /// connection's opening or the previous response, before the connection is closed.
    #[arg(long, env = "NPUZZLE_HEADER_READ_SECS", default_value_t = Config::default().header_read_timeout.as_secs())]
    header_read_secs: u64,
    /// The share of worker reports (a unit searched without a find, a whole search's answer)
    /// searched again by another worker before they are relied on, from 0 (none) to 1 (all).
    /// A worker caught lying is dropped and quarantined, and every running job
    /// that relied on it starts over. Costs about that share of extra search, and latency.
    /// See docs/security.md.
    #[arg(long, env = "NPUZZLE_AUDIT_FRACTION", default_value_t = SchedulerConfig::DEFAULT_AUDIT_FRACTION)]
    audit_fraction: f64,
    /// While audits are on, a worker is on probation until this many answers have passed their
    /// final audit with its reports in them (0: no probation): before an answer is returned,
    /// every report a worker on probation made in the last bound before it is searched again
    /// by another worker. A worker that lies from its first report is caught before its lies
    /// change an answer.
    #[arg(long, env = "NPUZZLE_PROBATION", default_value_t = SchedulerConfig::default().probation)]
    probation: u32,
    /// Workers connected at most; past it a joining worker gets RESOURCE_EXHAUSTED.
    #[arg(long, env = "NPUZZLE_MAX_WORKERS", default_value_t = Config::default().max_workers)]
    max_workers: usize,
    /// Search threads one worker is counted with at most, whatever it claims.
    #[arg(long, env = "NPUZZLE_MAX_SLOTS_PER_WORKER", default_value_t = Config::default().max_slots_per_worker)]
    max_slots_per_worker: usize,
    /// A worker dropped for a forged result or for failing unit after unit is refused (its name
    /// at its address; an address with 4 such names, whatever the name) for this many seconds,
    /// and pattern databases it claimed but refused to search with are struck from its hellos
    /// for as long. 0: no quarantine.
    #[arg(long, env = "NPUZZLE_QUARANTINE_SECS", default_value_t = Config::default().quarantine_for.as_secs())]
    quarantine_secs: u64,
    /// Nodes a worker may expand on one unit before it hands back the rest (kept, not searched
    /// again), so that other searches get a turn (0: no limit).
    #[arg(long, env = "NPUZZLE_UNIT_BUDGET", default_value_t = SchedulerConfig::default().node_budget)]
    unit_budget: u64,
    /// When a search thread is idle and nothing is queued, the largest running unit is asked
    /// for the rest of its work; a whole search stops once it has searched this many nodes, so
    /// that searches that end sooner are never cut (units of a search already cut:
    /// `--cut-hand-back-after`).
    #[arg(long, env = "NPUZZLE_HAND_BACK_AFTER", default_value_t = SchedulerConfig::default().hand_back_after)]
    hand_back_after: u64,
    /// The scheduler's tuning flags, shared with `npuzzle simulate`.
    #[command(flatten)]
    scheduler: SchedulerArgs,
    /// A new search that finds every search thread busy gets one at once: the search holding
    /// the most threads above its share is asked for one back (keeping what it searched), each
    /// search at most once per this many milliseconds. 0: a new search waits for a thread to
    /// free.
    #[arg(
        long,
        env = "NPUZZLE_PREEMPT_SLICE_MS",
        default_value_t = SchedulerConfig::default().preempt_slice.map_or(0, |d| d.as_millis() as u64)
    )]
    preempt_slice_ms: u64,
    /// Seconds of silence after which a worker is dropped and its units go to other workers.
    #[arg(long, env = "NPUZZLE_LEASE_SECS", default_value_t = SchedulerConfig::default().lease_timeout.as_secs())]
    lease_secs: u64,
    /// On Ctrl-C or SIGTERM, keep answering this many seconds with health NOT_SERVING before
    /// stopping, so that load balancers can move clients away first.
    #[arg(long, env = "NPUZZLE_DRAIN_SECS", default_value_t = Config::default().drain.as_secs())]
    drain_secs: u64,
    /// Require this bearer token on npuzzle.v1.Solver (Solve, SolveStream, Stats): who may
    /// submit work. Off by default (anyone who reaches the port may).
    #[arg(
        long,
        env = "NPUZZLE_CLIENT_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    client_token: Option<String>,
    /// The client token, read from FILE (trailing line breaks dropped).
    #[arg(long, env = "NPUZZLE_CLIENT_TOKEN_FILE", value_name = "FILE")]
    client_token_file: Option<PathBuf>,
    /// Require this bearer token on npuzzle.v1.Cluster (Join): who may join as a worker. It must
    /// differ from the client token. Off by default.
    #[arg(
        long,
        env = "NPUZZLE_WORKER_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    worker_token: Option<String>,
    /// The worker token, read from FILE (trailing line breaks dropped).
    #[arg(long, env = "NPUZZLE_WORKER_TOKEN_FILE", value_name = "FILE")]
    worker_token_file: Option<PathBuf>,
    /// Serve TLS with this certificate chain (PEM, the server's certificate first); needs
    /// --tls-key. Clients and workers then use https:// URLs. Off by default (plaintext).
    #[arg(
        long,
        env = "NPUZZLE_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(
        long,
        env = "NPUZZLE_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    tls_key: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    args.log.init("info")?;
    let tls_files = (args.tls_cert.clone(), args.tls_key.clone());
    let metrics_listen = args.metrics_listen.clone();
    let http_listen = args.http_listen.clone();
    let listen = args.listen.clone();
    let mut config = args.config()?;
    if let (Some(cert), Some(key)) = &tls_files {
        config.tls = Some(ServerTls::read(cert, key)?);
    }
    // Settings out of range stop it here, before it binds anything, naming the setting.
    config.validate()?;
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    tracing::info!(
        address = %listener.local_addr()?,
        tls = config.tls.is_some(),
        client_token = config.auth.client.is_some(),
        worker_token = config.auth.worker.is_some(),
        "coordinator listening"
    );
    if let Some(address) = &metrics_listen {
        config.metrics = Some(
            MetricsListener::bind(address)
                .with_context(|| format!("cannot serve metrics on {address}"))?,
        );
    }
    if let Some(address) = &http_listen {
        config.http = Some(
            HttpListener::bind(address)
                .with_context(|| format!("cannot serve the web console on {address}"))?,
        );
    }
    let shutdown = CancellationToken::new();
    let signal = shutdown.clone();
    tokio::spawn(async move {
        npuzzle_telemetry::shutdown_signal().await;
        tracing::info!("shutting down");
        signal.cancel();
    });
    npuzzle_coordinator::run(listener, config, shutdown).await?;
    Ok(())
}

impl Args {
    /// The library's settings these flags ask for (no listeners, no TLS: those need I/O), as
    /// given: [`Config::validate`] refuses what is out of range.
    fn config(self) -> anyhow::Result<Config> {
        let auth = Auth {
            client: Token::from_flags(
                self.client_token,
                self.client_token_file.as_deref(),
                "--client-token",
            )?,
            worker: Token::from_flags(
                self.worker_token,
                self.worker_token_file.as_deref(),
                "--worker-token",
            )?,
        };
        Ok(Config {
            cache_capacity: self.cache_capacity,
            cache_dir: self.cache_dir,
            units_per_slot: self.units_per_slot,
            probe_nodes: self.probe_nodes,
            incumbent_nodes: self.incumbent_nodes,
            max_searches: self.max_searches,
            max_searches_per_client: self.max_searches_per_client,
            job_ttl: Duration::from_secs(self.job_ttl_secs),
            checkpoint_every: Duration::from_secs(self.checkpoint_secs),
            max_workers: self.max_workers,
            max_connections: self.max_connections,
            handshake_timeout: Duration::from_secs(self.handshake_secs),
            header_read_timeout: Duration::from_secs(self.header_read_secs),
            max_slots_per_worker: self.max_slots_per_worker,
            quarantine_for: Duration::from_secs(self.quarantine_secs),
            scheduler: SchedulerConfig {
                node_budget: self.unit_budget,
                hand_back_after: self.hand_back_after,
                audit_fraction: self.audit_fraction,
                probation: self.probation,
                // Which reports are audited must not be predictable by a worker.
                audit_seed: unpredictable_seed(),
                lease_timeout: Duration::from_secs(self.lease_secs),
                preempt_slice: (self.preempt_slice_ms > 0)
                    .then(|| Duration::from_millis(self.preempt_slice_ms)),
                ..SchedulerConfig::from(self.scheduler)
            },
            // --audit-fraction is this binary's share wherever it listens, 0 included.
            remote_audit_fraction: self.audit_fraction,
            drain: Duration::from_secs(self.drain_secs),
            auth,
            ..Config::default()
        })
    }
}

/// A seed no worker can predict, from the operating system's random source (ring's
/// `SystemRandom`, as TLS uses); the clock and the process id only where that source fails.
fn unpredictable_seed() -> u64 {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 8];
    match ring::rand::SystemRandom::new().fill(&mut bytes) {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => {
            tracing::warn!("no system random source: the audit seed comes from the clock");
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
                ^ u64::from(std::process::id())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The default clap gives `--id`, from the flags' `Command`.
    fn default_of(id: &str) -> String {
        let command = Args::command();
        let arg = command
            .get_arguments()
            .find(|a| a.get_id() == id)
            .unwrap_or_else(|| panic!("no flag {id}"));
        let values = arg.get_default_values();
        assert_eq!(values.len(), 1, "--{id} has one default");
        values[0].to_string_lossy().into_owned()
    }

    #[test]
    fn every_flag_names_its_environment_variable() {
        let command = Args::command();
        let missing = npuzzle_cluster::testing::flags::options_without_env(&command);
        assert!(missing.is_empty(), "{missing:#?}");
        for flag in ["metrics-listen", "log-format", "drain-secs"] {
            assert!(
                command.get_arguments().any(|a| a.get_long() == Some(flag)),
                "--{flag}"
            );
        }
    }

    #[test]
    fn every_flag_default_is_the_library_default() {
        let config = Config::default();
        let scheduler = &config.scheduler;
        let secs = |d: Duration| d.as_secs().to_string();
        let expected = [
            ("listen", npuzzle_coordinator::DEFAULT_LISTEN.to_string()),
            ("cache_capacity", config.cache_capacity.to_string()),
            ("units_per_slot", config.units_per_slot.to_string()),
            ("probe_nodes", config.probe_nodes.to_string()),
            ("incumbent_nodes", config.incumbent_nodes.to_string()),
            ("max_searches", config.max_searches.to_string()),
            (
                "max_searches_per_client",
                config.max_searches_per_client.to_string(),
            ),
            ("job_ttl_secs", secs(config.job_ttl)),
            ("checkpoint_secs", secs(config.checkpoint_every)),
            ("max_connections", config.max_connections.to_string()),
            ("handshake_secs", secs(config.handshake_timeout)),
            ("header_read_secs", secs(config.header_read_timeout)),
            // The binary audits wherever it listens: the share a coordinator that accepts other
            // hosts uses by default.
            ("audit_fraction", config.remote_audit_fraction.to_string()),
            ("probation", scheduler.probation.to_string()),
            ("max_workers", config.max_workers.to_string()),
            (
                "max_slots_per_worker",
                config.max_slots_per_worker.to_string(),
            ),
            ("quarantine_secs", secs(config.quarantine_for)),
            ("unit_budget", scheduler.node_budget.to_string()),
            ("hand_back_after", scheduler.hand_back_after.to_string()),
            (
                "cut_hand_back_after",
                scheduler.cut_hand_back_after.to_string(),
            ),
            ("prefetch", scheduler.prefetch.to_string()),
            ("async_bounds", scheduler.async_bounds.to_string()),
            ("bounds_ahead", scheduler.bounds_ahead.to_string()),
            (
                "cluster_time_per_task_us",
                scheduler.cluster_time_per_task.as_micros().to_string(),
            ),
            ("task_cost_nodes", scheduler.task_cost_nodes.to_string()),
            (
                "preempt_slice_ms",
                scheduler
                    .preempt_slice
                    .map_or(0, |d| d.as_millis())
                    .to_string(),
            ),
            ("lease_secs", secs(scheduler.lease_timeout)),
            ("drain_secs", secs(config.drain)),
        ];
        for (id, value) in expected {
            assert_eq!(default_of(id), value, "--{id}");
        }
        assert_eq!(
            config.remote_audit_fraction,
            SchedulerConfig::DEFAULT_AUDIT_FRACTION
        );
    }

    #[test]
    fn the_flags_defaults_make_a_valid_config() {
        // From the defaults alone (the environment is not read: clap's own `Command` with no
        // `env`), every setting but the seed as the library's.
        let command = Args::command().mut_args(|a| a.env(None::<&str>));
        let matches = command
            .try_get_matches_from(["npuzzle-coordinator"])
            .unwrap();
        let args = <Args as clap::FromArgMatches>::from_arg_matches(&matches).unwrap();
        let config = args.config().unwrap();
        config.validate().unwrap();
        let library = Config::default();
        assert_eq!(config.units_per_slot, library.units_per_slot);
        assert_eq!(config.max_searches, library.max_searches);
        assert_eq!(config.handshake_timeout, library.handshake_timeout);
        assert_eq!(
            config.scheduler.lease_timeout,
            library.scheduler.lease_timeout
        );
        assert_eq!(
            config.scheduler.audit_fraction,
            SchedulerConfig::DEFAULT_AUDIT_FRACTION
        );
    }
}
