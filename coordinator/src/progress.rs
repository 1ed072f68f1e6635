//! A running search's progress with an estimate: the nodes its current bound has expanded, what
//! the whole bound is forecast to expand ([`BoundForecast`]: geometric growth per unit of bound,
//! measured on the search's own finished bounds), the fraction done and the time left, and what
//! the next bound should cost. Fed by the scheduler's progress reports (cumulative nodes, the
//! bound, whether it is finished); read by the console and `SolveStream`.

use std::time::{Duration, Instant};

use npuzzle_solver::{BoundEstimate, BoundForecast};

/// The step assumed between bounds until two have been seen (the 15- and 24-puzzles' step).
const DEFAULT_STEP: u32 = 2;

/// One search's bounds as its progress reports arrive.
#[derive(Clone, Debug, Default)]
pub(crate) struct BoundTracker {
    forecast: BoundForecast,
    /// The bound running now, and the one before it.
    bound: u32,
    previous: Option<u32>,
    /// Cumulative nodes when the current bound started, and when that was.
    base_nodes: u64,
    since: Option<Instant>,
    /// Nodes the current bound has expanded so far.
    in_bound: u64,
    finished: bool,
    /// Nodes a second over the last bound that finished.
    last_rate: Option<f64>,
}

/// What the console and `SolveStream` show of the current bound.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Outlook {
    /// Nodes the current bound has expanded so far.
    pub nodes_in_bound: u64,
    /// The forecast, once two bounds have finished.
    pub estimate: Option<BoundEstimate>,
    /// Set when no node of the current bound has been reported yet (a search running whole on
    /// one worker reports at each bound's end): the fraction and the ETA are then extrapolated
    /// from the time the bound has run at the last bound's rate.
    pub extrapolated: bool,
}

impl BoundTracker {
    /// A progress report at `now`: `bound` with `nodes` expanded by the whole search so far,
    /// `finished` once every unit has exhausted it.
    pub fn report(&mut self, bound: u32, nodes: u64, finished: bool, now: Instant) {
        if bound != self.bound {
            // A new bound: it started where the last one finished, or (had its finish not been
            // seen) where it is first seen.
            if !self.finished {
                self.base_nodes = nodes;
                self.since = Some(now);
            }
            if self.bound > 0 {
                self.previous = Some(self.bound);
            }
            self.bound = bound;
            self.finished = false;
        }
        self.in_bound = nodes.saturating_sub(self.base_nodes);
        if finished && !self.finished {
            self.forecast.finished(bound, self.in_bound);
            let took = self
                .since
                .map_or(0.0, |s| now.saturating_duration_since(s).as_secs_f64());
            if took > 0.0 && self.in_bound > 0 {
                self.last_rate = Some(self.in_bound as f64 / took);
            }
            self.finished = true;
            self.base_nodes = nodes;
            self.since = Some(now);
        }
    }

