//! Output for people and for scripts: colour only on a terminal (never with `NO_COLOR` or
//! `TERM=dumb`), aligned tables, JSON, and writes that end quietly when a pipe closes
//! (`baton locks | head -1`).

use std::io::{self, IsTerminal, Write};

use crate::exit::{CliError, OS_ERROR};

/// Whether colour may be used on a stream that is (or is not) a terminal.
fn colour_allowed(is_terminal: bool) -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    is_terminal && !no_color && !dumb
}

/// Styling for one stream: ANSI escapes when colour is allowed there, plain text otherwise.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    colour: bool,
}

impl Style {
    /// Styling for standard output.
    pub fn stdout() -> Self {
        Style {
            colour: colour_allowed(io::stdout().is_terminal()),
        }
    }

    /// Styling for standard error.
    pub fn stderr() -> Self {
        Style {
            colour: colour_allowed(io::stderr().is_terminal()),
        }
    }

    /// Whether this stream gets colour.
    pub fn is_coloured(self) -> bool {
        self.colour
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// Bold (headings).
    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Red (errors).
    pub fn red(self, text: &str) -> String {
        self.paint("1;31", text)
    }

    /// Green (good outcomes).
    pub fn green(self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Yellow (warnings).
    pub fn yellow(self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Dim (secondary detail).
    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }
}

/// Writes `text` to standard output. A closed pipe ends the process quietly with status 0:
/// the reader has what it wanted.
pub fn print(text: &str) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(CliError::new(
            OS_ERROR,
            format!("cannot write to standard output: {e}"),
        )),
    }
}

/// Writes a value as one line of JSON to standard output.
pub fn print_json(value: &impl serde::Serialize) -> Result<(), CliError> {
    let text = serde_json::to_string(value)
        .map_err(|e| CliError::new(OS_ERROR, format!("cannot encode JSON output: {e}")))?;
    print(&format!("{text}\n"))
}

/// A line of progress on standard error, rewritten in place as work goes on, shown only where
/// standard error is a terminal (not `TERM=dumb`) and only once the work has taken a moment
/// ([`Progress::DELAY`]: a quick listing shows none), then at most ten times a second. Erased by
/// [`Progress::clear`], or when dropped, so that what follows starts on a clean line.
pub struct Progress {
    on: bool,
    started: std::time::Instant,
    shown: Option<std::time::Instant>,
}

impl Progress {
    /// How long work runs before its progress is shown.
    pub const DELAY: std::time::Duration = std::time::Duration::from_millis(300);

    /// Progress on standard error, if it is a terminal.
    pub fn stderr() -> Self {
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        Progress {
            on: io::stderr().is_terminal() && !dumb,
            started: std::time::Instant::now(),
            shown: None,
        }
    }

    /// Shows `text` (one line, no newline) in place of the last, if it is time to.
    pub fn show(&mut self, text: impl FnOnce() -> String) {
        let now = std::time::Instant::now();
        let due = match self.shown {
            None => now.duration_since(self.started) >= Self::DELAY,
            Some(last) => now.duration_since(last) >= std::time::Duration::from_millis(100),
        };
        if self.on && due {
            let _ = write!(io::stderr().lock(), "\r\x1b[K{}", text());
            self.shown = Some(now);
        }
    }

    /// The seconds since the work started, for a line that has no count to show.
    pub fn elapsed_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// Erases the line, if one was shown.
    pub fn clear(&mut self) {
        if self.shown.take().is_some() {
            let _ = write!(io::stderr().lock(), "\r\x1b[K");
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

/// A diagnostic line on standard error, prefixed `baton: ` (write errors are ignored: there is
/// nowhere left to report them).
pub fn say(text: &str) {
    let _ = writeln!(io::stderr().lock(), "baton: {text}");
}

/// A warning on standard error.
pub fn warn(text: &str) {
    let style = Style::stderr();
    say(&format!("{} {text}", style.yellow("warning:")));
}

/// An error on standard error, with its hint on the next line.
pub fn error(e: &CliError) {
    let style = Style::stderr();
    say(&format!("{} {}", style.red("error:"), e.message));
    if let Some(hint) = &e.hint {
        let _ = writeln!(io::stderr().lock(), "  {} {hint}", style.dim("hint:"));
    }
}

/// Lays out rows under headers in aligned columns (two spaces apart), headers in bold.
pub fn table(style: Style, headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>, bold: bool| {
        let last = cells.len().saturating_sub(1);
        let mut out = String::new();
        for (i, (cell, width)) in cells.iter().zip(&widths).enumerate() {
            let padded = if i == last {
                cell.clone()
            } else {
                format!("{cell:<width$}  ")
            };
            out.push_str(&if bold { style.bold(&padded) } else { padded });
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
        out
    };
    let mut out = line(headers.iter().map(|h| (*h).to_owned()).collect(), true);
    for row in rows {
        out.push_str(&line(row.clone(), false));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_columns() {
        let rows = vec![
            vec!["nightly-digest".to_owned(), "12".to_owned()],
            vec!["a".to_owned(), "3".to_owned()],
        ];
        let text = table(Style { colour: false }, &["NAME", "TOKEN"], &rows);
        assert_eq!(
            text,
            "NAME            TOKEN\nnightly-digest  12\na               3\n"
        );
    }

    #[test]
    fn plain_style_adds_no_escapes() {
        let plain = Style { colour: false };
        assert_eq!(plain.red("x"), "x");
        let coloured = Style { colour: true };
        assert_eq!(coloured.bold("x"), "\x1b[1mx\x1b[0m");
    }
}
