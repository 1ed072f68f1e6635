//! `npuzzle pdb build` and `npuzzle pdb list`: the pattern databases in the table directory
//! ([`npuzzle_solver::store::TableStore`]).

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use npuzzle_solver::Shape;

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
        /// size needs (for 5x5 the three 6-6-6-6 layouts).
        #[arg(long, env = "NPUZZLE_PARTITION")]
        partition: Option<String>,
        /// Directory of pattern databases (default: $NPUZZLE_PDB_DIR, else the user cache).
        #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
        pdb_dir: Option<PathBuf>,
    },
    /// Rewrite tables stored in an older file format in the current one (format 2 files hold
    /// one byte an entry and are packed as they load, seconds for 7-8; format 3 files hold the
    /// packed table and load in a read). Nothing is rebuilt.
    Upgrade {
        /// Directory of pattern databases (default: $NPUZZLE_PDB_DIR, else the user cache).
        #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
        pdb_dir: Option<PathBuf>,
    },
    /// List the tables present in the table directory and whether they verify.
    List {
        /// Directory of pattern databases (default: $NPUZZLE_PDB_DIR, else the user cache).
        #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
        pdb_dir: Option<PathBuf>,
    },
}

pub(crate) fn pdb(command: PdbCommand) -> anyhow::Result<ExitCode> {
    use npuzzle_solver::PDB_FORMAT;
    use npuzzle_solver::store::{TableStore, preferred_partitions, table_shapes};
    match command {
        PdbCommand::Build {
            size,
            partition,
            pdb_dir,
        } => {
            let names: Vec<String> = match partition {
                Some(named) => named.split('+').map(str::to_string).collect(),
                None => default_partitions(size),
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
                for (i, tiles) in partition.patterns.iter().enumerate() {
                    let t = std::time::Instant::now();
                    if let Some(b) = &bar {
                        b.set_prefix(format!(
                            "table {}/{} {:?}",
                            i + 1,
                            partition.patterns.len(),
                            tiles
                        ));
                        b.set_position(0);
                    }
                    let db = npuzzle_solver::PatternDb::build(size, tiles, |done, total| {
                        if let Some(b) = &bar {
                            b.set_length(total);
                            b.set_position(done);
                        }
                    })?;
                    let bytes = db.to_bytes();
                    total_bytes += bytes.len() as u64;
                    let path = store.save(&partition, i, &bytes)?;
                    let histogram = db.histogram();
                    println!(
                        "{}: tiles {:?}, {} entries, {:.1} MB, mean {:.2}, max {}, built in {:.1} s",
                        path.display(),
                        tiles,
                        histogram.entries(),
                        bytes.len() as f64 / 1e6,
                        histogram.mean(),
                        histogram.max(),
                        t.elapsed().as_secs_f64()
                    );
                }
                if let Some(b) = bar {
                    b.finish_and_clear();
                }
                println!(
                    "{} {}: {:.1} MB in {:.1} s",
                    size,
                    partition.name,
                    total_bytes as f64 / 1e6,
                    started.elapsed().as_secs_f64()
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
                    for path in store.upgrade(&partition)? {
                        println!("{}: rewritten in format {PDB_FORMAT}", path.display());
                        rewritten += 1;
                    }
                }
            }
            if rewritten == 0 {
                println!(
                    "{}: every table is in format {PDB_FORMAT} already",
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
                    if !store.has(&partition) {
                        continue;
                    }
                    let older = store
                        .formats(&partition)
                        .into_iter()
                        .flatten()
                        .any(|f| f < npuzzle_solver::PDB_PACKED_FORMAT);
                    match store.load(&partition, true, false, |_, _, _| {}) {
                        Ok(_) if older => println!(
                            "  {shape} {name}: ok, in an older format that loads slower (`npuzzle pdb upgrade` rewrites it)"
                        ),
                        Ok(_) => println!("  {shape} {name}: ok"),
                        Err(e) => println!("  {shape} {name}: {e}"),
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// What `pdb build` builds when no partition is named: every partition of the strongest
/// combination the store loads for `shape`, else its strongest single partition.
fn default_partitions(shape: Shape) -> Vec<String> {
    use npuzzle_solver::store::{combined_partitions, preferred_partitions};
    match combined_partitions(shape).first() {
        Some(names) => names.iter().map(|n| n.to_string()).collect(),
        None => (preferred_partitions(shape).first())
            .map(|n| vec![n.to_string()])
            .unwrap_or_default(),
    }
}
