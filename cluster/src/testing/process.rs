//! A child process for tests that run a binary (`npuzzle-coordinator`, `npuzzle-worker`,
//! `npuzzle`): [`Process`] owns a [`std::process::Child`] and kills and reaps it when dropped,
//! so that a failing test leaves no process behind; it sends signals (`kill -TERM`, `-STOP`,
//! `-CONT`) and reads the child's stderr line by line, to wait for the line that says it is
//! ready.
//!
//! ```no_run
//! use std::process::{Command, Stdio};
//! use std::time::Duration;
//!
//! use npuzzle_cluster::testing::process::Process;
//!
//! let mut coordinator = Process::spawn(
//!     Command::new("npuzzle-coordinator")
//!         .args(["--listen", "127.0.0.1:0"])
//!         .stderr(Stdio::piped()),
//! );
//! let line = coordinator.wait_for_line(Duration::from_secs(10), |l| l.contains("listening"));
//! coordinator.signal("TERM");
//! assert!(coordinator.wait().success(), "{line}");
//! ```

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A child process, killed (SIGKILL) and reaped when dropped: see [the module](self).
pub struct Process {
    child: Child,
    /// The program's name, for messages.
    program: String,
    /// The stderr lines, once [`Process::wait_for_line`] took the pipe: read on a thread of
    /// their own, so that the child never blocks on a full pipe.
    stderr: Option<mpsc::Receiver<String>>,
}

impl Process {
    /// Spawns `command` (its arguments, environment and pipes set by the caller); panics naming
    /// the program if it does not start.
    #[track_caller]
    pub fn spawn(command: &mut Command) -> Process {
        let program = command.get_program().to_string_lossy().into_owned();
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{program} does not start: {e}"));
        Process {
            child,
            program,
            stderr: None,
        }
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The child itself, for what this type does not cover.
    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The child's stdout (spawned with `Stdio::piped()`), taken.
    #[track_caller]
    pub fn take_stdout(&mut self) -> ChildStdout {
        self.child
            .stdout
            .take()
            .unwrap_or_else(|| panic!("{}'s stdout is not piped, or taken", self.program))
    }

    /// Sends `signal` (a name `kill` knows: `TERM`, `STOP`, `CONT`, `KILL`); panics if it
    /// cannot be sent.
    #[track_caller]
    pub fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.id().to_string())
            .status()
            .unwrap_or_else(|e| panic!("kill -{signal}: {e}"));
        assert!(sent.success(), "kill -{signal} {}: {sent}", self.program);
    }

    /// Kills the child (SIGKILL: no chance to write anything more) and reaps it; nothing if it
    /// has exited already.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the child to exit.
    #[track_caller]
    pub fn wait(&mut self) -> ExitStatus {
        self.child
            .wait()
            .unwrap_or_else(|e| panic!("waiting for {}: {e}", self.program))
    }

    /// The child's exit status, if it has exited.
    #[track_caller]
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child
            .try_wait()
            .unwrap_or_else(|e| panic!("waiting for {}: {e}", self.program))
    }

    /// The child's stderr lines as they come (spawned with `Stdio::piped()`, and those
    /// [`Process::wait_for_line`] has not read), read on a thread of their own; the channel
    /// closes when the child closes its stderr.
    #[track_caller]
    pub fn stderr_lines(&mut self) -> mpsc::Receiver<String> {
        self.lines();
        self.stderr.take().expect("set by lines")
    }

    /// The receiver of the stderr lines, made on first use.
    #[track_caller]
    fn lines(&mut self) -> &mpsc::Receiver<String> {
        if self.stderr.is_none() {
            let stderr = self.child.stderr.take().unwrap_or_else(|| {
                panic!(
                    "{}'s stderr is not piped, or its lines were taken",
                    self.program
                )
            });
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            self.stderr = Some(rx);
        }
        self.stderr.as_ref().expect("set above")
    }

    /// Waits up to `within` for a stderr line that `ready` accepts (the lines before it are
    /// dropped), and returns it; panics if none comes, saying whether the child closed its
    /// stderr (exited) first.
    #[track_caller]
    pub fn wait_for_line(&mut self, within: Duration, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + within;
        let program = self.program.clone();
        let lines = self.lines();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) if ready(&line) => return line,
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!(
                        "{program}: no such line on stderr within {} s",
                        within.as_secs_f64()
                    )
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    panic!("{program} closed its stderr (exited?) before such a line")
                }
            }
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::process::Stdio;

    #[test]
    fn a_dropped_process_is_killed_and_reaped() {
        let process = Process::spawn(Command::new("sleep").arg("30"));
        let id = process.id();
        drop(process);
        // Reaped: no such process any more, not even a zombie.
        let alive = Command::new("kill")
            .args(["-0", &id.to_string()])
            .stderr(Stdio::null())
            .status()
            .expect("kill runs");
        assert!(!alive.success(), "process {id} still exists");
    }

    #[test]
    fn waits_for_the_line_that_says_ready() {
        let mut process = Process::spawn(
            Command::new("sh")
                .args(["-c", "echo starting >&2; echo ready on 7 >&2; sleep 30"])
                .stderr(Stdio::piped()),
        );
        let line = process.wait_for_line(Duration::from_secs(10), |l| l.starts_with("ready"));
        assert_eq!(line, "ready on 7");
        process.signal("TERM");
        assert!(!process.wait().success());
    }
}
