//! `npuzzle trace` (record searches) and `npuzzle simulate` (replay them through the real
//! scheduler with simulated workers).

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use npuzzle_coordinator::SchedulerArgs;
use npuzzle_coordinator::scheduler::SchedulerConfig;
use npuzzle_coordinator::sim::CoordinatorCost;
use npuzzle_solver::{GoalSpec, HeuristicKind, Shape};

use super::{boolish, load_instances};

#[derive(Args)]
pub(crate) struct TraceArgs {
    /// Instances, as for `bench`.
    file: PathBuf,
    /// Goal: blank-last, blank-first (Korf's files use it), or the goal's tiles.
    #[arg(long, env = "NPUZZLE_GOAL", default_value = "blank-last")]
    goal: GoalSpec,
    /// The heuristic to search with (md, lc, exact or pdb).
    #[arg(long, env = "NPUZZLE_TRACE_HEURISTIC", default_value = "pdb")]
    heuristic: HeuristicKind,
    /// Directory of pattern databases (for pdb).
    #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
    pdb_dir: Option<PathBuf>,
    /// Board size as WxH, if not inferred.
    #[arg(long, env = "NPUZZLE_SIZE", value_name = "WxH")]
    size: Option<Shape>,
    /// Only these ids: e.g. `1-15` or `2,5,9`.
    #[arg(long, env = "NPUZZLE_TRACE_IDS")]
    ids: Option<String>,
    /// Depth of the subtrees recorded: the simulated workers' grain.
    #[arg(long, env = "NPUZZLE_TRACE_DEPTH", default_value_t = 10)]
    depth: u32,
    /// Write the traces here (one after another) instead of standard output.
    #[arg(long, env = "NPUZZLE_TRACE_OUT", value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct SimulateArgs {
    /// Trace files written by `npuzzle trace` (each may hold several traces: a batch, run in
    /// order).
    #[arg(required = true)]
    traces: Vec<PathBuf>,
    /// Slot counts to simulate.
    #[arg(
        long,
        env = "NPUZZLE_SIM_SLOTS",
        default_value = "1,2,4,8,16,32,64,128,256,512,1024",
        value_delimiter = ','
    )]
    slots: Vec<usize>,
    /// Search threads per simulated worker.
    #[arg(long, env = "NPUZZLE_SIM_SLOTS_PER_WORKER", default_value_t = 1)]
    slots_per_worker: usize,
    /// One-way latency between the coordinator and a worker or client, in milliseconds.
    #[arg(long, env = "NPUZZLE_SIM_LATENCY_MS", default_value_t = 0.1)]
    latency_ms: f64,
    /// Nodes per second per slot (default: the rate each trace was recorded at).
    #[arg(long, env = "NPUZZLE_SIM_RATE")]
    rate: Option<f64>,
    /// Jobs the simulated client keeps in flight.
    #[arg(long, env = "NPUZZLE_SIM_JOBS_IN_FLIGHT", default_value_t = 1)]
    jobs_in_flight: usize,
    /// What each scheduler event costs the one-threaded coordinator in virtual time:
    /// `calibrated` (a fixed cost per event and per command, fitted on measured runs: the same
    /// figures on any machine), `measured` (the real time each call takes here) or `free` (none,
    /// as before issue 23).
    #[arg(
        long,
        env = "NPUZZLE_SIM_COORDINATOR_COST",
        value_enum,
        default_value_t = CostArg::Calibrated
    )]
    coordinator_cost: CostArg,
    /// The scheduler's tuning flags, as the coordinator's (`--prefetch`, `--async-bounds`,
    /// `--bounds-ahead`, `--cluster-time-per-task-us`, `--task-cost-nodes`,
    /// `--cut-hand-back-after`, read from the same `NPUZZLE_*` variables).
    #[command(flatten)]
    scheduler: SchedulerArgs,
    /// One JSON object per slot count.
    #[arg(long, env = "NPUZZLE_JSON", value_parser = boolish())]
    json: bool,
    /// Under each slot count, a line per job and bound: when its first task started and its
    /// last ended, its tasks, and their slot time (in JSON: a `bounds` list per row). Where a
    /// makespan goes, bound by bound.
    #[arg(long, env = "NPUZZLE_SIM_BOUNDS", value_parser = boolish())]
    bounds: bool,
    /// Under each slot count, its makespan in this many equal parts with the share of slot
    /// time spent searching in each, in percent (in JSON: a `timeline` list of shares): when
    /// the slots idle. 0: none.
    #[arg(long, env = "NPUZZLE_SIM_TIMELINE", default_value_t = 0)]
    timeline: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum CostArg {
    Calibrated,
    Measured,
    Free,
}

