//! Where a batch's answers go: written in input order in one of the output formats, counted
//! for the summary, shown on a progress bar when a person is watching, and read back by
//! `--resume` to skip the boards already answered.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::engine::{Answer, Status};
use crate::input::Format;

/// How answers are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// The judge's format for the input format (see [`text_line`]): one line per board.
    #[default]
    Text,
    /// One JSON object per board.
    Jsonl,
    /// A header, then one row per board: the JSONL fields as columns.
    Csv,
}

impl FromStr for OutputFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "text" => Ok(OutputFormat::Text),
            "jsonl" | "json" => Ok(OutputFormat::Jsonl),
            "csv" => Ok(OutputFormat::Csv),
            _ => Err(format!("unknown output {s:?}: expected text, jsonl or csv")),
        }
    }
}

/// Counts over a whole batch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub solved: usize,
    pub unsolvable: usize,
    pub invalid: usize,
    /// No answer this time (deadline, coordinator busy or unreachable): `--resume` retries them.
    pub failed: usize,
    /// Answers the coordinator had cached.
    pub cached: usize,
    pub nodes: u64,
    pub elapsed: Duration,
}

impl Summary {
    pub fn total(&self) -> usize {
        self.solved + self.unsolvable + self.invalid + self.failed
    }

    pub(crate) fn add(&mut self, r: &Answer) {
        match r.status {
            Status::Solved => self.solved += 1,
            Status::Unsolvable => self.unsolvable += 1,
            Status::Invalid => self.invalid += 1,
            Status::Failed => self.failed += 1,
        }
        self.cached += r.cached as usize;
        self.nodes += r.nodes;
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        write!(
            f,
            "{} boards: {} solved, {} unsolvable, {} invalid, {} failed, {} from cache; {} nodes; {:.2} s",
            self.total(),
            self.solved,
            self.unsolvable,
            self.invalid,
            self.failed,
            self.cached,
            self.nodes,
            secs
        )?;
        if self.total() > 0 {
            write!(f, " ({:.3} ms per board)", secs * 1e3 / self.total() as f64)?;
        }
        Ok(())
    }
}

/// One answer in the judge's text format for `format`: upper-case moves (lower-case for
/// `poj1077`), `unsolvable` (`This puzzle is not solvable.` for `uva10181`), or
/// `invalid: <what is wrong>`, or `failed: <reason>: <what happened>`.
pub fn text_line(record: &Answer, format: Format) -> String {
    match record.status {
        Status::Solved => {
            let moves = record.moves.clone().unwrap_or_default();
            if format == Format::Poj1077 {
                moves.to_ascii_lowercase()
            } else {
                moves
            }
        }
        Status::Unsolvable if format == Format::Uva10181 => "This puzzle is not solvable.".into(),
        Status::Unsolvable => "unsolvable".into(),
        Status::Invalid => format!("invalid: {}", record.error.as_deref().unwrap_or("")),
        Status::Failed => {
            let mut line = format!(
                "failed: {}: {}",
                record.reason.unwrap_or(crate::engine::FailReason::Internal),
                record.error.as_deref().unwrap_or("")
            );
            if let Some(moves) = &record.moves {
                // A deadline's best path: legal, not proven optimal.
                line.push_str(&format!("; best path {moves}"));
            }
            line
        }
    }
}

/// The answers' destination. Records must be given in input order.
pub struct Sink<W: Write> {
    out: W,
    output: OutputFormat,
    /// Still owed: the CSV header (not when appending to a file that has one).
    header: bool,
    summary: Summary,
    progress: Option<ProgressBar>,
}

impl<W: Write> Sink<W> {
    /// A sink writing `output` to `out`. `appending` says `out` continues an earlier run's
    /// file (no second CSV header).
    pub fn new(out: W, output: OutputFormat, appending: bool) -> Sink<W> {
        Sink {
            out,
            output,
            header: output == OutputFormat::Csv && !appending,
            summary: Summary::default(),
            progress: None,
        }
    }

