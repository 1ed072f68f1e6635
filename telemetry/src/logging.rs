//! Logs: one line per event on stderr, as text for people or JSON for log collectors.

use std::fmt;
use std::io::IsTerminal;
use std::str::FromStr;

use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// One human-readable line per event (coloured when stderr is a terminal).
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, the event's fields (among
    /// them `message`) and the spans it happened in.
    Json,
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(format!("unknown log format {s:?}: use text or json")),
        }
    }
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        })
    }
}

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    #[error("cannot install the log subscriber: {0}")]
    Install(String),
}

/// Sends this process's logs to stderr in `format`. `RUST_LOG` chooses what is logged (e.g.
/// `RUST_LOG=debug` or `RUST_LOG=npuzzle_coordinator=debug,info`); without it, or when it does
/// not parse, `default_filter` does (`"info"` for the servers, `"off"` for the command line).
/// ANSI colours are used only when stderr is a terminal. Call it once, early in `main`.
pub fn init_logging(format: LogFormat, default_filter: &str) -> Result<(), LoggingError> {
    let (filter, rejected) = match EnvFilter::try_from_default_env() {
        Ok(filter) => (filter, None),
        Err(e) => {
            let rejected = std::env::var_os(EnvFilter::DEFAULT_ENV).map(|_| e.to_string());
            (EnvFilter::new(default_filter), rejected)
        }
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder
            .json()
            // The event's fields next to `timestamp` and `level`, not nested under `fields`.
            .flatten_event(true)
            .with_ansi(false)
            .try_init(),
    };
    installed.map_err(|e| LoggingError::Install(e.to_string()))?;
    if let Some(error) = rejected {
        tracing::warn!(%error, default = default_filter, "RUST_LOG is not a valid filter; using the default");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_and_print() {
        assert_eq!("json".parse(), Ok(LogFormat::Json));
        assert_eq!("TEXT".parse(), Ok(LogFormat::Text));
        assert!(
            "yaml"
                .parse::<LogFormat>()
                .unwrap_err()
                .contains("text or json")
        );
        assert_eq!(LogFormat::Json.to_string(), "json");
    }
}
