//! The rows of the lock table: one listed lock with the text of its cells (escaped once, when
//! the row is stored, with the `--scan` table's own escaping), the columns, and the age that
//! sorting and the AGE column share.
//!
//! The PID and COMMAND cells name who holds the lock *now* when the judge saw holders (the
//! first one, with `+N` for the others), else the owner the lock records.

use locksmith::Verdict;
use locksmith::report::table;
use locksmith::scan::Finding;

use super::text;

/// The table's columns: the report's ([`table::Column`]), those of its default table.
pub use locksmith::report::table::Column;

/// The columns the terminal UI shows, in display order; also its sort keys.
pub const COLUMNS: [Column; 7] = Column::DEFAULT;

/// The sort key after `c` (`s` cycles through [`COLUMNS`]).
pub fn next_sort(c: Column) -> Column {
    let at = COLUMNS.iter().position(|&k| k == c).unwrap_or(0);
    COLUMNS[(at + 1) % COLUMNS.len()]
}

/// The text shown in each cell of a row, escaped once when the row is stored, and the typed
/// values sorting needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cells {
    pub dialect: String,
    pub pid: String,
    /// The PID the PID cell shows (the PID column sorts by it).
    pub owner_pid: Option<i64>,
    pub command: String,
    pub host: String,
    pub path: String,
    /// Lowercased text the filter searches.
    pub search: String,
    /// The display width of each text cell, by [`Column::index`] (0 for `-`, for the
    /// verdict and age, which are measured as they are drawn, and for a column not shown).
    pub widths: [u16; Column::ALL.len()],
}

impl Cells {
    /// The cells of the `--scan` table (same columns, same escaping), with the holders now in
    /// the PID and COMMAND cells, plus what sorting and filtering need.
    fn of(f: &Finding) -> Cells {
        let j = &f.judgement;
        let mut row = table::Row::of(f);
        let holders = holders_now(j);
        if let Some(first) = holders.first() {
            row.pid = Some(i64::from(first.pid));
            row.command = first
                .name
                .clone()
                .or_else(|| {
                    j.process
                        .as_ref()
                        .filter(|p| p.pid == first.pid)
                        .map(|p| p.name.clone())
                })
                .map(Into::into);
        }
        let owner_pid = row.pid;
        let cell = |c| row.cell(c, 0, false);
        let [dialect, mut pid, command, host, path] = [
            table::Column::Dialect,
            table::Column::Pid,
            table::Column::Command,
            table::Column::Host,
            table::Column::Path,
        ]
        .map(cell);
        if holders.len() > 1 {
            pid.push_str(&format!("+{}", holders.len() - 1));
        }
        let search = [j.verdict().as_str(), &dialect, &pid, &command, &host, &path]
            .join("\u{1f}")
            .to_lowercase();
        let mut cells = Cells {
            dialect,
            pid,
            owner_pid,
            command,
            host,
            path,
            search,
            widths: [0; Column::ALL.len()],
        };
        for c in COLUMNS {
            if let Some(s) = cells.text(c).filter(|&s| s != "-") {
                cells.widths[c.index()] = u16::try_from(text::width(s)).unwrap_or(u16::MAX);
            }
        }
        cells
    }

    /// The text of column `c`'s cell, for the columns drawn from text (not the verdict, the
    /// age, nor a column the UI does not show).
    pub fn text(&self, c: Column) -> Option<&str> {
        match c {
            Column::Dialect => Some(&self.dialect),
            Column::Pid => Some(&self.pid),
            Column::Command => Some(&self.command),
            Column::Host => Some(&self.host),
            Column::Path => Some(&self.path),
            _ => None,
        }
    }
}

/// The holders of a lock visible here, once each, in the judge's order.
pub fn holders_now(j: &locksmith::Judgement) -> Vec<&locksmith::Holder> {
    let mut out: Vec<&locksmith::Holder> = Vec::new();
    for h in &j.holders {
        if h.pid > 0 && !out.iter().any(|o| o.pid == h.pid) {
            out.push(h);
        }
    }
    out
}

/// The owner and mode of a lock file (its own, not a symlink's target), as last seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    pub uid: u32,
    pub gid: u32,
    /// `st_mode` (file type and permission bits).
    pub mode: u32,
    /// The owner's name, when the user database has one.
    pub user: Option<String>,
}

/// One listed lock.
#[derive(Debug, Clone)]
pub struct Row {
    pub finding: Finding,
    pub cells: Cells,
    /// Its owner and mode, once the workers have looked.
    pub file: Option<FileMeta>,
    /// The scan that found it last (its generation; 0: none yet).
    pub found_in: u64,
}

impl Row {
    pub fn new(finding: Finding) -> Row {
        Row {
            cells: Cells::of(&finding),
            finding,
            file: None,
            found_in: 0,
        }
    }

    pub fn verdict(&self) -> Verdict {
        self.finding.judgement.verdict()
    }

    /// A lock a flag keeps from an unattended reclaim (changes never saved: removing it
    /// loses work).
    pub fn unsaved(&self) -> bool {
        self.finding.judgement.keeping().is_some()
    }

    /// Whether this row shows, sorts and filters as `other` does (same cells, verdict and age):
    /// it can take `other`'s place in the table as it is.
    pub fn shows_as(&self, other: &Row) -> bool {
        self.verdict() == other.verdict()
            && self.unsaved() == other.unsaved()
            && self.finding.modified_ms == other.finding.modified_ms
            && self.cells == other.cells
    }

    /// The program that does the action its dialect offers for it (recovering its unsaved
    /// changes), when offered for its verdict and the lock names a program that can.
    /// Whether this user may run it is checked when it is about to run (see `suspend`).
    pub fn recovery(&self) -> Option<&'static str> {
        let f = &self.finding;
        locksmith::dialect::offered(f.dialect, &f.path, &f.content, &f.judgement)?
            .1
            .program
    }
}

/// How old a lock is at `now` (unknown mtimes sort as oldest).
pub fn age_ms(r: &Row, now: i64) -> i64 {
    r.finding.modified_ms.map_or(i64::MAX, |m| now - m)
}
