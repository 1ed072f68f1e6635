//! `npuzzle-coordinator`: serve the npuzzle cluster's coordinator.

use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use npuzzle_coordinator::{Config, SchedulerConfig};
use tokio_util::sync::CancellationToken;

/// The npuzzle coordinator: takes solve requests (npuzzle.v1.Solver) and hands work units to
/// workers (npuzzle.v1.Cluster).
#[derive(Parser)]
#[command(name = "npuzzle-coordinator", version, about)]
struct Args {
    /// Address to listen on, for clients and workers alike.
    #[arg(long, env = "NPUZZLE_LISTEN", default_value = "127.0.0.1:50051")]
    listen: String,
    /// Cache entries kept at most.
    #[arg(long, env = "NPUZZLE_CACHE_CAPACITY", default_value_t = 1_000_000)]
    cache_capacity: usize,
    /// Work units per worker slot when a search is distributed.
    #[arg(long, env = "NPUZZLE_UNITS_PER_SLOT", default_value_t = 64)]
    units_per_slot: usize,
    /// Node budget of the serial probe that keeps easy problems on the coordinator.
    #[arg(long, env = "NPUZZLE_PROBE_NODES", default_value_t = 200_000)]
    probe_nodes: u64,
    /// Expansions per assignment before a heavy unit is split (0: never).
    #[arg(long, env = "NPUZZLE_UNIT_BUDGET", default_value_t = 20_000_000)]
    unit_budget: u64,
    /// Seconds of silence after which a worker is dropped and its units requeued.
    #[arg(long, env = "NPUZZLE_LEASE_SECS", default_value_t = 10)]
    lease_secs: u64,
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
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    tracing::info!(address = %listener.local_addr()?, "coordinator listening");
    let config = Config {
        cache_capacity: args.cache_capacity,
        units_per_slot: args.units_per_slot.max(1),
        probe_nodes: args.probe_nodes,
        scheduler: SchedulerConfig {
            node_budget: args.unit_budget,
            lease_timeout: Duration::from_secs(args.lease_secs.max(1)),
            ..SchedulerConfig::default()
        },
        ..Config::default()
    };
    let shutdown = CancellationToken::new();
    let signal = shutdown.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down");
        signal.cancel();
    });
    npuzzle_coordinator::run(listener, config, shutdown).await?;
    Ok(())
}
