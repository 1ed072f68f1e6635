//! `npuzzle solve`: one board.

use std::collections::BTreeSet;
use std::io::{self, IsTerminal, Write};
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
        // On a terminal, a bar shows the search's bound and its forecast (SolveStream).
        let bar = io::stderr().is_terminal().then(bound_bar);
        let tell = |p: &npuzzle_proto::v1::BoundProgress| {
            if let Some(bar) = &bar {
                show_bound(bar, p);
            }
        };
        let answer = with_coordinator(&args.options, &settings, shape, async |mut client| {
            let waiting = std::sync::atomic::AtomicUsize::new(0);
            Ok(remote::solve(
                &mut client,
                0,
                &args.board,
                None,
                &settings,
                patience,
                &waiting,
                bar.is_some().then_some(&tell as _),
            )
            .await?)
        })?;
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        answer
    };
    let mut out = io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &record)?;
        writeln!(out)?;
    } else {
        match record.status {
            Status::Solved => {
                writeln!(out, "{}", record.moves.as_deref().unwrap_or(""))?;
                if !record.optimal {
                    eprintln!(
                        "within {} of optimal: {} moves, and no path has fewer than {}",
                        args.options.within,
                        record.length.unwrap_or(0),
                        record.lower_bound.unwrap_or(0)
                    );
                }
            }
            Status::Unsolvable => writeln!(out, "unsolvable")?,
            Status::Invalid => {
                eprintln!(
                    "error: {}",
                    record.error.as_deref().unwrap_or("invalid board")
                );
            }
            Status::Failed => {
                // Past a deadline, the best path found (legal, not proven optimal) on stdout.
                if let Some(moves) = &record.moves {
                    writeln!(out, "{moves}")?;
                }
                eprintln!("{}", sink::text_line(&record, Format::Lines));
            }
        }
    }
    Ok(exit_code(
        record.status == Status::Invalid,
        record.status == Status::Failed,
    ))
}

/// A bar for one search's bounds: the bound and the share of its forecast nodes done.
pub(crate) fn bound_bar() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(1000);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {percent:>3}%")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// Shows `p` on `bar`: the bound, its nodes, and once forecast the share done and the ETA.
pub(crate) fn show_bound(bar: &indicatif::ProgressBar, p: &npuzzle_proto::v1::BoundProgress) {
    let eta = p
        .eta_seconds
        .map_or(String::new(), |s| format!(", ETA {s:.0} s"));
    // The best path so far and how far it may be from optimal.
    let best = match p.incumbent_length {
        0 => String::new(),
        n => format!(
            "; best path {n} moves, gap {}",
            n.saturating_sub(p.lower_bound)
        ),
    };
    bar.set_message(format!(
        "bound {} ({} nodes{eta}){best}",
        p.bound, p.nodes_in_bound
    ));
    bar.set_position((p.fraction * 1000.0) as u64);
}
