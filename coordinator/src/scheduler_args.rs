//! The scheduler's tuning flags, declared once: [`SchedulerArgs`], which `npuzzle-coordinator`
//! and `npuzzle simulate` both flatten into their command lines (`#[command(flatten)]`), so
//! that a setting tried in the simulator is given to a coordinator by the same flag and the
//! same `NPUZZLE_*` variable. Each flag's default is [`SchedulerConfig::default`]'s.

use std::time::Duration;

use clap::builder::BoolishValueParser;

use crate::scheduler::SchedulerConfig;

/// How units are handed out, sent ahead, cut and taken back: the flags of
/// [`SchedulerConfig`] that a coordinator and the simulator share. Into a config with
/// [`SchedulerConfig::from`] (the other settings the defaults).
#[derive(Clone, Debug, PartialEq, clap::Args)]
pub struct SchedulerArgs {
    /// A unit of a search already cut, asked back for idle search threads, stops after this
    /// many nodes (at most `--hand-back-after`): only the speed of a bound's tail is at stake.
    #[arg(long, env = "NPUZZLE_CUT_HAND_BACK_AFTER", default_value_t = SchedulerConfig::default().cut_hand_back_after)]
    pub cut_hand_back_after: u64,
    /// Send each worker that supports it up to one unit per search thread ahead of time, which
    /// it starts the moment a thread frees (no round trip between units); units sent ahead and
    /// not started are taken back first when a thread elsewhere idles. `false`: one unit per
    /// thread at a time.
    #[arg(
        long,
        env = "NPUZZLE_PREFETCH",
        default_value_t = SchedulerConfig::default().prefetch,
        action = clap::ArgAction::Set,
        value_parser = BoolishValueParser::new()
    )]
    pub prefetch: bool,
    /// Let a unit that has exhausted the job's bound go on to the next bound at once, on search
    /// threads that would otherwise idle in the bound's tail (AIDA*'s asynchronous iterations,
    /// one bound ahead); a path found there is returned once every unit has exhausted the bound
    /// below it. `false`: every unit waits for the bound's last one (a barrier per bound).
    #[arg(
        long,
        env = "NPUZZLE_ASYNC_BOUNDS",
        default_value_t = SchedulerConfig::default().async_bounds,
        action = clap::ArgAction::Set,
        value_parser = BoolishValueParser::new()
    )]
    pub async_bounds: bool,
    /// With `--async-bounds`, how many bounds past the current one a unit may go on to (1 to
    /// 3): a unit that has exhausted every bound up to one ahead goes on to the next while the
    /// current bound's tail is searched elsewhere. More fills idle threads with work of bounds
    /// the answer may not need (docs/benchmarks/2026-12-simulation-model.md).
    #[arg(long, env = "NPUZZLE_BOUNDS_AHEAD", default_value_t = SchedulerConfig::default().bounds_ahead)]
    pub bounds_ahead: usize,
    /// Units are cut ahead of a bound no finer than the whole cluster searches in this many
    /// microseconds (its rate on the job over its last bound), so that the coordinator keeps up
    /// with many threads (no effect below some hundred threads); 0: no floor.
    #[arg(
        long,
        env = "NPUZZLE_CLUSTER_TIME_PER_TASK_US",
        default_value_t = SchedulerConfig::default().cluster_time_per_task.as_micros() as u64
    )]
    pub cluster_time_per_task_us: u64,
    /// Units are cut ahead of a bound no finer than √(the bound's predicted nodes × this): what
    /// one task costs the coordinator, in the nodes a worker thread searches meanwhile. It
    /// balances a bound's longest task against the coordinator's time for all its tasks
    /// (docs/benchmarks/2026-12-simulation-small-bounds.md); 0: no such floor.
    #[arg(
        long,
        env = "NPUZZLE_TASK_COST_NODES",
        default_value_t = SchedulerConfig::default().task_cost_nodes
    )]
    pub task_cost_nodes: u64,
}

impl From<SchedulerArgs> for SchedulerConfig {
    /// These flags' settings, the others [`SchedulerConfig::default`]'s.
    fn from(args: SchedulerArgs) -> SchedulerConfig {
        SchedulerConfig {
            cut_hand_back_after: args.cut_hand_back_after,
            prefetch: args.prefetch,
            async_bounds: args.async_bounds,
            bounds_ahead: args.bounds_ahead,
            cluster_time_per_task: Duration::from_micros(args.cluster_time_per_task_us),
            task_cost_nodes: args.task_cost_nodes,
            ..SchedulerConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, FromArgMatches, Parser};

    use super::*;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        scheduler: SchedulerArgs,
    }

    /// The flags with `args`, the environment not read.
    fn parse(args: &[&str]) -> SchedulerConfig {
        let command = Flags::command().mut_args(|a| a.env(None::<&str>));
        let matches = command
            .try_get_matches_from(std::iter::once("test").chain(args.iter().copied()))
            .expect("the flags parse");
        let flags = Flags::from_arg_matches(&matches).expect("the flags parse");
        flags.scheduler.into()
    }

    #[test]
    fn the_defaults_are_the_library_defaults() {
        let parsed = parse(&[]);
        let library = SchedulerConfig::default();
        assert_eq!(parsed.cut_hand_back_after, library.cut_hand_back_after);
        assert_eq!(parsed.prefetch, library.prefetch);
        assert_eq!(parsed.async_bounds, library.async_bounds);
        assert_eq!(parsed.bounds_ahead, library.bounds_ahead);
        assert_eq!(parsed.cluster_time_per_task, library.cluster_time_per_task);
        assert_eq!(parsed.task_cost_nodes, library.task_cost_nodes);
        parsed.validate().expect("the defaults are valid");
    }

    #[test]
    fn each_flag_sets_its_field() {
        let parsed = parse(&[
            "--cut-hand-back-after",
            "7",
            "--prefetch",
            "false",
            "--async-bounds",
            "no",
            "--bounds-ahead",
            "3",
            "--cluster-time-per-task-us",
            "0",
            "--task-cost-nodes",
            "5",
        ]);
        assert_eq!(parsed.cut_hand_back_after, 7);
        assert!(!parsed.prefetch);
        assert!(!parsed.async_bounds);
        assert_eq!(parsed.bounds_ahead, 3);
        assert_eq!(parsed.cluster_time_per_task, Duration::ZERO);
        assert_eq!(parsed.task_cost_nodes, 5);
    }
}
