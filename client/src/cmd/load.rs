//! `npuzzle load`: the load test ([`npuzzle_client::load`]) against a coordinator or an
//! embedded cluster.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Args;
use npuzzle_cluster::Options;
use npuzzle_proto::security::{TlsArgs, TokenArgs};
use npuzzle_solver::Shape;

use super::{Target, boolish, runtime};

#[derive(Args)]
pub(crate) struct LoadArgs {
    /// A running coordinator; without it, an embedded cluster (a coordinator and --workers
    /// workers, in this process, on loopback) is started.
    #[arg(long, env = "NPUZZLE_COORDINATOR", value_name = "URL")]
    coordinator: Option<String>,
    #[command(flatten)]
    token: TokenArgs,
    #[command(flatten)]
    tls: TlsArgs,
    /// Embedded cluster: in-process workers (they load no pattern databases).
    #[arg(long, env = "NPUZZLE_WORKERS", default_value_t = Options::default().workers)]
    workers: usize,
    /// Embedded cluster: search threads per worker (default: the cores shared among them).
    #[arg(long, env = "NPUZZLE_THREADS")]
    threads: Option<usize>,
    /// Embedded cluster: the coordinator's limit on requests needing a search (past it,
    /// RESOURCE_EXHAUSTED with a retry-after-ms hint, which the clients wait out and retry).
    #[arg(long, env = "NPUZZLE_MAX_SEARCHES", value_name = "N")]
    max_searches: Option<usize>,
    /// Concurrent clients, each sending its next request when it has its answer.
    #[arg(long, env = "NPUZZLE_LOAD_CLIENTS", default_value_t = 64)]
    clients: usize,
    /// gRPC connections the clients share (0: one per client).
    #[arg(long, env = "NPUZZLE_LOAD_CONNECTIONS", default_value_t = 0)]
    connections: usize,
    /// Requests in the measured run (after the warm-up).
    #[arg(long, env = "NPUZZLE_LOAD_REQUESTS", default_value_t = 2000)]
    requests: usize,
    /// Start no request after this many seconds (the rest is reported as not sent).
    #[arg(
        long,
        env = "NPUZZLE_LOAD_DURATION",
        default_value_t = 60.0,
        value_name = "SECS"
    )]
    duration: f64,
    /// Distinct boards sent once before the measured run; the `cached` kind repeats them.
    #[arg(long, env = "NPUZZLE_LOAD_WARM", default_value_t = 200)]
    warm: usize,
    /// Kinds of request and their weights: cached (warm-up boards again), new (boards not sent
    /// before), invalid (malformed requests), unsolvable (two tiles swapped).
    #[arg(long, env = "NPUZZLE_LOAD_MIX", default_value = npuzzle_client::load::DEFAULT_MIX)]
    mix: npuzzle_client::load::Mix,
    /// The random seed of the workload.
    #[arg(long, env = "NPUZZLE_LOAD_SEED", default_value_t = 1)]
    seed: u64,
    /// Board size as WxH; above 9 cells, --walk is needed (each optimum is checked here).
    #[arg(long, env = "NPUZZLE_SIZE", default_value = "3x3", value_name = "WxH")]
    size: Shape,
    /// Boards are random walks of K moves from the goal instead of uniformly random.
    #[arg(long, env = "NPUZZLE_LOAD_WALK", value_name = "K")]
    walk: Option<usize>,
    /// A request with no answer this long after its first try (retries included) is lost.
    #[arg(long, env = "NPUZZLE_LOAD_TIMEOUT_MS", default_value_t = 30_000)]
    timeout_ms: u64,
    /// The longest wait before a retry after RESOURCE_EXHAUSTED, whatever the hint says.
    #[arg(long, env = "NPUZZLE_LOAD_MAX_RETRY_WAIT_MS", default_value_t = 1000)]
    max_retry_wait_ms: u64,
    /// Print one JSON object instead of text.
    #[arg(long, env = "NPUZZLE_JSON", value_parser = boolish())]
    json: bool,
}

pub(crate) fn load(args: LoadArgs) -> anyhow::Result<ExitCode> {
    use npuzzle_client::load::{self, LoadPlan};
    if args.coordinator.is_some() && args.max_searches.is_some() {
        anyhow::bail!(
            "--max-searches (NPUZZLE_MAX_SEARCHES) configures the embedded coordinator; with --coordinator, set it on that coordinator"
        );
    }
    if !(args.duration > 0.0 && args.duration.is_finite()) {
        anyhow::bail!("--duration must be a positive number of seconds");
    }
    let plan = LoadPlan {
        shape: args.size,
        walk: args.walk,
        requests: args.requests,
        clients: args.clients.max(1),
        connections: args.connections,
        warm: args.warm,
        mix: args.mix,
        seed: args.seed,
        duration: std::time::Duration::from_secs_f64(args.duration),
        timeout: std::time::Duration::from_millis(args.timeout_ms.max(1)),
        max_retry_wait: std::time::Duration::from_millis(args.max_retry_wait_ms),
    };
    plan.check()?;
    runtime()?.block_on(async {
        let target =
            Target::named_or_local(args.coordinator.as_deref(), &args.token, &args.tls, || {
                let mut coordinator = npuzzle_coordinator::Config::default();
                if let Some(n) = args.max_searches {
                    coordinator.max_searches = n;
                }
                // No pattern databases: the load test wants the same cluster on every machine.
                Options {
                    coordinator,
                    workers: args.workers.max(1),
                    threads: args.threads,
                    name: "load".into(),
                    load_pdbs: false,
                    ..Options::default()
                }
            })
            .await?;
        let report = load::run(&target.url, &target.security, &plan).await?;
        let mut out = io::stdout().lock();
        if args.json {
            serde_json::to_writer(&mut out, &report)?;
            writeln!(out)?;
        } else {
            write!(out, "{report}")?;
        }
        Ok(if report.passed {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    })
}
