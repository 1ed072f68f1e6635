//! `npuzzle batch`: a file of boards, answers in input order, `--resume`.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use npuzzle_client::batch::{BatchOptions, OutputFormat, Sink};
use npuzzle_client::input::Format;
use npuzzle_client::{remote, sink};
use npuzzle_solver::Shape;

use super::{
    BoardOptions, PatienceOptions, boolish, check_engine, exit_code, settings, with_coordinator,
};

#[derive(Args)]
pub(crate) struct BatchArgs {
    /// Input file; `-` or nothing reads standard input.
    input: Option<PathBuf>,
    /// Input format: auto, lines, uva10181 or poj1077.
    #[arg(long, env = "NPUZZLE_BATCH_FORMAT", default_value = "auto")]
    format: Format,
    /// Output: text (the judge's format, one line per board), jsonl (one JSON object per
    /// board) or csv (a header, then one row per board).
    #[arg(long, env = "NPUZZLE_BATCH_OUTPUT", default_value = "text")]
    output: OutputFormat,
    /// Write the answers to FILE instead of standard output.
    #[arg(long, env = "NPUZZLE_BATCH_OUT", value_name = "FILE")]
    out: Option<PathBuf>,
    /// Continue an interrupted run: keep the answers already in --out FILE, skip those boards
    /// and append the rest (same input and --output as before).
    #[arg(long, env = "NPUZZLE_BATCH_RESUME", value_parser = boolish())]
    resume: bool,
    /// Boards in flight: solver threads with --serial (default: one per core), concurrent
    /// requests otherwise (default: four per core).
    #[arg(long, env = "NPUZZLE_JOBS", default_value_t = 0)]
    jobs: usize,
    #[command(flatten)]
    options: BoardOptions,
    #[command(flatten)]
    patience: PatienceOptions,
}

pub(crate) fn batch(args: BatchArgs) -> anyhow::Result<ExitCode> {
    check_engine(&args.options)?;
    let patience = args.patience.patience(args.options.serial)?;
    if args.resume && args.out.is_none() {
        anyhow::bail!("--resume needs --out FILE: the answers to keep are read from it");
    }
    let mut options = BatchOptions {
        format: args.format,
        settings: settings(&args.options),
        jobs: args.jobs,
        skip: Default::default(),
    };
    let path = args.input.as_deref().filter(|p| p.as_os_str() != "-");
    let input: Box<dyn io::BufRead + Send> = match path {
        None => Box::new(BufReader::new(io::stdin())),
        Some(p) => {
            let file = File::open(p).with_context(|| format!("cannot open {}", p.display()))?;
            Box::new(BufReader::new(file))
        }
    };
    let (out, appending): (Box<dyn Write + Send>, bool) = match (&args.out, args.resume) {
        (Some(p), true) => {
            let (file, done) = sink::resume(p, args.output)
                .with_context(|| format!("cannot resume from {}", p.display()))?;
            let appending = !done.is_empty();
            options.skip = done;
            (Box::new(io::BufWriter::new(file)), appending)
        }
        (Some(p), false) => {
            let file = File::create(p).with_context(|| format!("cannot create {}", p.display()))?;
            (Box::new(io::BufWriter::new(file)), false)
        }
        (None, _) => (Box::new(io::BufWriter::new(io::stdout())), false),
    };
    let mut sink = Sink::new(out, args.output, appending);
    let watched = io::stderr().is_terminal();
    let embedded = !args.options.serial && args.options.coordinator.is_none();
    // One quick pass over a file: its board count for the ETA, and the shapes the embedded
    // worker needs tables for (from stdin it loads all of them).
    let scan = path
        .filter(|_| watched || embedded)
        .and_then(|p| scan_boards(p, args.format, args.options.size, embedded));
    if watched {
        let total = scan
            .as_ref()
            .map(|s| s.boards.saturating_sub(options.skip.len() as u64));
        sink = sink.with_progress(total);
    }
    let skipped = options.skip.len();
    let summary = if args.options.serial {
        npuzzle_client::batch::run(input, sink, &options)?
    } else {
        let shapes = scan.filter(|_| embedded).map(|s| s.shapes);
        with_coordinator(&args.options, &options.settings, shapes, async |client| {
            Ok(remote::batch(input, sink, client, &options, patience).await?)
        })?
    };
    if watched {
        if skipped > 0 {
            eprintln!("{skipped} boards already answered in the output file; skipped");
        }
        eprintln!("{summary}");
    }
    Ok(exit_code(summary.invalid > 0, summary.failed > 0))
}

/// What one pass over a batch file tells.
pub(crate) struct FileScan {
    boards: u64,
    /// The shapes of the boards that parse (filled only when asked for).
    shapes: BTreeSet<Shape>,
}

/// Reads the batch file at `path` through: its board count and, with `want_shapes`, the shapes
/// of its boards. `None` if it cannot be read through.
pub(crate) fn scan_boards(
    path: &std::path::Path,
    format: Format,
    size: Option<Shape>,
    want_shapes: bool,
) -> Option<FileScan> {
    let file = File::open(path).ok()?;
    let reader = npuzzle_client::input::Reader::new(BufReader::new(file), format);
    let mut scan = FileScan {
        boards: 0,
        shapes: BTreeSet::new(),
    };
    for item in reader {
        let item = item.ok()?;
        scan.boards += 1;
        if want_shapes
            && let Ok(board) = npuzzle_solver::Board::parse(&item.text, item.shape.or(size))
        {
            scan.shapes.insert(board.shape());
        }
    }
    Some(scan)
}
