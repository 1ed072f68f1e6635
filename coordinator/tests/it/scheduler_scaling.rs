//! The scheduler's cost per event does not grow with the cluster (issue 23): the committed
//! 24-puzzle #40 trace through the simulator on 64 and on 4,096 slots.

use npuzzle_coordinator::sim::{SimConfig, SimReport, simulate};
use npuzzle_solver::Trace;

fn korf24_40() -> Vec<Trace> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/traces/korf24-40.trace"
    );
    let text = std::fs::read_to_string(path).unwrap();
    Trace::parse_all(&text).unwrap()
}

fn run(traces: &[Trace], slots: usize) -> SimReport {
    let report = simulate(
        traces,
        &SimConfig {
            slots,
            ..SimConfig::default()
        },
    );
    assert_eq!(report.wrong, 0, "{slots} slots: {report:?}");
    report
}

/// Fails if an event costs the scheduler more than twice as much on 4,096 slots as on 64.
///
/// The cost is *counted*, not timed: [`Scheduler::visits`](npuzzle_coordinator::scheduler::Scheduler::visits)
/// adds up the entries (workers, jobs, units, tasks, index entries) that every loop of the
/// scheduler looks at, so the same events give the same count on any machine, loaded or not.
/// Wall time on the 2-core machines that run our tests is shared with builds and other tests,
/// and would also charge the larger cluster's cache misses (more workers, more tasks in
/// memory), which no index removes: a timed bound at 2× would fail by chance, and one loose
/// enough not to would let a scan through. A scan of the workers or of the running tasks per
/// event multiplies this count by up to 64 from one cluster to the other (before issue 23 it
/// grew 30-fold, from ask-back's walk over every running task); what is left grows with the
/// tasks a bound makes, which grow with the events.
///
/// The timings of the same runs are printed (`--nocapture`) for a person to compare.
#[test]
fn an_event_costs_no_more_on_4096_slots_than_on_64() {
    let traces = korf24_40();
    let small = run(&traces, 64);
    let large = run(&traces, 4096);
    for r in [&small, &large] {
        println!(
            "{:>5} slots: {} events, {:.1} entries visited per event, {:.2} µs per event",
            r.slots,
            r.events,
            r.visits_per_event(),
            r.scheduler_secs * 1e6 / r.events.max(1) as f64
        );
    }
    assert!(
        small.events > 1_000 && large.events > small.events,
        "too few events to measure: {small:?} {large:?}"
    );
    assert!(
        large.visits_per_event() <= 2.0 * small.visits_per_event(),
        "{:.1} entries per event on 4,096 slots against {:.1} on 64",
        large.visits_per_event(),
        small.visits_per_event()
    );
}
