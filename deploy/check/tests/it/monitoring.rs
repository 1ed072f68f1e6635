//! The Grafana dashboard (`deploy/grafana/`) and the Prometheus rules (`deploy/prometheus/`)
//! against the metrics the binaries export: every metric an expression names is one that some
//! binary's `metrics.rs` declares (a `pub const … = "npuzzle_…"`), so that renaming a metric
//! breaks this test until the dashboard and the rules follow. The rules' syntax and behaviour
//! are checked by `promtool` in `.ci/run`.

use std::collections::BTreeSet;

use crate::common::{read, yaml};

const DASHBOARD: &str = "deploy/grafana/npuzzle-dashboard.json";
const RULES: &str = "deploy/prometheus/npuzzle-rules.yml";

/// The metric names the binaries export, read from their sources.
fn exported() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for file in ["coordinator/src/metrics.rs", "worker/src/metrics.rs"] {
        for line in read(file).lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("pub const ")
                && let Some((_, value)) = rest.split_once("&str = \"")
                && let Some((name, _)) = value.split_once('"')
                && name.starts_with("npuzzle_")
            {
                names.insert(name.to_string());
            }
        }
    }
    names
}

/// The `npuzzle_*` names in a PromQL expression (label names and values are not metric names:
/// nothing in `{…}` or in quotes is taken).
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let (mut braces, mut quoted) = (0usize, false);
    let mut word = String::new();
    for c in expr.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
            continue;
        }
        if braces == 0 && !quoted && word.starts_with("npuzzle_") {
            names.push(word.clone());
        }
        word.clear();
        match c {
            '"' => quoted = !quoted,
            '{' if !quoted => braces += 1,
            '}' if !quoted => braces = braces.saturating_sub(1),
            _ => {}
        }
    }
    names
}

/// Whether `name` is exported, as itself or as a histogram's `_bucket`, `_sum` or `_count`.
fn is_exported(name: &str, exported: &BTreeSet<String>) -> bool {
    exported.contains(name)
        || ["_bucket", "_sum", "_count"].iter().any(|suffix| {
            name.strip_suffix(suffix)
                .is_some_and(|base| exported.contains(base))
        })
}

/// Every `expr` of every panel target in the dashboard.
fn dashboard_exprs() -> Vec<(String, String)> {
    let dashboard: serde_json::Value = serde_json::from_str(&read(DASHBOARD))
        .unwrap_or_else(|e| panic!("{DASHBOARD} is not JSON: {e}"));
    let panels = dashboard["panels"].as_array().expect("panels");
    let mut exprs = Vec::new();
    for panel in panels {
        let title = panel["title"].as_str().unwrap_or("?").to_string();
        for target in panel["targets"].as_array().expect("targets") {
            let expr = target["expr"].as_str().expect("expr");
            exprs.push((title.clone(), expr.to_string()));
        }
    }
    exprs
}

#[test]
fn the_metric_names_are_read_from_the_sources() {
    let exported = exported();
    for name in [
        "npuzzle_coordinator_workers",
        "npuzzle_coordinator_request_duration_seconds",
        "npuzzle_coordinator_cache_store_dropped_total",
        "npuzzle_worker_units_total",
    ] {
        assert!(exported.contains(name), "{name} in {exported:?}");
    }
    assert_eq!(
        metric_names(
            r#"sum by (le) (rate(npuzzle_a_bucket{job="npuzzle_not_a_metric"}[5m])) / npuzzle_b"#
        ),
        ["npuzzle_a_bucket", "npuzzle_b"]
    );
    assert!(is_exported(
        "npuzzle_coordinator_request_duration_seconds_bucket",
        &exported
    ));
    assert!(!is_exported("npuzzle_coordinator_worker", &exported));
}

#[test]
fn every_dashboard_panel_queries_metrics_the_binaries_export() {
    let exported = exported();
    let exprs = dashboard_exprs();
    assert!(exprs.len() >= 10, "{exprs:?}");
    let mut used = BTreeSet::new();
    for (title, expr) in &exprs {
        let names = metric_names(expr);
        assert!(
            !names.is_empty(),
            "panel {title:?}: no npuzzle metric in {expr}"
        );
        for name in names {
            assert!(
                is_exported(&name, &exported),
                "panel {title:?}: {name} is not a metric the binaries export ({expr})"
            );
            used.insert(name);
        }
    }
    // The dashboard shows every metric (a histogram through its series).
    let missing: Vec<&String> = exported
        .iter()
        .filter(|m| {
            !used.iter().any(|u| {
                u == *m
                    || u.strip_prefix(m.as_str()).is_some_and(|s| {
                        s.starts_with('_') && ["_bucket", "_sum", "_count"].contains(&s)
                    })
            })
        })
        .collect();
    assert!(missing.is_empty(), "not on the dashboard: {missing:?}");
}

#[test]
fn every_alert_rule_uses_metrics_the_binaries_export() {
    let exported = exported();
    let docs = yaml(RULES);
    let groups = docs[0]["groups"].as_vec().expect("groups");
    let mut alerts = Vec::new();
    for group in groups {
        for rule in group["rules"].as_vec().expect("rules") {
            let alert = rule["alert"].as_str().expect("an alert name").to_string();
            let expr = rule["expr"].as_str().expect("expr");
            let names = metric_names(expr);
            assert!(!names.is_empty(), "{alert}: no npuzzle metric in {expr}");
            for name in names {
                assert!(
                    is_exported(&name, &exported),
                    "{alert}: {name} is not a metric the binaries export"
                );
            }
            assert!(
                rule["annotations"]["summary"].as_str().is_some(),
                "{alert}: a summary"
            );
            alerts.push(alert);
        }
    }
    assert_eq!(
        alerts,
        [
            "NpuzzleNoWorkerConnected",
            "NpuzzleUnitsRequeuedFast",
            "NpuzzleCacheStoreDroppingWrites"
        ]
    );
}
