//! `npuzzle submit`, `jobs`, `wait` and `cancel`: detached jobs on a coordinator. `submit`
//! prints the job's id and exits; the search goes on at the coordinator; any process with the
//! client token follows it (`wait`, with a progress bar on a terminal), lists it (`jobs`) or
//! cancels it (`cancel`).

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use npuzzle_client::engine::{HeuristicChoice, Settings};
use npuzzle_client::input::Format;
use npuzzle_client::{jobs, sink};
use npuzzle_proto::answer::Status;
use npuzzle_proto::security::{ClientSecurity, TlsArgs, TokenArgs};
use npuzzle_proto::v1;
use npuzzle_solver::{GoalSpec, Shape, Weight};

use super::{LOCAL_COORDINATOR, boolish, exit_code, runtime};

/// The coordinator a job command talks to.
#[derive(Args)]
pub(crate) struct JobTarget {
    /// The coordinator's URL (detached jobs need a coordinator that outlives this process).
    #[arg(long, env = "NPUZZLE_COORDINATOR", default_value = LOCAL_COORDINATOR, value_name = "URL")]
    coordinator: String,
    #[command(flatten)]
    token: TokenArgs,
    #[command(flatten)]
    tls: TlsArgs,
}

impl JobTarget {
    async fn connect(&self) -> anyhow::Result<npuzzle_cluster::Coordinator> {
        let security = ClientSecurity::from_args(&self.token, &self.tls)?;
        npuzzle_cluster::connect(&self.coordinator, &security)
            .await
            .with_context(|| format!("cannot reach the coordinator at {}", self.coordinator))
    }
}

#[derive(Args)]
pub(crate) struct SubmitArgs {
    /// The board, row-major: tiles separated by spaces or commas; 0, x, X or _ is the blank.
    board: String,
    /// Board size as WxH (e.g. 3x2); 4, 9, 16 and 25 tiles infer a square.
    #[arg(long, env = "NPUZZLE_SIZE", value_name = "WxH")]
    size: Option<Shape>,
    /// Goal: blank-last (1 2 … 0), blank-first (0 1 2 …, Korf's), or the goal's tiles.
    #[arg(
        long,
        env = "NPUZZLE_GOAL",
        default_value = "blank-last",
        value_name = "GOAL"
    )]
    goal: GoalSpec,
    /// Heuristic: auto (the coordinator's choice: the strongest its workers serve), md, lc,
    /// exact or pdb.
    #[arg(
        long,
        env = "NPUZZLE_HEURISTIC",
        default_value = "auto",
        value_name = "auto|md|lc|exact|pdb"
    )]
    heuristic: HeuristicChoice,
    /// Bounded-suboptimal: any path at most W times the optimal length will do (e.g. 1.2;
    /// 1, the default: optimal). Answers say whether a path is proven optimal (`optimal`) and
    /// what no path is shorter than (`lower_bound`).
    #[arg(long, env = "NPUZZLE_WITHIN", default_value = "1", value_name = "W")]
    within: Weight,
    #[command(flatten)]
    target: JobTarget,
}

#[derive(Args)]
pub(crate) struct JobsArgs {
    /// One JSON object per job (the coordinator's JobStatus) instead of the table.
    #[arg(long, env = "NPUZZLE_JSON", value_parser = boolish())]
    json: bool,
    #[command(flatten)]
    target: JobTarget,
}

#[derive(Args)]
pub(crate) struct WaitArgs {
    /// The job's id, as `npuzzle submit` printed it.
    id: String,
    /// Print one JSON object (what `npuzzle solve --json` prints, and `resumed`: how many
    /// times the job was resumed from a checkpoint) instead of the moves.
    #[arg(long, env = "NPUZZLE_JSON", value_parser = boolish())]
    json: bool,
    /// While the coordinator cannot be reached (restarting), keep trying for this many seconds.
    #[arg(
        long,
        env = "NPUZZLE_RETRY_FOR",
        value_name = "SECS",
        default_value_t = 300.0
    )]
    retry_for: f64,
    #[command(flatten)]
    target: JobTarget,
}

#[derive(Args)]
pub(crate) struct CancelArgs {
    /// The job's id.
    id: String,
    #[command(flatten)]
    target: JobTarget,
}

