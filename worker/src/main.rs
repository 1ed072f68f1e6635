//! `npuzzle-worker`: join an npuzzle coordinator and search the units it hands out.

#![forbid(unsafe_code)]

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use npuzzle_proto::security::{ClientSecurity, TlsArgs, TokenArgs};
use npuzzle_telemetry::MetricsListener;
use npuzzle_telemetry::cli::LogArgs;
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
#[command(
    mut_arg("token", |a| a
        .env("NPUZZLE_WORKER_TOKEN")
        .help("The worker token the coordinator requires (its --worker-token), sent with the join")),
    mut_arg("token_file", |a| a
        .env("NPUZZLE_WORKER_TOKEN_FILE")
        .help("The worker token, read from FILE (trailing line breaks dropped)")),
    mut_arg("tls_ca", |a| a.help(
        "For https:// URLs: the CA certificate (PEM) that must have signed the coordinator's \
         certificate. Without it, the Mozilla root CAs are trusted"
    )),
    mut_arg("tls_domain", |a| a.help(
        "For https:// URLs: the name the coordinator's certificate must carry, when it is not \
         the URL's host (e.g. when connecting by IP address)"
    )),
)]
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
    #[command(flatten)]
    log: LogArgs,
    // The token and TLS flags of `npuzzle`, under the worker's own names and wording.
    #[command(flatten)]
    token: TokenArgs,
    #[command(flatten)]
    tls: TlsArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    args.log.init("info")?;
    let mut config = npuzzle_worker::Config::new(args.coordinator);
    config.security = ClientSecurity::from_args(&args.token, &args.tls)?;
    if let Some(t) = args.threads {
        config.threads = t;
    }
    if let Some(n) = args.name {
        config.name = n;
    }
    config.pdb_dir = args.pdb_dir;
    // Settings out of range (`--threads 0`) stop it here, naming the setting.
    config.validate()?;
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
    // Exit now rather than when the runtime drops: that waits for every blocking task, and a
    // name lookup of a coordinator that went away (getaddrinfo on a blocking thread, which a
    // connect timeout abandons but cannot stop) held a stopped worker for 30 s and more.
    std::process::exit(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn every_flag_names_its_environment_variable() {
        let command = Args::command();
        let missing = npuzzle_cluster::testing::flags::options_without_env(&command);
        assert!(missing.is_empty(), "{missing:#?}");
        let metrics = command
            .get_arguments()
            .any(|a| a.get_long() == Some("metrics-listen"));
        assert!(metrics, "--metrics-listen");
    }

    /// A worker started with no flags joins a coordinator started with none.
    #[test]
    fn the_default_coordinator_is_the_coordinators_default_address() {
        let command = Args::command();
        let coordinator = command
            .get_arguments()
            .find(|a| a.get_id() == "coordinator")
            .unwrap();
        assert_eq!(
            coordinator.get_default_values(),
            [format!("http://{}", npuzzle_coordinator::DEFAULT_LISTEN).as_str()]
        );
        // The other flags have no default of their own: unset, they leave `Config::new`'s.
        for id in ["threads", "name", "pdb_dir"] {
            let arg = command.get_arguments().find(|a| a.get_id() == id).unwrap();
            assert!(arg.get_default_values().is_empty(), "--{id}");
        }
    }
}
