//! `npuzzle cluster` (a whole cluster in this process, until Ctrl-C) and `npuzzle
//! cluster-bench` (distribution's costs and gains, through a coordinator).

use std::io::{self};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use npuzzle_cluster::{LocalCluster, Options};
use npuzzle_proto::security::{TlsArgs, TokenArgs};
use npuzzle_solver::{GoalSpec, HeuristicKind, Shape};

use super::{Target, boolish, load_instances, runtime};

#[derive(Args)]
pub(crate) struct ClusterArgs {
    /// Address for clients and external workers (0.0.0.0:50051 to accept other machines; then
    /// their reports are audited, see --audit-fraction).
    #[arg(long, env = "NPUZZLE_LISTEN", default_value = npuzzle_coordinator::DEFAULT_LISTEN)]
    listen: String,
    /// In-process workers.
    #[arg(long, env = "NPUZZLE_WORKERS", default_value_t = Options::default().workers)]
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
    /// The share of worker reports searched again by another worker, from 0 (none) to 1 (all),
    /// as npuzzle-coordinator's --audit-fraction. Default: 0.01 when --listen accepts other
    /// hosts (an address that is not loopback, e.g. 0.0.0.0), else none.
    #[arg(long, env = "NPUZZLE_AUDIT_FRACTION", value_name = "F")]
    audit_fraction: Option<f64>,
}

impl ClusterArgs {
    /// The coordinator's settings: the library's, with the share of reports audited if one was
    /// set (`run` audits by itself when the listener accepts other hosts and none was).
    fn coordinator(&self) -> npuzzle_coordinator::Config {
        let mut config = npuzzle_coordinator::Config::default();
        if let Some(fraction) = self.audit_fraction {
            config.scheduler.audit_fraction = fraction;
            config.remote_audit_fraction = fraction;
        }
        config
    }
}

/// How the start-up line says what is audited: "audit fraction 0.01", or "audits off".
fn audits(fraction: f64) -> String {
    if fraction > 0.0 {
        format!("audit fraction {fraction}")
    } else {
        "audits off".to_string()
    }
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
    #[arg(long, env = "NPUZZLE_WORKERS", default_value_t = Options::default().workers)]
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
        let threads = args
            .threads
            .unwrap_or_else(|| (npuzzle_cluster::cores() / workers).max(1));
        let coordinator = args.coordinator();
        let audited = coordinator.scheduler_for(address).audit_fraction;
        let mut options = Options {
            coordinator,
            workers,
            threads: Some(threads),
            pdb_dir: args.pdb_dir.clone(),
            ..Options::default()
        };
        if let Some(http) = &args.http_listen {
            let bound = npuzzle_coordinator::HttpListener::bind(http)
                .with_context(|| format!("cannot serve the web console on {http}"))?;
            options.coordinator.http = Some(bound);
        }
        let console = options.coordinator.http.as_ref().map(|h| h.local_addr());
        let mut cluster = LocalCluster::start_on(listener, options).await?;
        eprintln!(
            "npuzzle cluster on {address}: {workers} worker(s) × {threads} thread(s), {}; Ctrl-C stops it",
            audits(audited)
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
        let target =
            Target::named_or_local(args.coordinator.as_deref(), &args.token, &args.tls, || {
                Options {
                    workers: args.workers.max(1),
                    threads: args.threads,
                    name: "bench".into(),
                    load_pdbs: pdb,
                    pdb_dir: args.pdb_dir.clone(),
                    ..Options::default()
                }
            })
            .await?;
        let (mut client, url) = (target.connect().await?, &target.url);
        let ok = npuzzle_client::cluster_bench::run(&mut client, url, &plan, io::stdout().lock())
            .await?;
        Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Command, FromArgMatches};

    /// `args`' flags as a command of their own, reading no environment variable.
    fn command<A: Args>(name: &'static str) -> Command {
        A::augment_args(Command::new(name)).mut_args(|a| a.env(None::<&str>))
    }

    /// What `args` (no flag of `A`'s given, only what it requires) parse to: its defaults.
    fn defaults<A: Args>(args: &[&'static str]) -> clap::ArgMatches {
        command::<A>(args[0]).try_get_matches_from(args).unwrap()
    }

    #[test]
    fn flag_defaults_are_the_libraries() {
        let workers = Options::default().workers;
        let cluster = defaults::<ClusterArgs>(&["cluster"]);
        assert_eq!(
            cluster.get_one::<String>("listen").unwrap(),
            npuzzle_coordinator::DEFAULT_LISTEN
        );
        for matches in [
            cluster,
            defaults::<ClusterBenchArgs>(&["cluster-bench", "boards.txt"]),
            defaults::<super::super::load::LoadArgs>(&["load"]),
        ] {
            assert_eq!(matches.get_one::<usize>("workers"), Some(&workers));
        }
        // The URL `stats` and `health` ask by default is the coordinator's default address.
        assert_eq!(
            super::super::LOCAL_COORDINATOR,
            format!("http://{}", npuzzle_coordinator::DEFAULT_LISTEN)
        );
    }

    fn parse(args: &[&str]) -> ClusterArgs {
        let matches = command::<ClusterArgs>("cluster")
            .try_get_matches_from(args)
            .unwrap();
        ClusterArgs::from_arg_matches(&matches).unwrap()
    }

    #[test]
    fn a_cluster_that_accepts_other_hosts_audits_unless_told_not_to() {
        let everywhere: std::net::SocketAddr = "0.0.0.0:50051".parse().unwrap();
        let loopback: std::net::SocketAddr = "127.0.0.1:50051".parse().unwrap();
        let share = |args: &[&str], address| {
            parse(args)
                .coordinator()
                .scheduler_for(address)
                .audit_fraction
        };
        let default = npuzzle_coordinator::SchedulerConfig::DEFAULT_AUDIT_FRACTION;
        assert_eq!(share(&["cluster"], everywhere), default);
        assert_eq!(share(&["cluster"], loopback), 0.0);
        let off = ["cluster", "--audit-fraction", "0"];
        assert_eq!(share(&off, everywhere), 0.0);
        let all = ["cluster", "--audit-fraction", "1"];
        assert_eq!(share(&all, everywhere), 1.0);
        assert_eq!(share(&all, loopback), 1.0);
        assert_eq!(audits(default), "audit fraction 0.01");
        assert_eq!(audits(0.0), "audits off");
    }
}
