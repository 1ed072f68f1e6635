//! `npuzzle stats` (a coordinator's state) and `npuzzle health` (a grpc.health.v1 probe).

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Args;
use npuzzle_proto::security::{ClientSecurity, TlsArgs, TokenArgs};

use super::{LOCAL_COORDINATOR, boolish, runtime};

#[derive(Args)]
pub(crate) struct StatsArgs {
    /// The coordinator's URL.
    #[arg(long, env = "NPUZZLE_COORDINATOR", default_value = LOCAL_COORDINATOR, value_name = "URL")]
    coordinator: String,
    /// Print one JSON object instead of text.
    #[arg(long, env = "NPUZZLE_JSON", value_parser = boolish())]
    json: bool,
    /// Give up after this many milliseconds (connecting and asking).
    #[arg(
        long,
        env = "NPUZZLE_TIMEOUT_MS",
        default_value_t = 5000,
        value_name = "N"
    )]
    timeout_ms: u64,
    #[command(flatten)]
    token: TokenArgs,
    #[command(flatten)]
    tls: TlsArgs,
}

#[derive(Args)]
pub(crate) struct HealthArgs {
    /// The coordinator's URL.
    #[arg(long, env = "NPUZZLE_COORDINATOR", default_value = LOCAL_COORDINATOR, value_name = "URL")]
    coordinator: String,
    /// The service to ask about: empty for the server as a whole (the default),
    /// npuzzle.v1.Solver or npuzzle.v1.Cluster. All three say SERVING only while a worker is
    /// connected and the coordinator is not shutting down.
    #[arg(
        long,
        env = "NPUZZLE_HEALTH_SERVICE",
        default_value = "",
        value_name = "NAME"
    )]
    service: String,
    /// Give up after this many milliseconds (connecting and asking): exit status 2.
    #[arg(
        long,
        env = "NPUZZLE_TIMEOUT_MS",
        default_value_t = 2000,
        value_name = "N"
    )]
    timeout_ms: u64,
    // grpc.health.v1 needs no token: TLS settings only.
    #[command(flatten)]
    tls: TlsArgs,
}

pub(crate) fn stats(args: StatsArgs) -> anyhow::Result<ExitCode> {
    let timeout = std::time::Duration::from_millis(args.timeout_ms.max(1));
    let stats = runtime()?
        .block_on(npuzzle_client::ops::stats(
            &args.coordinator,
            &ClientSecurity::from_args(&args.token, &args.tls)?,
            timeout,
        ))
        .map_err(|e| anyhow::anyhow!(npuzzle_client::ops::describe(&e)))?;
    let mut out = io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &npuzzle_client::ops::stats_json(&stats))?;
        writeln!(out)?;
    } else {
        write!(
            out,
            "coordinator     {}\n{}",
            args.coordinator,
            npuzzle_client::ops::stats_text(&stats)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn health(args: HealthArgs) -> anyhow::Result<ExitCode> {
    let timeout = std::time::Duration::from_millis(args.timeout_ms.max(1));
    let tls = ClientSecurity::from_args(&TokenArgs::default(), &args.tls)?;
    let health = runtime()?.block_on(npuzzle_client::ops::health(
        &args.coordinator,
        &args.service,
        &tls,
        timeout,
    ));
    println!("{}", health.name());
    if let npuzzle_client::ops::Health::Unknown(why)
    | npuzzle_client::ops::Health::Unreachable(why) = &health
    {
        eprintln!("{why}");
    }
    Ok(ExitCode::from(health.exit_code()))
}
