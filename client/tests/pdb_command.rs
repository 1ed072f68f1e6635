//! `npuzzle pdb build` writes verified tables; `--heuristic pdb` uses them, refuses clearly when
//! they are missing or corrupt, and `auto` picks them up once present.

mod common;

use common::{assert_solves, npuzzle};
use npuzzle_solver::{Goal, Shape};

fn temp_dir(name: &str) -> String {
    let d = std::env::temp_dir().join(format!("npuzzle-cli-pdb-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d.to_string_lossy().into_owned()
}

#[test]
fn build_then_solve_with_pattern_databases() {
    let dir = temp_dir("build");
    let board = "8 6 7 2 5 4 3 0 1";
    let missing = npuzzle(
        &[
            "solve",
            board,
            "--serial",
            "--heuristic",
            "pdb",
            "--pdb-dir",
            &dir,
        ],
        "",
    );
    assert_eq!(missing.code, 1);
    assert!(
        missing.stderr.contains("no pattern databases for 3x3"),
        "{}",
        missing.stderr
    );
    assert!(
        missing
            .stderr
            .contains("npuzzle pdb build --size 3x3 --partition 4-4"),
        "{}",
        missing.stderr
    );

    let built = npuzzle(
        &[
            "pdb",
            "build",
            "--size",
            "3x3",
            "--partition",
            "4-4",
            "--pdb-dir",
            &dir,
        ],
        "",
    );
    assert_eq!(built.code, 0, "{}", built.stderr);
    assert!(built.stdout.contains("3x3-4-4-0.pdb"), "{}", built.stdout);
    assert!(
        built.stderr.is_empty(),
        "no progress bar when stderr is not a terminal: {}",
        built.stderr
    );

    let out = npuzzle(
        &[
            "solve",
            board,
            "--serial",
            "--heuristic",
            "pdb",
            "--pdb-dir",
            &dir,
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let goal = Goal::blank_last(Shape::new(3, 3).unwrap());
    assert_eq!(assert_solves(board, out.stdout.trim(), &goal), 31);

    let list = npuzzle(&["pdb", "list", "--pdb-dir", &dir], "");
    assert!(list.stdout.contains("3x3 4-4: ok"), "{}", list.stdout);

    // A corrupted table is refused, never trusted.
    let path = std::path::Path::new(&dir).join("3x3-4-4-1.pdb");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let out = npuzzle(
        &[
            "solve",
            board,
            "--serial",
            "--heuristic",
            "pdb",
            "--pdb-dir",
            &dir,
        ],
        "",
    );
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("checksum"), "{}", out.stderr);
    let list = npuzzle(&["pdb", "list", "--pdb-dir", &dir], "");
    assert!(list.stdout.contains("checksum mismatch"), "{}", list.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unknown_partitions_are_usage_errors() {
    let out = npuzzle(&["pdb", "build", "--size", "4x4", "--partition", "9-9"], "");
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("no partition \"9-9\" for 4x4"),
        "{}",
        out.stderr
    );
}
