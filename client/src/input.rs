//! Reading boards from batch input, as a stream: one [`Item`] per board, in input order.
//!
//! Formats:
//! - `lines`: one board per line; blank lines are skipped, and `#` starts a comment.
//! - `uva10181`: a first line N, then N puzzles of 4 lines × 4 numbers (0 = blank).
//! - `poj1077`: one 3x3 board per line, `x` = blank.
//! - `auto`: `uva10181` when the first line is a lone number, `poj1077` when it holds an `x` and
//!   nine tokens, else `lines`.

use std::io::{self, BufRead};

use std::str::FromStr;

use npuzzle_solver::Shape;

/// An input format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Auto,
    Lines,
    Uva10181,
    Poj1077,
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Format::Auto),
            "lines" => Ok(Format::Lines),
            "uva10181" | "uva" => Ok(Format::Uva10181),
            "poj1077" | "poj" | "hdu1043" => Ok(Format::Poj1077),
            _ => Err(format!(
                "unknown format {s:?}: expected auto, lines, uva10181 or poj1077"
            )),
        }
    }
}

/// One board to solve, or the reason the input for it could not even be cut out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// 0-based position among the boards of the input.
    pub index: usize,
    /// 1-based line where the board starts.
    pub line: usize,
    /// The board's text.
    pub text: String,
    /// The shape the format implies, if any.
    pub shape: Option<Shape>,
    /// Set when the input around this board is broken.
    pub error: Option<String>,
}

/// Streams [`Item`]s out of a reader. The format is fixed at the first board (`auto` decides
/// there).
pub struct Reader<R> {
    lines: std::iter::Enumerate<io::Split<R>>,
    format: Format,
    next_index: usize,
    /// uva10181: puzzles announced by the header and not yet read.
    announced: Option<usize>,
    /// A line read while detecting the format, not yet used.
    pending: Option<(usize, String)>,
    finished: bool,
}

/// A line without its `# comment`, if anything is left.
fn content(line: &str) -> Option<&str> {
    let t = line.split('#').next().unwrap_or("").trim();
    (!t.is_empty()).then_some(t)
}

impl<R: BufRead> Reader<R> {
    pub fn new(reader: R, format: Format) -> Reader<R> {
        Reader {
            lines: reader.split(b'\n').enumerate(),
            format,
            next_index: 0,
            announced: None,
            pending: None,
            finished: false,
        }
    }

    /// The format in use (`Auto` until the first line has been read).
    pub fn format(&self) -> Format {
        self.format
    }

    /// The next line that holds something, with its 1-based number.
    fn next_line(&mut self) -> Option<io::Result<(usize, String)>> {
        if let Some(p) = self.pending.take() {
            return Some(Ok(p));
        }
        for (i, line) in self.lines.by_ref() {
            // Bytes that are not UTF-8 become U+FFFD and are then reported as unknown tokens,
            // so one bad line cannot stop a batch.
            let bytes = match line {
                Err(e) => return Some(Err(e)),
                Ok(bytes) => bytes,
            };
            if let Some(text) = content(&String::from_utf8_lossy(&bytes)) {
                return Some(Ok((i + 1, text.to_string())));
            }
        }
        None
    }

    fn item(
        &mut self,
        line: usize,
        text: String,
        shape: Option<Shape>,
        error: Option<String>,
    ) -> Item {
        let index = self.next_index;
        self.next_index += 1;
        Item {
            index,
            line,
            text,
            shape,
            error,
        }
    }

