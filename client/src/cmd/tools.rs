//! `npuzzle verify` (replay moves) and `npuzzle gen` (random boards).

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Args;
use npuzzle_solver::{GoalSpec, Shape};

#[derive(Args)]
pub(crate) struct VerifyArgs {
    /// The board, as for `solve`.
    board: String,
    /// The moves: letters U, D, L, R (the blank's direction), any case.
    moves: String,
    /// Board size as WxH, if not inferred.
    #[arg(long, env = "NPUZZLE_SIZE", value_name = "WxH")]
    size: Option<Shape>,
    /// Goal: blank-last, blank-first, or the goal's tiles.
    #[arg(
        long,
        env = "NPUZZLE_GOAL",
        default_value = "blank-last",
        value_name = "GOAL"
    )]
    goal: GoalSpec,
}

#[derive(Args)]
pub(crate) struct GenArgs {
    /// Board size as WxH (e.g. 4x4).
    #[arg(long, env = "NPUZZLE_SIZE", value_name = "WxH")]
    size: Shape,
    /// How many boards.
    #[arg(long, env = "NPUZZLE_GEN_COUNT", default_value_t = 10)]
    count: usize,
    /// The random seed: the same seed gives the same boards on every machine.
    #[arg(long, env = "NPUZZLE_GEN_SEED", default_value_t = 1)]
    seed: u64,
    /// Random walks of this many moves from the goal instead of uniformly random boards
    /// (easier boards, optimal length at most the walk's).
    #[arg(long, env = "NPUZZLE_GEN_WALK", value_name = "K")]
    walk: Option<usize>,
    /// Goal: blank-last, blank-first, or the goal's tiles.
    #[arg(
        long,
        env = "NPUZZLE_GOAL",
        default_value = "blank-last",
        value_name = "GOAL"
    )]
    goal: GoalSpec,
}

pub(crate) fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let board = npuzzle_solver::Board::parse(&args.board, args.size)
        .map_err(|e| anyhow::anyhow!("bad board: {e}"))?;
    let goal = args.goal.resolve(board.shape())?;
    let (ok, message) = npuzzle_client::tools::verify(&board, &args.moves, &goal);
    println!("{message}");
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

pub(crate) fn generate(args: GenArgs) -> anyhow::Result<ExitCode> {
    let goal = args.goal.resolve(args.size)?;
    let kind = args.walk.map_or(
        npuzzle_client::tools::Generate::Uniform,
        npuzzle_client::tools::Generate::Walk,
    );
    let mut out = io::BufWriter::new(io::stdout().lock());
    for board in npuzzle_client::tools::generate(&goal, kind, args.count, args.seed) {
        writeln!(out, "{board}")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
