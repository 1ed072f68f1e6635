//! `npuzzle pdb build` and `npuzzle pdb list`: the pattern databases in the table directory
//! ([`npuzzle_solver::store::TableStore`]).

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use npuzzle_solver::{Shape, TableKind};

/// A `--kind` value.
fn parse_kind(s: &str) -> Result<TableKind, String> {
    match s {
        "zero-aware" | "zero" => Ok(TableKind::ZeroAware),
        "per-placement" | "placement" => Ok(TableKind::PerPlacement),
        _ => Err(format!(
            "unknown table kind {s:?}: expected zero-aware or per-placement"
        )),
    }
}

/// How `pdb list` names a kind.
fn kind_name(kind: TableKind) -> &'static str {
    match kind {
        TableKind::ZeroAware => "zero-aware",
        TableKind::PerPlacement => "per-placement",
    }
}

#[derive(Subcommand)]
pub(crate) enum PdbCommand {
    /// Build (or rebuild) a partition's tables into the table directory.
    Build {
        /// Board size: 4x4 (partitions 5-5-5, 6-6-3, 7-8), 5x5 (6-6-6-6), 3x3 (4-4), 2x4 / 4x2 (3-4).
        #[arg(long, env = "NPUZZLE_SIZE", value_name = "WxH")]
        size: Shape,
        /// How the tiles are split into patterns: 7-8 (strongest, 288 MB, about 4 minutes on 2
        /// cores), 6-6-3 (5.8 MB, about 10 s) or 5-5-5 (a second) for 4x4; 6-6-6-6,
        /// 6-6-6-6-kf and 6-6-6-6-c (255 MB and 2 to 3 minutes each; with two or three present the
        /// search takes the largest of their values) for 5x5; 4-4 for 3x3; 3-4 for 2x4 and 4x2. Several joined by
        /// `+` are built one after the other. Default: what the strongest heuristic for the
        /// size needs (for 5x5 the 6-6-6-6 and 6-6-6-6-kf layouts zero-aware, all three per
        /// placement).
        #[arg(long, env = "NPUZZLE_PARTITION")]
        partition: Option<String>,
        /// Directory of pattern databases (default: $NPUZZLE_PDB_DIR, else the user cache).
        #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
        pdb_dir: Option<PathBuf>,
        /// Which kind of tables: `per-placement` (one entry per placement, the least over the
        /// regions of free cells the blank may be in; the default but on 5x5) or `zero-aware`
        /// (an entry per placement and region of the blank; the default on 5x5, stored as the
        /// search reads them, two values a placement in format 6: 127.5 MB per six-tile table,
        /// 244 MB in memory; 1.7x fewer nodes and faster searches on the 24-puzzle). On 5x5,
        /// searches use the zero-aware tables wherever they are built, elsewhere the
        /// per-placement ones. Tables already there that verify are kept (`pdb upgrade`
        /// rewrites older formats); the others are built.
        #[arg(long, env = "NPUZZLE_PDB_KIND", value_name = "KIND", value_parser = parse_kind)]
        kind: Option<TableKind>,
    },
    /// Rewrite tables stored in an older file format in the current one (format 2 files hold
    /// one byte an entry and are packed as they load, seconds for 7-8; format 3 files hold the
    /// packed table and load in a read; zero-aware 5x5 tables in format 5 are turned into the
    /// split layout each time they load, 11-18 s for twelve, and are rewritten in format 6,
    /// which holds that layout). Nothing is rebuilt.
    Upgrade {
        /// Directory of pattern databases (default: $NPUZZLE_PDB_DIR, else the user cache).
        #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
        pdb_dir: Option<PathBuf>,
    },
    /// List the tables present in the table directory: whether each verifies and is in the
    /// current format, or is stale (`pdb build` rebuilds it, `pdb upgrade` rewrites an older
    /// format).
    List {
        /// Directory of pattern databases (default: $NPUZZLE_PDB_DIR, else the user cache).
        #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
        pdb_dir: Option<PathBuf>,
    },
}