    /// Shows a progress bar on stderr for `total` boards (if known).
    pub fn with_progress(mut self, total: Option<u64>) -> Sink<W> {
        let bar = ProgressBar::with_draw_target(total, indicatif::ProgressDrawTarget::stderr());
        let template = if total.is_some() {
            "[{elapsed_precise}] {wide_bar} {pos}/{len} boards, {per_sec}, eta {eta} {msg}"
        } else {
            "[{elapsed_precise}] {pos} boards, {per_sec} {msg}"
        };
        bar.set_style(
            ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        self.progress = Some(bar);
        self
    }

    /// Writes one answer.
    pub fn write(&mut self, record: &Answer, format: Format) -> io::Result<()> {
        self.summary.add(record);
        match self.output {
            OutputFormat::Text => writeln!(self.out, "{}", text_line(record, format))?,
            OutputFormat::Jsonl => {
                serde_json::to_writer(&mut self.out, record)?;
                writeln!(self.out)?;
            }
            OutputFormat::Csv => {
                let mut w = csv::WriterBuilder::new()
                    .has_headers(std::mem::take(&mut self.header))
                    .from_writer(&mut self.out);
                w.serialize(record).map_err(io::Error::other)?;
                w.flush()?;
            }
        }
        if let Some(bar) = &self.progress {
            bar.inc(1);
            if self.summary.cached > 0 {
                bar.set_message(format!("{} from cache", self.summary.cached));
            }
        }
        Ok(())
    }

    /// Says on the progress bar (if any) what the run is waiting for; `None` clears it.
    pub fn waiting(&mut self, note: Option<&str>) {
        if let Some(bar) = &self.progress {
            match note {
                Some(note) => bar.set_message(note.to_string()),
                None if self.summary.cached > 0 => {
                    bar.set_message(format!("{} from cache", self.summary.cached))
                }
                None => bar.set_message(""),
            }
        }
    }

    /// Flushes what was written, so a reader (or a later `--resume`) sees it.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes, clears the progress bar and returns the counts.
    pub fn finish(mut self) -> io::Result<Summary> {
        self.out.flush()?;
        if let Some(bar) = self.progress.take() {
            bar.finish_and_clear();
        }
        Ok(self.summary)
    }
}

/// Opens `path` to continue an earlier run: cuts off a last line the crash left unfinished,
/// drops the answers that `failed` (they are tried again), and returns the file (positioned at
/// its end) with the input indices it already answers. Text output has no indices (its lines
/// are in input order), so there everything from the first failed answer on is tried again.
pub fn resume(path: &Path, output: OutputFormat) -> io::Result<(File, HashSet<usize>)> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    let mut done = HashSet::new();
    let mut kept = String::new();
    let mut changed = false;
    let mut reader = BufReader::new(&mut file);
    let mut line = String::new();
    let mut number = 0usize;
    loop {
        line.clear();
        let read = reader.read_line(&mut line)?;
        if read == 0 {
            break;
        }
        if !line.ends_with('\n') {
            // Cut short by a crash: written again.
            changed = true;
            break;
        }
        let trimmed = line.trim_end_matches(['\n', '\r']);
        let (index, failed) = match output {
            // One line per board, in input order.
            OutputFormat::Text => (Some(number), trimmed.starts_with("failed: ")),
            OutputFormat::Jsonl => {
                let value = serde_json::from_str::<serde_json::Value>(trimmed).ok();
                let index = value
                    .as_ref()
                    .and_then(|v| v.get("index")?.as_u64())
                    .map(|i| i as usize);
                let failed = value
                    .is_some_and(|v| v.get("status").and_then(|s| s.as_str()) == Some("failed"));
                (index, failed)
            }
            OutputFormat::Csv => {
                let mut fields = trimmed.split(',');
                let index = fields.next().and_then(|f| f.parse::<usize>().ok());
                (index, fields.next() == Some("failed"))
            }
        };
        match index {
            Some(_) if failed && output == OutputFormat::Text => {
                changed = true;
                break;
            }
            Some(_) if failed => changed = true,
            Some(i) => {
                done.insert(i);
                kept.push_str(&line);
            }
            None if output == OutputFormat::Csv && number == 0 => kept.push_str(&line), // the header
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{} line {}: not a {output:?} answer; --resume needs the file an earlier run with the same --output wrote",
                        path.display(),
                        number + 1
                    ),
                ));
            }
        }
        number += 1;
    }
    drop(reader);
    if changed {
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(kept.as_bytes())?;
        file.flush()?;
    }
    file.seek(SeekFrom::End(0))?;
    Ok((file, done))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(index: usize, moves: &str) -> Answer {
        Answer::solved(index, moves.to_string()).costing(
            7,
            index.is_multiple_of(2),
            std::time::Instant::now(),
        )
    }

    fn write_all(output: OutputFormat, records: &[Answer], appending: bool) -> String {
        let mut out = Vec::new();
        let mut sink = Sink::new(&mut out, output, appending);
        for r in records {
            sink.write(r, Format::Lines).unwrap();
        }
        let summary = sink.finish().unwrap();
        assert_eq!(summary.total(), records.len());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn csv_has_one_header_and_one_row_per_board() {
        let text = write_all(OutputFormat::Csv, &[record(0, "RD"), record(1, "")], false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "index,status,moves,length,optimal,lower_bound,nodes,millis,cached,error,reason"
        );
        assert!(
            lines[1].starts_with("0,solved,RD,2,true,2,7,"),
            "{}",
            lines[1]
        );
        assert_eq!(lines.len(), 3);
        let appended = write_all(OutputFormat::Csv, &[record(2, "L")], true);
        assert!(appended.starts_with("2,solved,L,1,"), "{appended}");
    }

    #[test]
    fn resume_reads_the_indices_and_cuts_an_unfinished_line() {
        let dir = tempfile::tempdir().unwrap();
        for output in [OutputFormat::Text, OutputFormat::Jsonl, OutputFormat::Csv] {
            let path = dir.path().join(format!("{output:?}"));
            let full = write_all(
                output,
                &[record(0, "R"), record(1, "D"), record(2, "L")],
                false,
            );
            // A crash in the middle of the third answer.
            let cut = full.trim_end().rfind('\n').unwrap() + 2;
            std::fs::write(&path, &full[..cut]).unwrap();
            let (mut file, done) = resume(&path, output).unwrap();
            assert_eq!(done, HashSet::from([0, 1]), "{output:?}");
            let mut sink = Sink::new(&mut file, output, true);
            sink.write(&record(2, "L"), Format::Lines).unwrap();
            sink.finish().unwrap();
            drop(file);
            let resumed = std::fs::read_to_string(&path).unwrap();
            let strip = |s: &str| -> Vec<String> {
                // Times differ between runs; compare everything else.
                s.lines()
                    .map(|l| {
                        l.split("millis")
                            .next()
                            .unwrap_or(l)
                            .split(",0.")
                            .next()
                            .unwrap_or(l)
                            .to_string()
                    })
                    .collect()
            };
            assert_eq!(strip(&resumed), strip(&full), "{output:?}");
        }
    }

    #[test]
    fn resume_tries_failed_answers_again() {
        let dir = tempfile::tempdir().unwrap();
        let failed = Answer::failed(1, crate::engine::FailReason::Deadline, "deadline exceeded");
        for (output, expected) in [
            (OutputFormat::Jsonl, HashSet::from([0, 2])),
            (OutputFormat::Csv, HashSet::from([0, 2])),
            // Text lines carry no index: everything from the failed one on is redone.
            (OutputFormat::Text, HashSet::from([0])),
        ] {
            let path = dir.path().join(format!("failed-{output:?}"));
            let full = write_all(
                output,
                &[record(0, "R"), failed.clone(), record(2, "L")],
                false,
            );
            assert!(full.contains("failed"), "{full}");
            std::fs::write(&path, &full).unwrap();
            let (file, done) = resume(&path, output).unwrap();
            drop(file);
            assert_eq!(done, expected, "{output:?}");
            let kept = std::fs::read_to_string(&path).unwrap();
            assert!(!kept.contains("failed"), "{output:?}: {kept}");
            let lines = kept.lines().count();
            let header = usize::from(output == OutputFormat::Csv);
            assert_eq!(lines, expected.len() + header, "{output:?}: {kept}");
        }
    }

    #[test]
    fn resume_refuses_a_file_of_another_format() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.txt");
        std::fs::write(&path, "RDL\nUU\n").unwrap();
        let err = resume(&path, OutputFormat::Jsonl).unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
    }
}
