//! `npuzzle simulate` through the real binary: the timeline of busy slots, as text and JSON, and
//! a count of parts it refuses.

use crate::common::npuzzle;

#[test]
fn simulate_prints_each_slot_counts_timeline_of_busy_slots() {
    let args = [
        "simulate",
        "data/traces/korf24-40.trace",
        "--slots",
        "1,16",
        "--timeline",
        "10",
    ];
    let text = npuzzle(&args, "");
    assert_eq!(text.code, 0, "{}", text.stderr);
    let lines: Vec<&str> = (text.stdout.lines())
        .filter(|l| l.trim_start().starts_with("busy % per"))
        .collect();
    assert_eq!(lines.len(), 2, "{}", text.stdout);
    for line in lines {
        let shares: Vec<u32> = (line.split(':').nth(1).unwrap_or(""))
            .split_whitespace()
            .map(|s| s.parse().unwrap_or(u32::MAX))
            .collect();
        assert_eq!(shares.len(), 10, "{line}");
        assert!(shares.iter().all(|&s| s <= 100), "{line}");
    }

    let json = npuzzle(&[&args[..], &["--json"]].concat(), "");
    assert_eq!(json.code, 0, "{}", json.stderr);
    let rows: Vec<serde_json::Value> = (json.stdout.lines())
        .map(|l| serde_json::from_str(l).unwrap_or_default())
        .collect();
    assert_eq!(rows.len(), 2, "{}", json.stdout);
    for row in &rows {
        let timeline: Vec<f64> = (row["timeline"].as_array().into_iter().flatten())
            .filter_map(|v| v.as_f64())
            .collect();
        assert_eq!(timeline.len(), 10, "{row}");
        assert!(
            timeline.iter().all(|u| (0.0..=1.0 + 1e-9).contains(u)),
            "{row}"
        );
        // The bins' mean is the row's utilization, but for what the answer's cancels stopped.
        let mean = timeline.iter().sum::<f64>() / 10.0;
        let utilization = row["utilization"].as_f64().unwrap_or(f64::NAN);
        assert!(mean <= utilization + 1e-9, "{row}");
        assert!(mean >= utilization - 0.05, "{row}");
    }
    // One slot searches the whole job alone: busy all along but for the first message.
    let one = &rows[0];
    assert_eq!(one["slots"], 1);
    assert!(one["utilization"].as_f64().unwrap_or(0.0) > 0.99, "{one}");
}

#[test]
fn simulate_refuses_a_timeline_of_too_many_parts() {
    let out = npuzzle(
        &[
            "simulate",
            "data/traces/korf24-40.trace",
            "--slots",
            "4",
            "--timeline",
            "10001",
        ],
        "",
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("--timeline: 10001 is not a count of parts from 0 to 10000"),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains("speedup"), "{}", out.stdout);
}