pub(crate) fn pdb(command: PdbCommand) -> anyhow::Result<ExitCode> {
    use npuzzle_solver::store::{
        TableStatus, TableStore, default_kind, preferred_partitions, table_shapes,
    };
    use npuzzle_solver::{PDB_FORMAT, PDB_SPLIT_FORMAT, PDB_ZERO_AWARE_FORMAT};
    match command {
        PdbCommand::Build {
            size,
            partition,
            pdb_dir,
            kind,
        } => {
            let kind = kind.unwrap_or_else(|| default_kind(size));
            let names: Vec<String> = match partition {
                Some(named) => named.split('+').map(str::to_string).collect(),
                None => npuzzle_solver::store::default_partitions(size, kind)
                    .into_iter()
                    .map(str::to_string)
                    .collect(),
            };
            if names.is_empty() {
                anyhow::bail!("no built-in partition for {size}: name one with --partition");
            }
            let store = TableStore::new(pdb_dir);
            for name in &names {
                let partition = npuzzle_solver::Partition::named(size, name)?;
                let bar = io::stderr().is_terminal().then(|| {
                    let bar = indicatif::ProgressBar::new(0);
                    bar.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} placements ({eta})",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                    bar
                });
                let started = std::time::Instant::now();
                let mut total_bytes = 0u64;
                let mut t = std::time::Instant::now();
                let count = partition.patterns.len();
                let set_prefix = |i: usize| {
                    if let Some(b) = &bar {
                        b.set_prefix(format!(
                            "table {}/{count} {:?}",
                            i + 1,
                            partition.patterns[i]
                        ));
                        b.set_position(0);
                    }
                };
                set_prefix(0);
                store.ensure(
                    &partition,
                    kind,
                    |_, done, total| {
                        if let Some(b) = &bar {
                            b.set_length(total);
                            b.set_position(done);
                        }
                    },
                    |i, path, kept, db| {
                        let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
                        total_bytes += bytes;
                        let histogram = db.histogram();
                        let how = if kept {
                            "kept (it verifies)".to_string()
                        } else {
                            format!("built in {:.1} s", t.elapsed().as_secs_f64())
                        };
                        println!(
                            "{}: tiles {:?}, {}, {} entries, {:.1} MB, mean {:.2}, max {}, {how}",
                            path.display(),
                            db.tiles(),
                            kind_name(kind),
                            histogram.entries(),
                            bytes as f64 / 1e6,
                            histogram.mean(),
                            histogram.max(),
                        );
                        t = std::time::Instant::now();
                        if i + 1 < count {
                            set_prefix(i + 1);
                        }
                    },
                )?;
                if let Some(b) = bar {
                    b.finish_and_clear();
                }
                println!(
                    "{} {}: {:.1} MB in {:.1} s ({})",
                    size,
                    partition.name,
                    total_bytes as f64 / 1e6,
                    started.elapsed().as_secs_f64(),
                    kind_name(kind),
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        PdbCommand::Upgrade { pdb_dir } => {
            let store = TableStore::new(pdb_dir);
            let mut rewritten = 0;
            for shape in table_shapes() {
                for name in preferred_partitions(shape) {
                    let partition = npuzzle_solver::Partition::named(shape, name)?;
                    for (path, format) in store.upgrade(&partition)? {
                        println!("{}: rewritten in format {format}", path.display());
                        rewritten += 1;
                    }
                }
            }
            if rewritten == 0 {
                println!(
                    "{}: every table is in the format this build writes already ({PDB_FORMAT} per placement; zero-aware {PDB_SPLIT_FORMAT} for six tiles on 5x5, else {PDB_ZERO_AWARE_FORMAT})",
                    store.dir.display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        PdbCommand::List { pdb_dir } => {
            let store = TableStore::new(pdb_dir);
            println!("{}", store.dir.display());
            for shape in table_shapes() {
                for name in preferred_partitions(shape) {
                    let partition = npuzzle_solver::Partition::named(shape, name)?;
                    for kind in [TableKind::ZeroAware, TableKind::PerPlacement] {
                        let status = store.status(&partition, kind);
                        if status.iter().all(|(_, s)| *s == TableStatus::Missing) {
                            continue;
                        }
                        let label = match kind {
                            TableKind::ZeroAware => format!("{shape} {name} zero-aware"),
                            TableKind::PerPlacement => format!("{shape} {name}"),
                        };
                        let verified =
                            |s: &TableStatus| matches!(s, TableStatus::Ok | TableStatus::Older(_));
                        if status.iter().all(|(_, s)| *s == TableStatus::Ok) {
                            println!("  {label}: ok");
                        } else if status.iter().all(|(_, s)| verified(s)) {
                            println!(
                                "  {label}: ok, in an older format that loads slower (`npuzzle pdb upgrade` rewrites it)"
                            );
                        } else {
                            println!(
                                "  {label}: stale (`npuzzle pdb build --size {shape} --partition {name} --kind {}` rebuilds what is missing or fails to verify)",
                                kind_name(kind)
                            );
                            for (path, s) in status {
                                let why = match s {
                                    TableStatus::Ok => "ok".to_string(),
                                    TableStatus::Older(f) => format!("ok, format {f}"),
                                    TableStatus::Missing => "missing".to_string(),
                                    TableStatus::Stale(why) => format!("stale: {why}"),
                                };
                                println!("    {}: {why}", path.display());
                            }
                        }
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
