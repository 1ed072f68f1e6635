//! The simulator on a committed trace (24-puzzle #40, recorded with the max of three 6-6-6-6
//! layouts and duplicate pruning): the files
//! in `data/traces` read back, one slot costs what the serial search costs, more slots finish
//! sooner with the optimal answer, and the same inputs give the same figures.

use npuzzle_cluster::testing::assert_optimal;
use npuzzle_coordinator::sim::{SimConfig, serial_nodes, simulate};
use npuzzle_solver::Trace;

fn korf24_40() -> Trace {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/traces/korf24-40.trace"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut traces = Trace::parse_all(&text).unwrap();
    assert_eq!(traces.len(), 1);
    traces.remove(0)
}

#[test]
fn a_committed_trace_simulates_from_one_slot_to_many() {
    let trace = korf24_40();
    assert_optimal(&trace.board, &trace.goal, &trace.path, 82);
    let traces = [trace];
    let one = simulate(
        &traces,
        &SimConfig {
            slots: 1,
            ..SimConfig::default()
        },
    );
    assert_eq!(one.wrong, 0);
    assert_eq!(
        one.nodes,
        serial_nodes(&traces[0]),
        "one slot searches the job whole"
    );
    let mut last = one.makespan;
    for slots in [2, 8, 32] {
        let config = SimConfig {
            slots,
            ..SimConfig::default()
        };
        let r = simulate(&traces, &config);
        assert_eq!(r.wrong, 0, "{slots} slots: {r:?}");
        assert!(r.makespan < last, "{slots} slots are not faster: {r:?}");
        assert!(r.speedup() > slots as f64 * 0.5, "{slots} slots: {r:?}");
        assert!(r.utilization() <= 1.0 + 1e-9);
        last = r.makespan;
        let again = simulate(&traces, &config);
        assert_eq!(
            (r.makespan, r.nodes, r.yields),
            (again.makespan, again.nodes, again.yields)
        );
    }
}
