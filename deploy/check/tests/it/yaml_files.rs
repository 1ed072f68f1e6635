//! Every YAML file under deploy/ parses, and the facts the other checks read from the workspace
//! (its binaries, the variables each reads) are what they should be.

use crate::common::{env_attributes, files, workspace, yaml};

#[test]
fn every_yaml_file_under_deploy_parses() {
    let found = files("deploy", &["yaml", "yml"]);
    assert!(found.len() >= 5, "{found:?}");
    for f in found {
        assert!(!yaml(&f).is_empty(), "{f}: no document");
    }
}

#[test]
fn the_workspace_binaries_and_their_variables_are_found() {
    let ws = workspace();
    let bins: Vec<&str> = ws.binaries().keys().copied().collect();
    assert_eq!(bins, ["npuzzle", "npuzzle-coordinator", "npuzzle-worker"]);
    assert!(
        ws.env_names("npuzzle-coordinator")
            .contains("NPUZZLE_LISTEN")
    );
    assert!(
        ws.env_names("npuzzle-worker")
            .contains("NPUZZLE_COORDINATOR")
    );
    assert!(!ws.env_names("npuzzle-worker").contains("NPUZZLE_LISTEN"));
    assert!(
        ws.check_env("npuzzle-worker", "NPUZZLE_LISTEN", "here")
            .unwrap_err()
            .contains("does not read NPUZZLE_LISTEN")
    );
    assert!(ws.check_env("npuzzle-worker", "HOME", "here").is_err());
    assert!(ws.check_env("npuzzle-worker", "RUST_LOG", "here").is_ok());
}

#[test]
fn env_attributes_are_found_in_any_layout() {
    let source = r#"
        #[arg(long, env = "NPUZZLE_A", default_value = "x")]
        #[arg(
            long,
            env="NPUZZLE_B",
        )]
        let environment = "NPUZZLE_C";
        #[arg(long, env = "OTHER")]
    "#;
    assert_eq!(env_attributes(source), ["NPUZZLE_A", "NPUZZLE_B"]);
}
