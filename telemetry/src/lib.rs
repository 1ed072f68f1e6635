//! # npuzzle-telemetry
//!
//! How npuzzle's processes report on themselves: the same logs and the same metrics endpoint for
//! the coordinator, the workers and the `npuzzle` command line, set up in one place.
//!
//! # Layout
//!
//! - [`logging`]: [`LogFormat`] (`text` or `json`) and [`init_logging`]: `RUST_LOG` filters,
//!   logs go to stderr, colours only on a terminal.
//! - [`metrics`]: the process's one Prometheus recorder ([`metrics::install`]) and
//!   [`MetricsListener`], which serves it as text over HTTP at `/metrics`.
//! - `cli` (feature `cli`): `LogArgs`, the `--log-format` flag of every npuzzle binary.
//!
//! What is measured is each component's business: the coordinator and the worker record their
//! own `npuzzle_*` metrics through the [`::metrics`] facade.
//!
//! # Example
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use npuzzle_telemetry::{LogFormat, MetricsListener, init_logging};
//!
//! init_logging(LogFormat::Json, "info")?;
//! let metrics = MetricsListener::bind("127.0.0.1:0")?;
//! println!("scrape http://{}/metrics", metrics.local_addr());
//! let shutdown = tokio_util::sync::CancellationToken::new();
//! tokio::spawn(async move { metrics.serve(shutdown).await });
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

#[cfg(feature = "cli")]
pub mod cli;
pub mod logging;
pub mod metrics;

pub use logging::{LogFormat, LoggingError, init_logging};
pub use metrics::MetricsListener;

/// Ctrl-C, or SIGTERM (what container runtimes and systemd send).
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
