//! `Config::validate` refuses settings the coordinator cannot work with, naming each, and `run`
//! refuses them at start; `Config::scheduler_for` turns audits on for a coordinator whose
//! listener accepts other hosts, unless a share was set.

use std::net::SocketAddr;
use std::time::Duration;

use npuzzle_coordinator::{Config, SchedulerConfig};
use tokio_util::sync::CancellationToken;

#[test]
fn the_defaults_are_valid() {
    Config::default().validate().unwrap();
}

#[test]
fn settings_out_of_range_are_refused_by_name() {
    type Change = fn(&mut Config);
    let cases: [(Change, &str); 13] = [
        (|c| c.units_per_slot = 0, "units per slot is 0"),
        (|c| c.max_searches = 0, "max searches is 0"),
        (|c| c.max_workers = 0, "max workers is 0"),
        (|c| c.max_connections = 0, "max connections is 0"),
        (|c| c.max_slots_per_worker = 0, "max slots per worker is 0"),
        (|c| c.tick = Duration::ZERO, "the tick is 0"),
        (
            |c| c.hello_timeout = Duration::ZERO,
            "the hello timeout is 0",
        ),
        (
            |c| c.first_byte_timeout = Duration::ZERO,
            "the first byte timeout is 0",
        ),
        (
            |c| c.handshake_timeout = Duration::ZERO,
            "the handshake timeout is 0",
        ),
        (
            |c| c.header_read_timeout = Duration::ZERO,
            "the header read timeout is 0",
        ),
        (
            |c| c.remote_audit_fraction = 1.5,
            "the remote audit fraction is 1.5",
        ),
        // The scheduler's own settings, through the same check.
        (
            |c| c.scheduler.lease_timeout = Duration::ZERO,
            "the lease timeout is zero",
        ),
        (
            |c| c.scheduler.audit_fraction = -0.5,
            "the audit fraction is -0.5",
        ),
    ];
    for (change, name) in cases {
        let mut config = Config::default();
        change(&mut config);
        let message = config.validate().unwrap_err().to_string();
        assert!(message.starts_with("refusing to start: "), "{message}");
        assert!(message.contains(name), "{name}: {message}");
    }
    // 0 where it means "none" or "no limit" is a setting, not a mistake.
    let zeros = Config {
        cache_capacity: 0,
        probe_nodes: 0,
        max_searches_per_client: 0,
        quarantine_for: Duration::ZERO,
        unavailable_after: Duration::ZERO,
        drain: Duration::ZERO,
        remote_audit_fraction: 0.0,
        ..Config::default()
    };
    zeros.validate().unwrap();
}

#[tokio::test]
async fn run_refuses_them_at_start() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = Config {
        max_connections: 0,
        ..Config::default()
    };
    let ran = tokio::time::timeout(
        Duration::from_secs(10),
        npuzzle_coordinator::run(listener, config, CancellationToken::new()),
    )
    .await
    .expect("run returns at once");
    let message = ran.unwrap_err().to_string();
    assert!(message.contains("max connections is 0"), "{message}");
}

fn address(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

#[test]
fn a_listener_that_accepts_other_hosts_audits_by_default() {
    let config = Config::default();
    assert_eq!(config.scheduler.audit_fraction, 0.0);
    for other_hosts in ["0.0.0.0:50051", "[::]:50051", "192.0.2.7:50051"] {
        assert_eq!(
            config.scheduler_for(address(other_hosts)).audit_fraction,
            SchedulerConfig::DEFAULT_AUDIT_FRACTION,
            "{other_hosts}"
        );
    }
    for loopback in [
        "127.0.0.1:50051",
        "127.0.0.2:0",
        "[::1]:50051",
        "[::ffff:127.0.0.1]:0",
    ] {
        assert_eq!(
            config.scheduler_for(address(loopback)).audit_fraction,
            0.0,
            "{loopback}"
        );
    }
}

#[test]
fn a_share_that_was_set_is_kept_wherever_it_listens() {
    let everywhere = address("0.0.0.0:50051");
    let set = Config {
        scheduler: SchedulerConfig {
            audit_fraction: 0.25,
            ..SchedulerConfig::default()
        },
        ..Config::default()
    };
    assert_eq!(set.scheduler_for(everywhere).audit_fraction, 0.25);
    assert_eq!(
        set.scheduler_for(address("127.0.0.1:0")).audit_fraction,
        0.25
    );
    // Audits off for other hosts too, as `npuzzle-coordinator --audit-fraction 0` asks.
    let off = Config {
        remote_audit_fraction: 0.0,
        ..Config::default()
    };
    assert_eq!(off.scheduler_for(everywhere).audit_fraction, 0.0);
    // Nothing else changes.
    let defaults = Config::default().scheduler_for(everywhere);
    assert_eq!(defaults.probation, SchedulerConfig::default().probation);
    assert_eq!(defaults.node_budget, SchedulerConfig::default().node_budget);
}
