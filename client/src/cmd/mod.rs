//! The subcommands of `npuzzle`, one module each (its flags, as a `clap::Args` struct, and
//! the function that runs it), and what several of them share: the board options, the
//! patience options, the engine choice (serial, a coordinator, or the embedded cluster) and
//! the exit codes.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use npuzzle_client::engine::{HeuristicChoice, Settings};
use npuzzle_client::remote;
use npuzzle_cluster::{ConnectError, Coordinator, LocalCluster, Options};
use npuzzle_proto::security::{ClientSecurity, TlsArgs, TokenArgs};
use npuzzle_solver::{GoalSpec, Shape, Weight};

pub(crate) mod batch;
pub(crate) mod bench;
pub(crate) mod cluster;
pub(crate) mod jobs;
pub(crate) mod load;
pub(crate) mod ops;
pub(crate) mod pdb;
pub(crate) mod simulate;
pub(crate) mod solve;
pub(crate) mod tools;

/// What an environment variable may say for a yes/no flag: true/false, yes/no, on/off, 1/0.
pub(crate) fn boolish() -> clap::builder::BoolishValueParser {
    clap::builder::BoolishValueParser::new()
}

/// Default coordinator of `stats` and `health`.
pub(crate) const LOCAL_COORDINATOR: &str = "http://127.0.0.1:50051";

/// Options shared by every command that solves boards.
#[derive(Args, Clone)]
pub(crate) struct BoardOptions {
    /// Board size as WxH (e.g. 3x2); 4, 9, 16 and 25 tiles infer a square.
    #[arg(long, env = "NPUZZLE_SIZE", value_name = "WxH")]
    pub(crate) size: Option<Shape>,
    /// Goal: blank-last (1 2 … 0), blank-first (0 1 2 …, Korf's), or the goal's tiles.
    #[arg(
        long,
        env = "NPUZZLE_GOAL",
        default_value = "blank-last",
        value_name = "GOAL"
    )]
    pub(crate) goal: GoalSpec,
    /// Heuristic: auto (the strongest available for the board), md (Manhattan), lc (Manhattan
    /// and linear conflict), exact (a table of every state; up to 9 cells) or pdb (pattern
    /// databases, built with `npuzzle pdb build`).
    #[arg(
        long,
        env = "NPUZZLE_HEURISTIC",
        default_value = "auto",
        value_name = "auto|md|lc|exact|pdb"
    )]
    pub(crate) heuristic: HeuristicChoice,
    /// Bounded-suboptimal: any path at most W times the optimal length will do (e.g. 1.2;
    /// 1, the default: optimal). Answers say whether a path is proven optimal (`optimal`) and
    /// what no path is shorter than (`lower_bound`).
    #[arg(long, env = "NPUZZLE_WITHIN", default_value = "1", value_name = "W")]
    pub(crate) within: Weight,
    /// Directory of pattern databases.
    #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
    pub(crate) pdb_dir: Option<PathBuf>,
    /// Search in this process, without gRPC (the baseline engine); not with --coordinator.
    #[arg(long, env = "NPUZZLE_SERIAL", value_parser = boolish())]
    pub(crate) serial: bool,
    /// Solve through this coordinator (e.g. http://10.0.0.1:50051). Without it (and without
    /// --serial), npuzzle starts an embedded cluster: a coordinator and a worker using every
    /// core, in this process, on loopback.
    #[arg(long, env = "NPUZZLE_COORDINATOR", value_name = "URL")]
    pub(crate) coordinator: Option<String>,
    #[command(flatten)]
    pub(crate) token: TokenArgs,
    #[command(flatten)]
    pub(crate) tls: TlsArgs,
}

/// How long boards may take through a coordinator, and how long a busy or unreachable one is
/// waited for.
#[derive(Args)]
pub(crate) struct PatienceOptions {
    /// Each board's deadline, in seconds: past it the board is `failed` (reason `deadline`),
    /// with the lower bound proven so far. Not with --serial.
    #[arg(long, env = "NPUZZLE_TIMEOUT", value_name = "SECS")]
    pub(crate) timeout: Option<f64>,
    /// A coordinator at its limit of searches, unreachable or restarting is asked again, with
    /// backoff, for this many seconds; then the board is `failed`.
    #[arg(
        long,
        env = "NPUZZLE_RETRY_FOR",
        value_name = "SECS",
        default_value_t = 300.0
    )]
    pub(crate) retry_for: f64,
}

impl PatienceOptions {
    fn patience(&self, serial: bool) -> anyhow::Result<remote::Patience> {
        let seconds = |what: &str, s: f64| {
            std::time::Duration::try_from_secs_f64(s)
                .map_err(|_| anyhow::anyhow!("{what} {s}: expected seconds, 0 or more"))
        };
        if serial && self.timeout.is_some() {
            anyhow::bail!("--timeout needs a coordinator (or the embedded cluster), not --serial");
        }
        Ok(remote::Patience {
            retry_for: seconds("--retry-for", self.retry_for)?,
            timeout: self.timeout.map(|t| seconds("--timeout", t)).transpose()?,
        })
    }
}

