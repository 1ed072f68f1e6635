//! How much an IDA* bound will cost before it is done: the forecast behind the cluster's
//! progress bars and ETAs.
//!
//! The model is **geometric growth per unit of bound**: on the sliding-tile puzzles the nodes an
//! iteration expands grow by a nearly constant factor from one bound to the next (the heuristic
//! branching factor; Korf, Reid & Edelkamp 2001, "Time complexity of iterative-deepening-A*").
//! The factor is measured on the job's own finished bounds: the last two growth steps, averaged
//! geometrically, per unit of bound (the 15- and 24-puzzles' bounds step by 2). A bound then
//! costs its predecessor's nodes times that factor to the power of the step. While a bound runs,
//! the fraction done is the nodes so far over that prediction, and the ETA is what is left at the
//! rate the bound has run at so far.
//!
//! The bound that finds the answer stops when it finds it, so it ends before its forecast: the
//! forecast is what exhausting it would cost.
//!
//! ```
//! use npuzzle_solver::BoundForecast;
//!
//! let mut forecast = BoundForecast::default();
//! forecast.finished(50, 1_000);
//! forecast.finished(52, 6_000);
//! forecast.finished(54, 36_000);
//! // Every step of 2 multiplied the nodes by 6: bound 56 should cost about 216,000.
//! let predicted = forecast.predict(56).unwrap();
//! assert!((215_000..=217_000).contains(&predicted));
//! ```

/// At most this many finished bounds are kept (a search of hundreds of bounds needs only the last).
const KEPT: usize = 8;

/// A job's finished bounds, and what they predict for the next ones.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BoundForecast {
    /// `(bound, nodes expanded under it)`, oldest first; at most [`KEPT`].
    done: Vec<(u32, u64)>,
}

/// Where a running bound stands against its forecast.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoundEstimate {
    /// What the whole bound is forecast to expand (never less than what it has expanded).
    pub predicted_nodes: u64,
    /// Nodes so far over the forecast, in `0.0..=1.0` (1 only once the bound is done).
    pub fraction: f64,
    /// Seconds left at the bound's rate so far (`None` before it has a rate).
    pub eta_secs: Option<f64>,
    /// What the next bound is forecast to expand.
    pub next_bound_nodes: Option<u64>,
}

impl BoundForecast {
    /// Records that `bound` was exhausted after expanding `nodes`. A bound recorded again
    /// replaces its earlier count; bounds must come in increasing order (an older one is ignored).
    pub fn finished(&mut self, bound: u32, nodes: u64) {
        match self.done.last_mut() {
            Some(last) if last.0 == bound => last.1 = nodes,
            Some(last) if last.0 > bound => {}
            _ => {
                if self.done.len() == KEPT {
                    self.done.remove(0);
                }
                self.done.push((bound, nodes));
            }
        }
    }

    /// The finished bounds this forecast has kept, oldest first.
    pub fn finished_bounds(&self) -> &[(u32, u64)] {
        &self.done
    }

    /// The growth factor per unit of bound, from the last two growth steps (one if only two
    /// bounds are known); `None` with fewer than two bounds or a bound that expanded nothing.
    pub fn growth_per_unit(&self) -> Option<f64> {
        let n = self.done.len();
        if n < 2 {
            return None;
        }
        let (to_bound, to_nodes) = self.done[n - 1];
        let (from_bound, from_nodes) = self.done[n.saturating_sub(3)];
        if from_nodes == 0 || to_nodes == 0 || to_bound <= from_bound {
            return None;
        }
        let ratio = to_nodes as f64 / from_nodes as f64;
        Some(ratio.powf(1.0 / f64::from(to_bound - from_bound)))
    }

    /// What exhausting `bound` is forecast to expand (a bound above the last finished one).
    pub fn predict(&self, bound: u32) -> Option<u64> {
        let growth = self.growth_per_unit()?;
        let &(last_bound, last_nodes) = self.done.last()?;
        if bound <= last_bound {
            return None;
        }
        let predicted = last_nodes as f64 * growth.powf(f64::from(bound - last_bound));
        Some(predicted.round().min(u64::MAX as f64) as u64)
    }

