//! `npuzzle`: solve sliding-tile puzzles optimally from the command line.

use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use npuzzle_client::batch::{self, BatchOptions, OutputFormat};
use npuzzle_client::bench;
use npuzzle_client::engine::{Engine, HeuristicChoice, Settings, Status};
use npuzzle_client::input::Format;
use npuzzle_solver::{GoalSpec, HeuristicKind, Shape};

/// Optimal solutions for sliding-tile puzzles (8-, 15-, 24-puzzle, rectangles up to 5x5).
///
/// Moves name the direction the BLANK moves: U, D, L, R.
#[derive(Parser)]
#[command(name = "npuzzle", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Solve one board and print its moves (or `unsolvable`).
    Solve(SolveArgs),
    /// Solve a file of boards; answers come out in input order.
    Batch(BatchArgs),
    /// Benchmark: nodes, time and node rate per instance for each heuristic (one thread).
    Bench(BenchArgs),
}

/// Options shared by every command that solves boards.
#[derive(Args, Clone)]
struct BoardOptions {
    /// Board size as WxH (e.g. 3x2); 4, 9, 16 and 25 tiles infer a square.
    #[arg(long, value_name = "WxH")]
    size: Option<Shape>,
    /// Goal: blank-last (1 2 … 0), blank-first (0 1 2 …, Korf's), or the goal's tiles.
    #[arg(long, default_value = "blank-last", value_name = "GOAL")]
    goal: GoalSpec,
    /// Heuristic: auto (the strongest for the board), md (Manhattan), lc (Manhattan + linear
    /// conflict) or exact (a table of every state; boards of up to 9 cells).
    #[arg(long, default_value = "auto", value_name = "auto|md|lc|exact")]
    heuristic: HeuristicChoice,
    /// Search in this process (the default; a later release adds a cluster).
    #[arg(long)]
    serial: bool,
}

#[derive(Args)]
struct SolveArgs {
    /// The board, row-major: tiles separated by spaces or commas; 0, x, X or _ is the blank.
    board: String,
    #[command(flatten)]
    options: BoardOptions,
    /// Print one JSON object instead of the moves.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct BatchArgs {
    /// Input file; `-` or nothing reads standard input.
    input: Option<PathBuf>,
    /// Input format: auto, lines, uva10181 or poj1077.
    #[arg(long, default_value = "auto")]
    format: Format,
    /// Output: text (the judge's format) or jsonl (one JSON object per board).
    #[arg(long, default_value = "text")]
    output: OutputFormat,
    /// Solver threads (default: one per core).
    #[arg(long, default_value_t = 0)]
    jobs: usize,
    #[command(flatten)]
    options: BoardOptions,
}

#[derive(Args)]
struct BenchArgs {
    /// Instances: one board per line, or `id optimal_length tiles…` lines (Korf's files).
    file: PathBuf,
    /// Goal (Korf's files use blank-first).
    #[arg(long, default_value = "blank-last")]
    goal: GoalSpec,
    /// Heuristics to run, comma-separated.
    #[arg(long, default_value = "md,lc", value_delimiter = ',')]
    heuristic: Vec<HeuristicKind>,
    /// Board size as WxH, if not inferred.
    #[arg(long, value_name = "WxH")]
    size: Option<Shape>,
    /// Only these ids: e.g. `1-15` or `2,5,9`.
    #[arg(long)]
    ids: Option<String>,
}

fn settings(o: &BoardOptions) -> Settings {
    Settings {
        shape: o.size,
        goal: o.goal.clone(),
        heuristic: o.heuristic,
    }
}

fn solve(args: SolveArgs) -> anyhow::Result<ExitCode> {
    let mut engine = Engine::new(settings(&args.options));
    let record = engine.solve_text(0, &args.board, None);
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
        }
    }
    Ok(if record.status == Status::Invalid {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn batch(args: BatchArgs) -> anyhow::Result<ExitCode> {
    let options = BatchOptions {
        format: args.format,
        output: args.output,
        settings: settings(&args.options),
        jobs: args.jobs,
    };
    let out = io::BufWriter::new(io::stdout());
    let stdin = || BufReader::new(io::stdin());
    let summary = match args.input.as_deref() {
        None => batch::run(stdin(), out, &options)?,
        Some(p) if p.as_os_str() == "-" => batch::run(stdin(), out, &options)?,
        Some(p) => {
            let file = File::open(p).with_context(|| format!("cannot open {}", p.display()))?;
            batch::run(BufReader::new(file), out, &options)?
        }
    };
    if io::stderr().is_terminal() {
        eprintln!(
            "{} boards: {} solved, {} unsolvable, {} invalid; {} nodes in {:.2} s",
            summary.total(),
            summary.solved,
            summary.unsolvable,
            summary.invalid,
            summary.nodes,
            summary.elapsed.as_secs_f64()
        );
    }
    Ok(if summary.invalid > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `1-15` or `2,5,9` (or a mix) as a predicate on ids.
fn id_filter(spec: &str) -> anyhow::Result<Vec<(usize, usize)>> {
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

fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let mut instances =
        bench::parse_instances(&text, args.size).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(spec) = &args.ids {
        let ranges = id_filter(spec)?;
        instances.retain(|i| ranges.iter().any(|&(a, b)| (a..=b).contains(&i.id)));
    }
    let totals = bench::run(&instances, &args.goal, &args.heuristic, io::stdout().lock())?;
    Ok(if totals.iter().any(|(_, t)| t.wrong > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Solve(a) => solve(a),
        Command::Batch(a) => batch(a),
        Command::Bench(a) => bench(a),
    };
    match result {
        Ok(code) => code,
        // `npuzzle batch … | head` closes the pipe early: that is the reader's choice, not an error.
        Err(e)
            if e.downcast_ref::<io::Error>()
                .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