    /// Where the current bound stands at `now`.
    pub fn outlook(&self, now: Instant) -> Outlook {
        if self.finished {
            return Outlook {
                nodes_in_bound: self.in_bound,
                estimate: None,
                extrapolated: false,
            };
        }
        let elapsed = self
            .since
            .map_or(Duration::ZERO, |s| now.saturating_duration_since(s));
        let step = self
            .previous
            .map_or(DEFAULT_STEP, |p| self.bound.saturating_sub(p).max(1));
        let estimate =
            self.forecast
                .progress(self.bound, self.in_bound, elapsed.as_secs_f64(), step);
        match (estimate, self.last_rate) {
            (Some(mut e), Some(rate)) if self.in_bound == 0 => {
                // Nothing reported within the bound yet: assume it runs at the last one's rate,
                // never to its end (it has not reported that).
                let predicted = e.predicted_nodes as f64;
                let assumed = (elapsed.as_secs_f64() * rate).min(0.99 * predicted);
                e.fraction = if predicted > 0.0 {
                    assumed / predicted
                } else {
                    0.0
                };
                e.eta_secs = Some((predicted - assumed) / rate);
                Outlook {
                    nodes_in_bound: 0,
                    estimate: Some(e),
                    extrapolated: true,
                }
            }
            _ => Outlook {
                nodes_in_bound: self.in_bound,
                estimate,
                extrapolated: false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bounds 40, 42, 44 finishing after 100, 1,000 and 10,000 nodes, one second each.
    fn three_bounds(start: Instant) -> (BoundTracker, u64) {
        let mut t = BoundTracker::default();
        let mut total = 0;
        for (i, (bound, nodes)) in [(40, 100), (42, 1_000), (44, 10_000)]
            .into_iter()
            .enumerate()
        {
            let at = start + Duration::from_secs(i as u64);
            t.report(bound, total, false, at);
            total += nodes;
            t.report(bound, total, true, at + Duration::from_secs(1));
        }
        (t, total)
    }

    #[test]
    fn no_estimate_until_two_bounds_have_finished() {
        let start = Instant::now();
        let mut t = BoundTracker::default();
        t.report(40, 0, false, start);
        t.report(40, 50, false, start);
        assert_eq!(t.outlook(start).estimate, None);
        assert_eq!(t.outlook(start).nodes_in_bound, 50);
        t.report(40, 100, true, start);
        t.report(42, 150, false, start);
        assert_eq!(t.outlook(start).nodes_in_bound, 50);
        assert_eq!(t.outlook(start).estimate, None);
    }

    #[test]
    fn the_running_bound_is_forecast_from_the_growth_of_the_finished_ones() {
        let start = Instant::now();
        let (mut t, total) = three_bounds(start);
        // Bound 46 runs: 25,000 of a forecast 100,000 after 5 s.
        let begun = start + Duration::from_secs(3);
        t.report(46, total, false, begun);
        t.report(46, total + 25_000, false, begun + Duration::from_secs(4));
        let o = t.outlook(begun + Duration::from_secs(5));
        assert_eq!(o.nodes_in_bound, 25_000);
        let e = o.estimate.unwrap();
        assert_eq!(e.predicted_nodes, 100_000);
        assert!((e.fraction - 0.25).abs() < 1e-9, "{e:?}");
        // 25,000 nodes in 5 s (since bound 44 finished at 3 s): 75,000 left take 15 s.
        assert!((e.eta_secs.unwrap() - 15.0).abs() < 1e-6, "{e:?}");
        assert_eq!(e.next_bound_nodes, Some(1_000_000));
    }

    #[test]
    fn a_bound_without_reports_is_extrapolated_at_the_last_bound_s_rate() {
        let start = Instant::now();
        let (mut t, total) = three_bounds(start);
        // Bound 44 ran 10,000 nodes in 1 s; bound 46 (forecast 100,000) has reported nothing
        // after 2 s: assumed 20,000 done, 8 s left.
        let begun = start + Duration::from_secs(3);
        t.report(46, total, false, begun);
        let o = t.outlook(begun + Duration::from_secs(2));
        assert!(o.extrapolated);
        let e = o.estimate.unwrap();
        assert!((e.fraction - 0.2).abs() < 1e-9, "{e:?}");
        assert!((e.eta_secs.unwrap() - 8.0).abs() < 1e-6, "{e:?}");
        // Never past 99 % on an assumption.
        let e = t
            .outlook(begun + Duration::from_secs(500))
            .estimate
            .unwrap();
        assert!((e.fraction - 0.99).abs() < 1e-9, "{e:?}");
        // Once nodes are reported, they count instead.
        t.report(46, total + 50_000, false, begun + Duration::from_secs(21));
        let o = t.outlook(begun + Duration::from_secs(21));
        assert!(!o.extrapolated);
        assert!((o.estimate.unwrap().fraction - 0.5).abs() < 1e-9);
    }

    #[test]
    fn a_finished_bound_has_no_estimate_left() {
        let start = Instant::now();
        let (t, _) = three_bounds(start);
        let o = t.outlook(start + Duration::from_secs(9));
        assert_eq!((o.nodes_in_bound, o.estimate), (10_000, None));
    }

    #[test]
    fn a_bound_whose_finish_was_not_seen_starts_where_it_is_first_seen() {
        let start = Instant::now();
        let mut t = BoundTracker::default();
        t.report(40, 0, false, start);
        t.report(40, 70, false, start);
        // 42 appears without 40's finish: its nodes count from here.
        t.report(42, 100, false, start);
        t.report(42, 130, false, start);
        assert_eq!(t.outlook(start).nodes_in_bound, 30);
    }
}