pub(crate) fn submit(args: SubmitArgs) -> anyhow::Result<ExitCode> {
    let settings = Settings {
        shape: args.size,
        goal: args.goal,
        heuristic: args.heuristic,
        pdb_dir: None,
        within: args.within,
    };
    let status = runtime()?.block_on(async {
        let mut client = args.target.connect().await?;
        anyhow::Ok(jobs::submit(&mut client, &args.board, None, &settings).await?)
    })?;
    writeln!(io::stdout().lock(), "{}", status.id)?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn list(args: JobsArgs) -> anyhow::Result<ExitCode> {
    let listed = runtime()?.block_on(async {
        let mut client = args.target.connect().await?;
        anyhow::Ok(jobs::list(&mut client).await?)
    })?;
    let mut out = io::stdout().lock();
    if args.json {
        for status in &listed {
            serde_json::to_writer(&mut out, &job_json(status))?;
            writeln!(out)?;
        }
    } else {
        writeln!(out, "{}", jobs::TABLE_HEADING)?;
        for status in &listed {
            writeln!(out, "{}", jobs::table_line(status))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn wait(args: WaitArgs) -> anyhow::Result<ExitCode> {
    let bar = io::stderr().is_terminal().then(super::solve::bound_bar);
    let retry_for = Duration::try_from_secs_f64(args.retry_for).map_err(|_| {
        anyhow::anyhow!(
            "--retry-for {}: expected seconds, 0 or more",
            args.retry_for
        )
    })?;
    let last = runtime()?.block_on(async {
        let mut client = args.target.connect().await?;
        anyhow::Ok(
            jobs::wait(&mut client, &args.id, retry_for, |status| {
                if let (Some(bar), Some(p)) = (&bar, &status.progress) {
                    super::solve::show_bound(bar, p);
                }
            })
            .await?,
        )
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let answer = jobs::answer(&last);
    let mut out = io::stdout().lock();
    if args.json {
        let waited = Waited {
            answer: &answer,
            resumed: last.resumed,
        };
        serde_json::to_writer(&mut out, &waited)?;
        writeln!(out)?;
    } else {
        match answer.status {
            Status::Solved => writeln!(out, "{}", answer.moves.as_deref().unwrap_or(""))?,
            Status::Unsolvable => writeln!(out, "unsolvable")?,
            Status::Invalid | Status::Failed => {
                eprintln!("{}", sink::text_line(&answer, Format::Lines));
            }
        }
    }
    Ok(exit_code(
        answer.status == Status::Invalid,
        answer.status == Status::Failed,
    ))
}

pub(crate) fn cancel(args: CancelArgs) -> anyhow::Result<ExitCode> {
    let status = runtime()?.block_on(async {
        let mut client = args.target.connect().await?;
        anyhow::Ok(jobs::cancel(&mut client, &args.id).await?)
    })?;
    writeln!(
        io::stdout().lock(),
        "{} {}",
        status.id,
        jobs::state_name(&status)
    )?;
    Ok(ExitCode::SUCCESS)
}

/// What `wait --json` prints: the answer as `solve --json` prints it, then `resumed`.
#[derive(serde::Serialize)]
struct Waited<'a> {
    #[serde(flatten)]
    answer: &'a npuzzle_proto::answer::Answer,
    /// Times the job was resumed from a checkpoint after a coordinator restart.
    resumed: u32,
}

/// A job as `npuzzle jobs --json` prints it.
fn job_json(status: &v1::JobStatus) -> serde_json::Value {
    let p = status.progress.as_ref();
    serde_json::json!({
        "id": status.id,
        "state": jobs::state_name(status),
        "board": status.board.as_ref().map(|b| &b.tiles),
        "bound": p.map(|p| p.bound),
        "nodes": p.map(|p| p.nodes),
        "predicted_nodes": p.map(|p| p.predicted_nodes).filter(|&n| n > 0),
        "fraction": p.filter(|p| p.predicted_nodes > 0).map(|p| p.fraction),
        "eta_secs": p.and_then(|p| p.eta_seconds),
        "age_secs": status.age_seconds,
        "resumed": status.resumed,
        "error": (!status.error.is_empty()).then_some(&status.error),
    })
}
