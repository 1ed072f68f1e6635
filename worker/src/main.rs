//! `npuzzle-worker`: join an npuzzle coordinator and search the units it hands out.

use std::path::PathBuf;

use clap::Parser;
use tokio_util::sync::CancellationToken;

/// An npuzzle worker: searches work units for a coordinator on dedicated threads.
#[derive(Parser)]
#[command(name = "npuzzle-worker", version, about)]
struct Args {
    /// The coordinator's URL.
    #[arg(
        long,
        env = "NPUZZLE_COORDINATOR",
        default_value = "http://127.0.0.1:50051"
    )]
    coordinator: String,
    /// Search threads (default: one per core).
    #[arg(long, env = "NPUZZLE_THREADS")]
    threads: Option<usize>,
    /// A name for logs.
    #[arg(long, env = "NPUZZLE_WORKER_NAME")]
    name: Option<String>,
    /// Directory of pattern databases (default: the per-user cache, ~/.cache/npuzzle/pdb). The
    /// tables present are loaded at start-up, never built (`npuzzle pdb build` builds them),
    /// and their shapes served with HEURISTIC_PDB.
    #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
    pdb_dir: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut config = npuzzle_worker::Config::new(args.coordinator);
    if let Some(t) = args.threads {
        config.threads = t.max(1);
    }
    if let Some(n) = args.name {
        config.name = n;
    }
    config.pdb_dir = args.pdb_dir;
    let shutdown = CancellationToken::new();
    let signal = shutdown.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        signal.cancel();
    });
    npuzzle_worker::run(config, shutdown).await?;
    Ok(())
}