pub(crate) fn settings(o: &BoardOptions) -> Settings {
    Settings {
        shape: o.size,
        goal: o.goal.clone(),
        heuristic: o.heuristic,
        pdb_dir: o.pdb_dir.clone(),
        within: o.within,
    }
}

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Where a run's requests go: the coordinator named by `--coordinator`, or a local cluster
/// started for the run (running until this is dropped).
pub(crate) struct Target {
    pub(crate) url: String,
    pub(crate) security: ClientSecurity,
    _local: Option<LocalCluster>,
}

impl Target {
    /// The coordinator `named` (reached with `token` and `tls`), or, when none is named, a
    /// local cluster started with `local()` (reached with no token: it has none). The one
    /// place the command line chooses between them.
    pub(crate) async fn named_or_local(
        named: Option<&str>,
        token: &TokenArgs,
        tls: &TlsArgs,
        local: impl FnOnce() -> Options,
    ) -> anyhow::Result<Target> {
        Ok(match named {
            Some(url) => Target {
                url: url.to_string(),
                security: ClientSecurity::from_args(token, tls)?,
                _local: None,
            },
            None => {
                let cluster = LocalCluster::start(local()).await?;
                Target {
                    url: cluster.url().to_string(),
                    security: ClientSecurity::default(),
                    _local: Some(cluster),
                }
            }
        })
    }

    /// A client of the coordinator.
    pub(crate) async fn connect(&self) -> anyhow::Result<Coordinator> {
        npuzzle_cluster::connect(&self.url, &self.security)
            .await
            .map_err(|e| cannot_reach(&self.url, &e))
    }
}

/// Runs `work` against the coordinator `options` names (with its token and TLS settings), or
/// against an embedded cluster (whose worker serves the pattern databases of
/// `settings.pdb_dir`).
pub(crate) fn with_coordinator<T>(
    options: &BoardOptions,
    settings: &Settings,
    shapes: Option<BTreeSet<Shape>>,
    work: impl AsyncFnOnce(Coordinator) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    runtime()?.block_on(async {
        let target = Target::named_or_local(
            options.coordinator.as_deref(),
            &options.token,
            &options.tls,
            || remote::embedded(npuzzle_cluster::cores(), settings, shapes),
        )
        .await?;
        work(target.connect().await?).await
    })
}

/// The error of a failed connection, its causes on one line, each once (TLS failures included:
/// `invalid peer certificate: UnknownIssuer`).
pub(crate) fn cannot_reach(url: &str, error: &ConnectError) -> anyhow::Error {
    anyhow::anyhow!(
        "cannot reach the coordinator at {url}: {}",
        npuzzle_client::ops::describe(error)
    )
}

/// `--serial` and `--coordinator` exclude each other. (Checked here rather than by clap, which
/// would also count `NPUZZLE_SERIAL=false` as `--serial`.)
pub(crate) fn check_engine(o: &BoardOptions) -> anyhow::Result<()> {
    if o.serial && o.coordinator.is_some() {
        anyhow::bail!(
            "--serial (NPUZZLE_SERIAL) and --coordinator (NPUZZLE_COORDINATOR) exclude each other"
        );
    }
    Ok(())
}

/// 0: every board answered (solved or unsolvable); 1: some input was invalid; 3: some board
/// failed (a deadline, a coordinator busy or unreachable for too long): worth running again
/// (`batch --resume` retries only those). Errors that stop the run are 2.
pub(crate) fn exit_code(invalid: bool, failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(3)
    } else if invalid {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `1-15` or `2,5,9` (or a mix) as a predicate on ids.
pub(crate) fn id_filter(spec: &str) -> anyhow::Result<Vec<(usize, usize)>> {
    spec.split(',')
        .map(|part| {
            let part = part.trim();
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let parse = |s: &str| {
                s.trim()
                    .parse::<usize>()
                    .with_context(|| format!("bad id range {part:?} (use e.g. 1-15 or 2,5,9)"))
            };
            Ok((parse(a)?, parse(b)?))
        })
        .collect()
}

pub(crate) fn load_instances(
    file: &std::path::Path,
    size: Option<Shape>,
    ids: Option<&str>,
) -> anyhow::Result<Vec<npuzzle_client::bench::Instance>> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut instances =
        npuzzle_client::bench::parse_instances(&text, size).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(spec) = ids {
        let ranges = id_filter(spec)?;
        instances.retain(|i| ranges.iter().any(|&(a, b)| (a..=b).contains(&i.id)));
    }
    Ok(instances)
}
