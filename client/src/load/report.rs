//! What a load test found ([`LoadReport`]): counts by kind ([`Tally`]), latency percentiles
//! ([`Latency`]), and the text `npuzzle load` prints.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::drive::{Served, Verdict};
use super::plan::Kind;
use crate::cluster_bench::percentile;

/// Latency percentiles, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl Latency {
    pub(super) fn of(mut millis: Vec<f64>) -> Option<Latency> {
        if millis.is_empty() {
            return None;
        }
        millis.sort_by(f64::total_cmp);
        Some(Latency {
            p50: percentile(&millis, 0.5),
            p90: percentile(&millis, 0.9),
            p99: percentile(&millis, 0.99),
            max: millis[millis.len() - 1],
            mean: millis.iter().sum::<f64>() / millis.len() as f64,
        })
    }
}

/// The counts of one kind (or of all).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Tally {
    pub requests: usize,
    pub ok: usize,
    pub lost: usize,
    pub wrong: usize,
    /// `RESOURCE_EXHAUSTED` answers waited out and asked again (not lost).
    pub retries: u64,
    /// Answers the coordinator gave from its cache.
    pub cache_hits: usize,
    /// From the first try to the answer, retry waits included; `None` without requests.
    pub latency_ms: Option<Latency>,
}

impl Tally {
    pub(super) fn of<'a>(answers: impl Iterator<Item = &'a Served>) -> Tally {
        let mut tally = Tally::default();
        let mut millis = Vec::new();
        for a in answers {
            tally.requests += 1;
            match a.verdict {
                Verdict::Right => tally.ok += 1,
                Verdict::Lost(_) => tally.lost += 1,
                Verdict::Wrong(_) => tally.wrong += 1,
            }
            tally.retries += a.retries;
            tally.cache_hits += a.cached as usize;
            millis.push(a.millis);
        }
        tally.latency_ms = Latency::of(millis);
        tally
    }

    /// Requests taken by a client task that ended without answers: lost.
    pub(super) fn with_vanished(mut self, vanished: usize) -> Tally {
        self.requests += vanished;
        self.lost += vanished;
        self
    }
}

/// What a load test found.
#[derive(Clone, Debug, Serialize)]
pub struct LoadReport {
    pub coordinator: String,
    /// Workers and search slots the coordinator counted at the start.
    pub workers: u32,
    pub slots: u32,
    pub shape: String,
    pub walk: Option<usize>,
    pub mix: String,
    pub seed: u64,
    pub clients: usize,
    pub connections: usize,
    /// The warm-up: each board the `cached` kind repeats, sent once before the measured run.
    pub warmup: Tally,
    pub warmup_s: f64,
    /// The measured run, by kind.
    pub kinds: BTreeMap<&'static str, Tally>,
    /// The measured run, all kinds.
    pub total: Tally,
    /// Requests of the measured run not started: the duration cap ended it first.
    pub not_sent: usize,
    /// How each answer of the measured run came back: an outcome (`solved`, `unsolvable`, …)
    /// or, for a refusal or no answer, the gRPC code (`InvalidArgument`, …).
    pub answers: BTreeMap<String, usize>,
    /// The measured run's wall time, and its answers per second.
    pub wall_s: f64,
    pub throughput_rps: f64,
    /// Lost and wrong answers, warm-up included: the run passes when both are 0.
    pub lost: usize,
    pub wrong: usize,
    pub passed: bool,
    /// The first lost or wrong answers, described.
    pub failures: Vec<String>,
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let boards = match self.walk {
            Some(k) => format!("random walks of {k} moves"),
            None => "uniformly random".to_string(),
        };
        writeln!(
            f,
            "load: {} requests ({}), {} clients on {} connections; {} boards, {boards}; seed {}",
            self.total.requests + self.not_sent,
            self.mix,
            self.clients,
            self.connections,
            self.shape,
            self.seed
        )?;
        writeln!(
            f,
            "coordinator {}: {} worker(s), {} slot(s)",
            self.coordinator, self.workers, self.slots
        )?;
        writeln!(
            f,
            "warm-up: {} boards in {:.3} s: {} ok, {} lost, {} wrong, {} retries",
            self.warmup.requests,
            self.warmup_s,
            self.warmup.ok,
            self.warmup.lost,
            self.warmup.wrong,
            self.warmup.retries
        )?;
        writeln!(
            f,
            "{:<11}{:>9}{:>9}{:>6}{:>7}{:>9}{:>11}{:>10}{:>10}{:>10}{:>10}",
            "kind",
            "requests",
            "ok",
            "lost",
            "wrong",
            "retries",
            "cache_hits",
            "p50_ms",
            "p90_ms",
            "p99_ms",
            "max_ms"
        )?;
        let empty = Tally::default();
        let rows = Kind::ALL
            .iter()
            .map(|k| (k.name(), self.kinds.get(k.name()).unwrap_or(&empty)))
            .chain([("all", &self.total)]);
        for (name, t) in rows {
            let latency = match &t.latency_ms {
                Some(l) => format!(
                    "{:>10.3}{:>10.3}{:>10.3}{:>10.3}",
                    l.p50, l.p90, l.p99, l.max
                ),
                None => format!("{:>10}{:>10}{:>10}{:>10}", "-", "-", "-", "-"),
            };
            writeln!(
                f,
                "{name:<11}{:>9}{:>9}{:>6}{:>7}{:>9}{:>11}{latency}",
                t.requests, t.ok, t.lost, t.wrong, t.retries, t.cache_hits,
            )?;
        }
        let answers: Vec<String> = self
            .answers
            .iter()
            .map(|(how, n)| format!("{how} {n}"))
            .collect();
        writeln!(f, "answers: {}", answers.join(", "))?;
        if self.not_sent > 0 {
            writeln!(
                f,
                "not sent: {} (the --duration cap ended the run)",
                self.not_sent
            )?;
        }
        writeln!(
            f,
            "wall {:.3} s, throughput {:.1} requests/s (latency: first try to answer, retry waits included)",
            self.wall_s, self.throughput_rps
        )?;
        for failure in &self.failures {
            writeln!(f, "  {failure}")?;
        }
        if self.passed {
            writeln!(f, "PASS: 0 lost, 0 wrong")
        } else {
            writeln!(f, "FAIL: {} lost, {} wrong", self.lost, self.wrong)
        }
    }
}
