//! `npuzzle bench`: nodes, time and node rate per instance for each heuristic.

use std::io::{self};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use npuzzle_solver::{GoalSpec, HeuristicKind, Shape};

use super::load_instances;

#[derive(Args)]
pub(crate) struct BenchArgs {
    /// Instances: one board per line, or `id optimal_length tiles…` lines (Korf's files).
    file: PathBuf,
    /// Goal: blank-last, blank-first (Korf's files use it), or the goal's tiles.
    #[arg(long, env = "NPUZZLE_GOAL", default_value = "blank-last")]
    goal: GoalSpec,
    /// Heuristics to run, comma-separated (md, lc, exact, pdb).
    #[arg(
        long,
        env = "NPUZZLE_BENCH_HEURISTICS",
        default_value = "md,lc",
        value_delimiter = ','
    )]
    heuristic: Vec<HeuristicKind>,
    /// Directory of pattern databases (for pdb).
    #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
    pdb_dir: Option<PathBuf>,
    /// Board size as WxH, if not inferred.
    #[arg(long, env = "NPUZZLE_SIZE", value_name = "WxH")]
    size: Option<Shape>,
    /// Only these ids: e.g. `1-15` or `2,5,9`.
    #[arg(long, env = "NPUZZLE_BENCH_IDS")]
    ids: Option<String>,
    /// Stop each instance after this many seconds (reported, not counted as wrong).
    #[arg(long, env = "NPUZZLE_BENCH_TIME_LIMIT", value_name = "SECS")]
    time_limit: Option<f64>,
    /// Under each instance, a line per IDA* iteration: its bound, its nodes, and what the
    /// cluster's forecast (growth measured on the earlier bounds) predicted for it.
    #[arg(long, env = "NPUZZLE_BENCH_ITERATIONS")]
    iterations: bool,
}

pub(crate) fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let instances = load_instances(&args.file, args.size, args.ids.as_deref())?;
    let totals = npuzzle_client::bench::run(
        &instances,
        &args.goal,
        &args.heuristic,
        args.pdb_dir.as_deref(),
        args.time_limit.map(std::time::Duration::from_secs_f64),
        args.iterations,
        io::stdout().lock(),
    )?;
    Ok(if totals.iter().any(|(_, t)| t.wrong > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
