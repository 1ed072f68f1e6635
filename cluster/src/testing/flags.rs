//! Every option of a command line can be set from the environment: checked on clap's
//! [`Command`] itself (`Args::command()`), not on its `--help` text.

use clap::Command;

/// The options of `command` and of its subcommands at any depth (`npuzzle pdb build --size`),
/// `--help` and `--version` aside, that name no `NPUZZLE_*` environment variable; each as the
/// command path and the option.
pub fn options_without_env(command: &Command) -> Vec<String> {
    let mut command = command.clone();
    // Adds --help and --version, and hands global options down to the subcommands.
    command.build();
    let mut missing = Vec::new();
    collect(&command, command.get_name(), &mut missing);
    missing
}

fn collect(command: &Command, path: &str, missing: &mut Vec<String>) {
    for arg in command.get_arguments() {
        let named = arg.get_long().is_some() || arg.get_short().is_some();
        let standard = matches!(arg.get_id().as_str(), "help" | "version");
        let env = arg.get_env().and_then(|e| e.to_str());
        if named && !standard && !env.is_some_and(|e| e.starts_with("NPUZZLE_")) {
            let flag = match (arg.get_long(), arg.get_short()) {
                (Some(long), _) => format!("--{long}"),
                (None, Some(short)) => format!("-{short}"),
                (None, None) => unreachable!("named"),
            };
            missing.push(format!("{path} {flag}"));
        }
    }
    for sub in command.get_subcommands() {
        if sub.get_name() != "help" {
            collect(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Arg;

    #[test]
    fn names_the_options_without_a_variable_at_any_depth() {
        let command = Command::new("tool")
            .arg(Arg::new("fine").long("fine").env("NPUZZLE_FINE"))
            .arg(Arg::new("input"))
            .subcommand(
                Command::new("sub")
                    .arg(Arg::new("bare").long("bare"))
                    .arg(Arg::new("other").short('o').env("OTHER")),
            );
        assert_eq!(
            options_without_env(&command),
            ["tool sub --bare", "tool sub -o"]
        );
    }
}