    fn detect(&mut self) -> io::Result<()> {
        let Some(first) = self.next_line() else {
            self.format = Format::Lines;
            return Ok(());
        };
        let (n, line) = first?;
        let tokens: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|t| !t.is_empty())
            .collect();
        self.format = if tokens.len() == 1 && tokens[0].parse::<usize>().is_ok() {
            Format::Uva10181
        } else if tokens.len() == 9 && tokens.iter().any(|t| t.eq_ignore_ascii_case("x")) {
            Format::Poj1077
        } else {
            Format::Lines
        };
        self.pending = Some((n, line));
        Ok(())
    }

    fn next_uva(&mut self) -> Option<io::Result<Item>> {
        let shape = Shape::new(4, 4).ok();
        if self.announced.is_none() {
            let (n, header) = match self.next_line()? {
                Ok(x) => x,
                Err(e) => return Some(Err(e)),
            };
            match header.trim().parse::<usize>() {
                Ok(count) => self.announced = Some(count),
                Err(_) => {
                    self.finished = true;
                    let msg = format!(
                        "uva10181 input must start with the number of puzzles, found {:?}",
                        header.trim()
                    );
                    return Some(Ok(self.item(n, header, shape, Some(msg))));
                }
            }
        }
        let left = self.announced.unwrap_or(0);
        if left == 0 {
            self.finished = true;
            return None;
        }
        self.announced = Some(left - 1);
        let mut text = String::new();
        let mut start = None;
        for got in 0..4 {
            match self.next_line() {
                Some(Ok((n, l))) => {
                    start.get_or_insert(n);
                    text.push_str(&l);
                    text.push('\n');
                }
                Some(Err(e)) => return Some(Err(e)),
                None => {
                    let msg = if got == 0 && left == 1 {
                        "missing puzzle: the input ended before the number of puzzles its first line announced".to_string()
                    } else if got == 0 {
                        // One answer for all the puzzles that never came: a header may announce
                        // any number, and must not make the reader endless.
                        self.finished = true;
                        let given = self.next_index;
                        format!(
                            "missing puzzles: the input ended after {given} of the {} puzzles its first line announced",
                            given + left
                        )
                    } else {
                        format!(
                            "incomplete puzzle: expected 4 lines of 4 numbers, the input ended after {got}"
                        )
                    };
                    return Some(Ok(self.item(start.unwrap_or(0), text, shape, Some(msg))));
                }
            }
        }
        Some(Ok(self.item(start.unwrap_or(0), text, shape, None)))
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = io::Result<Item>;

    fn next(&mut self) -> Option<io::Result<Item>> {
        if self.finished {
            return None;
        }
        if self.format == Format::Auto
            && let Err(e) = self.detect()
        {
            return Some(Err(e));
        }
        match self.format {
            Format::Uva10181 => self.next_uva(),
            Format::Poj1077 | Format::Lines | Format::Auto => {
                let shape = if self.format == Format::Poj1077 {
                    Shape::new(3, 3).ok()
                } else {
                    None
                };
                match self.next_line()? {
                    Ok((n, l)) => Some(Ok(self.item(n, l, shape, None))),
                    Err(e) => Some(Err(e)),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, format: Format) -> (Format, Vec<Item>) {
        let mut r = Reader::new(text.as_bytes(), format);
        let items: Vec<Item> = r.by_ref().map(|i| i.unwrap()).collect();
        (r.format(), items)
    }

    #[test]
    fn lines_skip_blanks_and_comments() {
        let (f, items) = read(
            "# boards\n1 2 3 4 5 6 7 8 0\n\n  \n8 7 6 5 4 3 2 1 0\n",
            Format::Auto,
        );
        assert_eq!(f, Format::Lines);
        assert_eq!(items.len(), 2);
        assert_eq!((items[1].index, items[1].line), (1, 5));
    }

    #[test]
    fn detects_uva_and_reads_four_lines_per_puzzle() {
        let text = "2\n2 3 4 0\n1 5 7 8\n9 6 10 12\n13 14 11 15\n\n13 1 2 4\n5 0 3 7\n9 6 10 12\n15 8 11 14\n";
        let (f, items) = read(text, Format::Auto);
        assert_eq!(f, Format::Uva10181);
        assert_eq!(items.len(), 2);
        assert_eq!(items[1].line, 7);
        assert!(items.iter().all(|i| i.error.is_none()));
    }

    #[test]
    fn uva_reports_missing_and_incomplete_puzzles() {
        let (_, items) = read(
            "3\n1 2 3 4\n5 6 7 8\n9 10 11 12\n13 14 15 0\n1 2 3 4\n",
            Format::Uva10181,
        );
        assert_eq!(items.len(), 3);
        assert!(
            items[1]
                .error
                .as_deref()
                .unwrap()
                .starts_with("incomplete puzzle")
        );
        assert!(
            items[2]
                .error
                .as_deref()
                .unwrap()
                .starts_with("missing puzzle")
        );
        let (_, items) = read(
            "2\n1 2 3 4\n5 6 7 8\n9 10 11 12\n13 14 15 0\n",
            Format::Uva10181,
        );
        assert!(
            items[1]
                .error
                .as_deref()
                .unwrap()
                .starts_with("missing puzzle")
        );
        let (_, items) = read("two\n", Format::Uva10181);
        assert!(
            items[0]
                .error
                .as_deref()
                .unwrap()
                .contains("number of puzzles")
        );
    }

    #[test]
    fn detects_poj() {
        let (f, items) = read("2 3 4 1 5 x 7 6 8\n", Format::Auto);
        assert_eq!(f, Format::Poj1077);
        assert_eq!(items[0].shape, Shape::new(3, 3).ok());
    }
}
