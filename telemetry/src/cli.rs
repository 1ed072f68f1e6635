//! The logging flag every npuzzle binary takes, defined once (feature `cli`): `--log-format`,
//! env `NPUZZLE_LOG_FORMAT`. Its help is the servers' (whose default filter is `info`); the
//! `npuzzle` command line, whose logs are off by default, rewords it with
//! `clap::Command::mut_arg`.

use crate::{LogFormat, LoggingError, init_logging};

/// `--log-format text|json`.
#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub struct LogArgs {
    /// Log lines as `text` (for people) or `json` (one object per line, for log collectors).
    /// RUST_LOG chooses what is logged (default: info).
    #[arg(
        long,
        env = "NPUZZLE_LOG_FORMAT",
        default_value = "text",
        value_name = "text|json"
    )]
    pub log_format: LogFormat,
}

impl LogArgs {
    /// [`init_logging`] in the chosen format.
    pub fn init(&self, default_filter: &str) -> Result<(), LoggingError> {
        init_logging(self.log_format, default_filter)
    }
}