    /// Where `bound`, running for `elapsed_secs` with `nodes` expanded so far, stands; `step` is
    /// the distance to the bound after it (2 on the 15- and 24-puzzles). `None` until two
    /// bounds have finished.
    pub fn progress(
        &self,
        bound: u32,
        nodes: u64,
        elapsed_secs: f64,
        step: u32,
    ) -> Option<BoundEstimate> {
        let predicted = self.predict(bound)?.max(nodes);
        let fraction = if predicted == 0 {
            0.0
        } else {
            nodes as f64 / predicted as f64
        };
        let eta_secs = (nodes > 0 && elapsed_secs > 0.0)
            .then(|| (predicted - nodes) as f64 * elapsed_secs / nodes as f64);
        let next_bound_nodes = self.growth_per_unit().map(|growth| {
            (predicted as f64 * growth.powf(f64::from(step.max(1))))
                .round()
                .min(u64::MAX as f64) as u64
        });
        Some(BoundEstimate {
            predicted_nodes: predicted,
            fraction: fraction.clamp(0.0, 1.0),
            eta_secs,
            next_bound_nodes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forecast(bounds: &[(u32, u64)]) -> BoundForecast {
        let mut f = BoundForecast::default();
        for &(b, n) in bounds {
            f.finished(b, n);
        }
        f
    }

    #[test]
    fn nothing_is_forecast_before_two_bounds_have_finished() {
        assert_eq!(forecast(&[]).predict(50), None);
        assert_eq!(forecast(&[(48, 100)]).predict(50), None);
        assert_eq!(forecast(&[(48, 100)]).progress(50, 10, 1.0, 2), None);
    }

    #[test]
    fn a_steady_growth_is_extrapolated_per_unit_of_bound() {
        let f = forecast(&[(48, 100), (50, 800)]);
        // ×8 per step of 2: bound 52 costs 6,400, and 56 (two steps further) 409,600.
        assert_eq!(f.predict(52), Some(6_400));
        assert_eq!(f.predict(56), Some(409_600));
        assert_eq!(f.predict(50), None);
    }

    #[test]
    fn the_growth_is_the_geometric_mean_of_the_last_two_steps() {
        // Steps ×4 then ×9: the mean is ×6 per step of 2, whatever came before.
        let f = forecast(&[(40, 7), (44, 100), (46, 400), (48, 3_600)]);
        assert_eq!(f.predict(50), Some(21_600));
    }

    #[test]
    fn progress_gives_the_fraction_and_the_time_left_at_the_bound_s_rate() {
        let f = forecast(&[(48, 100), (50, 1_000)]);
        let p = f.progress(52, 2_500, 5.0, 2).unwrap();
        assert_eq!(p.predicted_nodes, 10_000);
        assert!((p.fraction - 0.25).abs() < 1e-9);
        // 2,500 nodes in 5 s: the 7,500 left take 15 s.
        assert!((p.eta_secs.unwrap() - 15.0).abs() < 1e-9);
        assert_eq!(p.next_bound_nodes, Some(100_000));
    }

    #[test]
    fn a_bound_running_past_its_forecast_is_never_more_than_done() {
        let f = forecast(&[(48, 100), (50, 1_000)]);
        let p = f.progress(52, 50_000, 5.0, 2).unwrap();
        assert_eq!(p.predicted_nodes, 50_000);
        assert_eq!(p.fraction, 1.0);
        assert_eq!(p.eta_secs, Some(0.0));
        let p = f.progress(52, 0, 0.0, 2).unwrap();
        assert_eq!((p.fraction, p.eta_secs), (0.0, None));
    }

    #[test]
    fn a_bound_that_expanded_nothing_forecasts_nothing() {
        assert_eq!(forecast(&[(48, 0), (50, 1_000)]).predict(52), None);
    }

    #[test]
    fn bounds_out_of_order_are_ignored_and_repeats_replace() {
        let f = forecast(&[(48, 100), (50, 500), (50, 1_000), (46, 5)]);
        assert_eq!(f.finished_bounds(), &[(48, 100), (50, 1_000)]);
        let mut many = BoundForecast::default();
        for b in 0..20 {
            many.finished(b, 1 << b);
        }
        assert_eq!(many.finished_bounds().len(), KEPT);
        assert_eq!(many.predict(20), Some(1 << 20));
    }
}
