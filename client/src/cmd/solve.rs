//! `npuzzle solve`: one board.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::Args;
use npuzzle_client::engine::{Engine, Status};
use npuzzle_client::input::Format;
use npuzzle_client::{remote, sink};

use super::{
    BoardOptions, PatienceOptions, boolish, check_engine, exit_code, settings, with_coordinator,
};

#[derive(Args)]
pub(crate) struct SolveArgs {
    /// The board, row-major: tiles separated by spaces or commas; 0, x, X or _ is the blank.
    board: String,
    #[command(flatten)]
    options: BoardOptions,
    #[command(flatten)]
    patience: PatienceOptions,
    /// Print one JSON object instead of the moves.
    #[arg(long, env = "NPUZZLE_JSON", value_parser = boolish())]
    json: bool,
}

pub(crate) fn solve(args: SolveArgs) -> anyhow::Result<ExitCode> {
    check_engine(&args.options)?;
    let patience = args.patience.patience(args.options.serial)?;
    let settings = settings(&args.options);
    let record = if args.options.serial {
        Engine::new(settings).solve_text(0, &args.board, None)
    } else {
        let shape = npuzzle_solver::Board::parse(&args.board, settings.shape)
            .ok()
            .map(|b| BTreeSet::from([b.shape()]));
        with_coordinator(&args.options, &settings, shape, async |mut client| {
            let waiting = std::sync::atomic::AtomicUsize::new(0);
            Ok(remote::solve(
                &mut client,
                0,
                &args.board,
                None,
                &settings,
                patience,
                &waiting,
            )
            .await?)
        })?
    };
    let mut out = io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &record)?;
        writeln!(out)?;
    } else {
        match record.status {
            Status::Solved => writeln!(out, "{}", record.moves.as_deref().unwrap_or(""))?,
            Status::Unsolvable => writeln!(out, "unsolvable")?,
            Status::Invalid => {
                eprintln!(
                    "error: {}",
                    record.error.as_deref().unwrap_or("invalid board")
                );
            }
            Status::Failed => eprintln!("{}", sink::text_line(&record, Format::Lines)),
        }
    }
    Ok(exit_code(
        record.status == Status::Invalid,
        record.status == Status::Failed,
    ))
}
