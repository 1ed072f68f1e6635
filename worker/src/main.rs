//! `npuzzle-worker`: join an npuzzle coordinator and search the units it hands out.

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
    let shutdown = CancellationToken::new();
    let signal = shutdown.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        signal.cancel();
    });
    npuzzle_worker::run(config, shutdown).await?;
    Ok(())
}
