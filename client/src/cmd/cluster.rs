//! `npuzzle cluster` (a whole cluster in this process, until Ctrl-C) and `npuzzle
//! cluster-bench` (distribution's costs and gains, through a coordinator).

use std::io::{self};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use npuzzle_client::local::{self, LocalCluster};
use npuzzle_client::remote;
use npuzzle_proto::security::{ClientSecurity, TlsArgs, TokenArgs};
use npuzzle_solver::{GoalSpec, HeuristicKind, Shape};

use super::{boolish, cannot_reach, load_instances, runtime};

#[derive(Args)]
pub(crate) struct ClusterArgs {
    /// Address for clients and external workers.
    #[arg(long, env = "NPUZZLE_LISTEN", default_value = "127.0.0.1:50051")]
    listen: String,
    /// In-process workers.
    #[arg(long, env = "NPUZZLE_WORKERS", default_value_t = 1)]
    workers: usize,
    /// Search threads per worker (default: the cores shared among the workers).
    #[arg(long, env = "NPUZZLE_THREADS")]
    threads: Option<usize>,
    /// Directory of pattern databases the workers load and serve (default: $NPUZZLE_PDB_DIR,
    /// else the user cache).
    #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
    pdb_dir: Option<PathBuf>,
    /// Also serve the web console and JSON API at http://ADDR/ (e.g. 127.0.0.1:8080). Off by
    /// default.
    #[arg(long, env = "NPUZZLE_HTTP_LISTEN", value_name = "ADDR")]
    http_listen: Option<String>,
}

#[derive(Args)]
pub(crate) struct ClusterBenchArgs {
    /// Instances, as for `bench`.
    file: PathBuf,
    /// Goal: blank-last, blank-first (Korf's files use it), or the goal's tiles.
    #[arg(long, env = "NPUZZLE_GOAL", default_value = "blank-last")]
    goal: GoalSpec,
    /// The workers' heuristic: md (Manhattan), lc (linear conflict) or pdb (pattern databases,
    /// from --pdb-dir: the embedded workers load them, and so does the serial comparison), the
    /// one the serial comparison runs too.
    #[arg(long, env = "NPUZZLE_BENCH_HEURISTIC", default_value = "lc")]
    heuristic: HeuristicKind,
    /// Directory of pattern databases, for --heuristic pdb (default: $NPUZZLE_PDB_DIR, else the
    /// user cache).
    #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
    pdb_dir: Option<PathBuf>,
    /// Board size as WxH, if not inferred.
    #[arg(long, env = "NPUZZLE_SIZE", value_name = "WxH")]
    size: Option<Shape>,
    /// Only these ids: e.g. `1-15` or `2,5,9`.
    #[arg(long, env = "NPUZZLE_BENCH_IDS")]
    ids: Option<String>,
    /// A running coordinator; without it, an embedded cluster is started.
    #[arg(long, env = "NPUZZLE_COORDINATOR", value_name = "URL")]
    coordinator: Option<String>,
    /// Embedded cluster: in-process workers.
    #[arg(long, env = "NPUZZLE_WORKERS", default_value_t = 1)]
    workers: usize,
    /// Embedded cluster: search threads per worker (default: the cores shared among them).
    #[arg(long, env = "NPUZZLE_THREADS")]
    threads: Option<usize>,
    /// Also search each instance serially, for the overhead and speed-up ratios.
    #[arg(long, env = "NPUZZLE_BENCH_COMPARE_SERIAL", value_parser = boolish())]
    compare_serial: bool,
    /// 8-puzzle and cache-hit round trips to time.
    #[arg(long, env = "NPUZZLE_BENCH_LATENCY_SAMPLES", default_value_t = 1000)]
    latency_samples: usize,
    #[command(flatten)]
    token: TokenArgs,
    #[command(flatten)]
    tls: TlsArgs,
}

pub(crate) fn cluster(args: ClusterArgs) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let address = listener.local_addr()?;
        let workers = args.workers.max(1);
        let threads = args.threads.unwrap_or(local::cores() / workers).max(1);
        let mut options = local::Options {
            workers,
            threads: Some(threads),
            pdb_dir: args.pdb_dir.clone(),
            ..local::Options::default()
        };
        if let Some(http) = &args.http_listen {
            let bound = npuzzle_coordinator::HttpListener::bind(http)
                .with_context(|| format!("cannot serve the web console on {http}"))?;
            options.coordinator.http = Some(bound);
        }
        let console = options.coordinator.http.as_ref().map(|h| h.local_addr());
        let mut cluster = LocalCluster::start_on(listener, options).await?;
        eprintln!(
            "npuzzle cluster on {address}: {workers} worker(s) × {threads} thread(s); Ctrl-C stops it"
        );
        if let Some(console) = console {
            eprintln!("web console: http://{console}/ (JSON API under http://{console}/api/v1/)");
        }
        tokio::select! {
            stopped = tokio::signal::ctrl_c() => stopped?,
            failed = cluster.watch() => return Err(failed.into()),
        }
        cluster.shutdown().await?;
        Ok(ExitCode::SUCCESS)
    })
}

pub(crate) fn cluster_bench(args: ClusterBenchArgs) -> anyhow::Result<ExitCode> {
    let instances = load_instances(&args.file, args.size, args.ids.as_deref())?;
    let Some(first) = instances.first() else {
        anyhow::bail!("no instances selected");
    };
    let goal = args.goal.resolve(first.board.shape())?;
    let pdb = args.heuristic == HeuristicKind::Pdb;
    let serial = if args.compare_serial {
        let solver = if pdb {
            let tables =
                npuzzle_client::engine::pattern_databases(args.pdb_dir.as_deref(), goal.shape())?;
            npuzzle_solver::Solver::with_pdb(goal, tables)?
        } else {
            npuzzle_solver::Solver::new(goal, args.heuristic)?
        };
        Some(solver)
    } else {
        None
    };
    let plan = npuzzle_client::cluster_bench::BenchPlan {
        instances,
        goal,
        heuristic: args.heuristic,
        serial,
        latency_samples: args.latency_samples,
    };
    runtime()?.block_on(async {
        let (_cluster, url, security) = match &args.coordinator {
            Some(url) => (
                None,
                url.clone(),
                ClientSecurity::from_args(&args.token, &args.tls)?,
            ),
            None => {
                let cluster = LocalCluster::start(local::Options {
                    workers: args.workers.max(1),
                    threads: args.threads,
                    name: "bench".into(),
                    load_pdbs: pdb,
                    pdb_dir: args.pdb_dir.clone(),
                    ..local::Options::default()
                })
                .await?;
                let url = cluster.url().to_string();
                (Some(cluster), url, ClientSecurity::default())
            }
        };
        let mut client = remote::connect(&url, &security)
            .await
            .map_err(|e| cannot_reach(&url, &e))?;
        let ok = npuzzle_client::cluster_bench::run(&mut client, &url, &plan, io::stdout().lock())
            .await?;
        Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    })
}