impl From<CostArg> for CoordinatorCost {
    fn from(arg: CostArg) -> CoordinatorCost {
        match arg {
            CostArg::Calibrated => CoordinatorCost::CALIBRATED,
            CostArg::Measured => CoordinatorCost::Measured,
            CostArg::Free => CoordinatorCost::Free,
        }
    }
}

pub(crate) fn trace(args: TraceArgs) -> anyhow::Result<ExitCode> {
    let instances = load_instances(&args.file, args.size, args.ids.as_deref())?;
    let Some(first) = instances.first() else {
        anyhow::bail!("no instances selected");
    };
    let shape = first.board.shape();
    let goal = args.goal.resolve(shape)?;
    let (solver, name) = if args.heuristic == HeuristicKind::Pdb {
        let store = npuzzle_solver::store::TableStore::new(args.pdb_dir.clone());
        let (partition, tables) = store.best_shared(shape)?;
        (
            npuzzle_solver::Solver::with_pdb(goal, tables)?,
            format!("pdb {}", partition.name),
        )
    } else {
        (
            npuzzle_solver::Solver::new(goal, args.heuristic)?,
            args.heuristic.to_string(),
        )
    };
    let traces =
        npuzzle_client::simulate::record(&instances, &solver, &name, args.depth, io::stderr())?;
    let text: String = traces.iter().map(|(_, t)| t.to_text()).collect();
    match &args.out {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn simulate(args: SimulateArgs) -> anyhow::Result<ExitCode> {
    let mut traces = Vec::new();
    for path in &args.traces {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        traces.extend(
            npuzzle_solver::Trace::parse_all(&text)
                .with_context(|| format!("cannot read {}", path.display()))?,
        );
    }
    // Each simulated slot costs memory; past this, a typo rather than a cluster.
    const MAX_SLOTS: usize = 1 << 16;
    if let Some(&bad) = args.slots.iter().find(|&&n| n == 0 || n > MAX_SLOTS) {
        anyhow::bail!("--slots: {bad} is not a slot count from 1 to {MAX_SLOTS}");
    }
    // A part per column of a plot is plenty; past this, a typo.
    const MAX_TIMELINE: usize = 10_000;
    if args.timeline > MAX_TIMELINE {
        anyhow::bail!(
            "--timeline: {} is not a count of parts from 0 to {MAX_TIMELINE}",
            args.timeline
        );
    }
    if !(args.latency_ms >= 0.0 && args.latency_ms.is_finite()) {
        anyhow::bail!("--latency-ms must be a number of milliseconds, 0 or more");
    }
    let config = npuzzle_coordinator::sim::SimConfig {
        slots_per_worker: args.slots_per_worker.max(1),
        latency: std::time::Duration::from_secs_f64(args.latency_ms / 1e3),
        rate: args.rate,
        jobs_in_flight: args.jobs_in_flight.max(1),
        coordinator_cost: args.coordinator_cost.into(),
        scheduler: SchedulerConfig::from(args.scheduler),
        ..npuzzle_coordinator::sim::SimConfig::default()
    };
    // The settings a coordinator would refuse (e.g. --bounds-ahead 0) are refused here too.
    config.scheduler.validate()?;
    let rows = npuzzle_client::simulate::table(
        &traces,
        &args.slots,
        &config,
        npuzzle_client::simulate::Output {
            json: args.json,
            bounds: args.bounds,
            timeline: args.timeline,
        },
        io::stdout().lock(),
    )?;
    Ok(if rows.iter().any(|r| r.wrong > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
