//! `npuzzle-worker`: join an npuzzle coordinator and search the units it hands out.

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use npuzzle_proto::security::{ClientSecurity, PemCertificates, Token};
use npuzzle_telemetry::{LogFormat, MetricsListener};
use tokio_util::sync::CancellationToken;

/// An npuzzle worker: joins a coordinator and searches the work units it hands out, one search
/// thread per slot.
///
/// It reconnects on its own (100 ms doubling to 5 s) when the coordinator goes away, and stops
/// on Ctrl-C or SIGTERM. A coordinator that refuses its token stops it (exit status 1); one whose
/// TLS certificate does not verify is never joined (logged as an error, retried). Every flag can
/// also be set by the environment variable named in its help; prefer --token-file to --token
/// (other processes of the same user can read the environment).
#[derive(Parser)]
#[command(name = "npuzzle-worker", version, about)]
struct Args {
    /// The coordinator's URL: http://HOST:PORT, or https://HOST:PORT for TLS.
    #[arg(
        long,
        env = "NPUZZLE_COORDINATOR",
        default_value = "http://127.0.0.1:50051",
        value_name = "URL"
    )]
    coordinator: String,
    /// Search threads, i.e. units searched at once (default: one per core).
    #[arg(long, env = "NPUZZLE_THREADS")]
    threads: Option<usize>,
    /// A name for this worker in logs, its own and the coordinator's (default: worker-PID).
    #[arg(long, env = "NPUZZLE_WORKER_NAME")]
    name: Option<String>,
    /// Directory of pattern databases (default: the per-user cache, ~/.cache/npuzzle/pdb). The
    /// tables present are loaded at start-up, never built (`npuzzle pdb build` builds them),
    /// and their shapes served with HEURISTIC_PDB.
    #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
    pdb_dir: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 0.0.0.0:9091). Off by default.
    #[arg(long, env = "NPUZZLE_METRICS_LISTEN", value_name = "ADDR")]
    metrics_listen: Option<String>,
    /// Log lines as `text` (for people) or `json` (one object per line, for log collectors).
    /// RUST_LOG chooses what is logged (default: info).
    #[arg(
        long,
        env = "NPUZZLE_LOG_FORMAT",
        default_value = "text",
        value_name = "text|json"
    )]
    log_format: LogFormat,
    /// The worker token the coordinator requires (its --worker-token), sent with the join.
    #[arg(
        long,
        env = "NPUZZLE_WORKER_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    token: Option<String>,
    /// The worker token, read from FILE (trailing line breaks dropped).
    #[arg(long, env = "NPUZZLE_WORKER_TOKEN_FILE", value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// For https:// URLs: the CA certificate (PEM) that must have signed the coordinator's
    /// certificate. Without it, the Mozilla root CAs are trusted.
    #[arg(long, env = "NPUZZLE_TLS_CA", value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// For https:// URLs: the name the coordinator's certificate must carry, when it is not the
    /// URL's host (e.g. when connecting by IP address).
    #[arg(long, env = "NPUZZLE_TLS_DOMAIN", value_name = "NAME")]
    tls_domain: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    npuzzle_telemetry::init_logging(args.log_format, "info")?;
    let mut config = npuzzle_worker::Config::new(args.coordinator);
    config.security = ClientSecurity {
        token: Token::from_flags(args.token, args.token_file.as_deref(), "--token")?,
        tls_ca: args
            .tls_ca
            .as_deref()
            .map(PemCertificates::read)
            .transpose()?,
        tls_domain: args.tls_domain,
    };
    if let Some(t) = args.threads {
        config.threads = t.max(1);
    }
    if let Some(n) = args.name {
        config.name = n;
    }
    config.pdb_dir = args.pdb_dir;
    if let Some(address) = &args.metrics_listen {
        config.metrics = Some(
            MetricsListener::bind(address)
                .with_context(|| format!("cannot serve metrics on {address}"))?,
        );
    }
    let shutdown = CancellationToken::new();
    let signal = shutdown.clone();
    tokio::spawn(async move {
        npuzzle_telemetry::shutdown_signal().await;
        tracing::info!("shutting down");
        signal.cancel();
    });
    npuzzle_worker::run(config, shutdown).await?;
    Ok(())
}
