//! The rows of the lock table and the view of them: every listed lock (a [`Row`], keyed by
//! its path), and the rows shown, filtered (by text and by verdict) and sorted (by a column,
//! then by path: a total order, paths being unique).
//!
//! Invariants: a path has at most one row (a scan or a re-judge replaces it in place); the
//! view, kept up to date a change at a time (rows added or shown differently join it where a
//! binary search puts them; a row removed, a new filter or sort rebuild it), is always the view
//! a rebuild from scratch makes (a property test checks); the column widths are those of the
//! widest cells shown. Marks are paths, and go with their rows.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use locksmith::Verdict;
use locksmith::scan::Finding;

use super::super::super::rows::{Column, FileMeta, Row, age_ms};
use super::columns::{self, ContentWidths};

/// A periodic re-judge round judges every listed lock up to this many; beyond, the rows on
/// screen, the marked ones and this many others in turn.
pub const REJUDGE_SLICE: usize = 5_000;

/// The listed locks and the view of them.
#[derive(Debug)]
pub struct List {
    rows: Vec<Row>,
    by_path: HashMap<PathBuf, usize>,
    /// Indices into `rows`: filtered and sorted.
    view: Vec<usize>,
    /// What changed in `rows` or the settings since the view was built.
    change: Change,
    /// Indices into `rows` in path order (a full rebuild of the view sorts these by the sort
    /// column alone, keeping ties in path order), but for ...
    by_path_order: Vec<usize>,
    /// ... the rows added since the last refresh, which join it then.
    unordered: Vec<usize>,
    /// The widest cell of each column among the visible rows.
    content: ContentWidths,
    filter: String,
    verdict_filter: Option<Verdict>,
    sort: Column,
    descending: bool,
    /// How many rows the current scan has found (each row knows the scan that found it last:
    /// rows missing from a complete scan are dropped).
    found_now: usize,
    /// Rows marked with Space.
    marks: HashSet<PathBuf>,
    /// Where the next re-judge round of a long list starts, in `rows`.
    rejudge_next: usize,
}

impl Default for List {
    fn default() -> Self {
        List {
            rows: Vec::new(),
            by_path: HashMap::new(),
            view: Vec::new(),
            change: Change::None,
            by_path_order: Vec::new(),
            unordered: Vec::new(),
            content: ContentWidths::default(),
            filter: String::new(),
            verdict_filter: None,
            sort: Column::Verdict,
            descending: false,
            found_now: 0,
            marks: HashSet::new(),
            rejudge_next: 0,
        }
    }
}

impl List {
    // ----- reading -----

    /// All listed rows, unfiltered.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The rows shown, in order (as of the last [`List::refresh`]).
    pub fn visible(&self) -> impl ExactSizeIterator<Item = &Row> + Clone {
        self.view.iter().map(|&i| &self.rows[i])
    }

    /// How many rows are shown.
    pub fn shown(&self) -> usize {
        self.view.len()
    }

    /// The row shown at `pos`.
    pub fn shown_at(&self, pos: usize) -> Option<&Row> {
        self.view.get(pos).map(|&i| &self.rows[i])
    }

    /// Where the row of `path` is shown, if it is (a look down the view).
    pub fn position(&self, path: &Path) -> Option<usize> {
        self.view
            .iter()
            .position(|&i| self.rows[i].finding.path == path)
    }

    /// Where the row of `path` is shown, found by its sort key (the view is in order), as of
    /// the clock `now`; `None` when it is not shown.
    pub fn locate(&self, path: &Path, now: i64) -> Option<usize> {
        let shown = shown(&self.rows, &self.filter, self.verdict_filter);
        let order = order(&self.rows, now, self.sort, self.descending);
        self.by_path
            .get(path)
            .filter(|&&i| shown(i))
            .and_then(|&i| self.view.binary_search_by(|&v| order(v, i)).ok())
    }

    /// The row of `path`, shown or not.
    pub fn get(&self, path: &Path) -> Option<&Row> {
        self.by_path.get(path).map(|&i| &self.rows[i])
    }

    pub fn contains(&self, path: &Path) -> bool {
        self.by_path.contains_key(path)
    }

    /// How many listed locks have each verdict, in [`Verdict::ALL`] order.
    pub fn counts(&self) -> [usize; 5] {
        let mut out = [0; 5];
        for r in &self.rows {
            let i = Verdict::ALL
                .iter()
                .position(|&v| v == r.verdict())
                .unwrap_or(0);
            out[i] += 1;
        }
        out
    }

    /// The widest cell of each column among the visible rows.
    pub fn content_widths(&self) -> &ContentWidths {
        &self.content
    }

    pub fn filter(&self) -> &str {
        &self.filter
    }

    pub fn verdict_filter(&self) -> Option<Verdict> {
        self.verdict_filter
    }

    pub fn sort(&self) -> Column {
        self.sort
    }

    pub fn descending(&self) -> bool {
        self.descending
    }

    /// Whether a filter (text or verdict) is set.
    pub fn filtered(&self) -> bool {
        !self.filter.is_empty() || self.verdict_filter.is_some()
    }

    pub fn is_marked(&self, path: &Path) -> bool {
        self.marks.contains(path)
    }

    /// How many rows are marked.
    pub fn marked(&self) -> usize {
        self.marks.len()
    }

    /// The marked rows, in path order.
    pub fn marked_rows(&self) -> Vec<&Row> {
        let mut rows: Vec<&Row> = self
            .rows
            .iter()
            .filter(|r| self.marks.contains(&r.finding.path))
            .collect();
        rows.sort_by(|a, b| a.finding.path.cmp(&b.finding.path));
        rows
    }

    /// How many rows the current scan has found.
    pub fn found_now(&self) -> usize {
        self.found_now
    }

    /// The scan `generation` ran to its end, or could not read any root (they were removed,
    /// say): the rows it did not find are gone.
    pub fn drop_not_found(&mut self, generation: u64) {
        let gone: Vec<PathBuf> = self
            .rows
            .iter()
            .filter(|r| r.found_in != generation)
            .map(|r| r.finding.path.clone())
            .collect();
        self.remove_all(&gone, generation);
    }

    /// The locks the next periodic re-judge round judges: every listed lock, or on a long
    /// list the rows on screen (`page` rows from `offset`), the marked ones and the next
    /// [`REJUDGE_SLICE`] of the others in turn (a round at a time, so that a million listed
    /// locks cost a few thousand re-judged every round, not a million).
    pub fn rejudge_round(&mut self, offset: usize, page: usize) -> Vec<Finding> {
        if self.rows.len() <= REJUDGE_SLICE {
            return self.rows.iter().map(|r| r.finding.clone()).collect();
        }
        let mut take: Vec<usize> = self.view[offset.min(self.view.len())..]
            .iter()
            .take(page)
            .copied()
            .collect();
        take.extend(
            self.marks
                .iter()
                .filter_map(|p| self.by_path.get(p).copied()),
        );
        let start = self.rejudge_next % self.rows.len();
        take.extend((start..start + REJUDGE_SLICE).map(|i| i % self.rows.len()));
        self.rejudge_next = (start + REJUDGE_SLICE) % self.rows.len();
        take.sort_unstable();
        take.dedup();
        take.into_iter()
            .map(|i| self.rows[i].finding.clone())
            .collect()
    }

    // ----- changing -----

    /// A scan starts: it has found nothing yet.
    pub fn scan_started(&mut self) {
        self.found_now = 0;
    }

    /// Lists `f`, in place of its row if it has one; `found_in`: the scan that found it (else
    /// the row keeps the scan that found it last); `generation`: the current scan.
    pub fn upsert(&mut self, f: Finding, found_in: Option<u64>, generation: u64) {
        let mut row = Row::new(f);
        let counted = |was: u64| usize::from(found_in == Some(generation) && was != generation);
        match self.by_path.get(&row.finding.path) {
            Some(&i) => {
                row.file = self.rows[i].file.take();
                let was = self.rows[i].found_in;
                self.found_now += counted(was);
                row.found_in = found_in.unwrap_or(was);
                // A lock judged again as it was shown (most are, each round) keeps its place.
                let same = row.shows_as(&self.rows[i]);
                self.rows[i] = row;
                if !same {
                    self.change.row(i, true);
                }
            }
            None => {
                self.found_now += counted(0);
                row.found_in = found_in.unwrap_or(0);
                let i = self.rows.len();
                self.by_path.insert(row.finding.path.clone(), i);
                self.rows.push(row);
                self.unordered.push(i);
                self.change.row(i, false);
            }
        }
    }

    /// The owners and modes of lock files (those listed).
    pub fn set_files(&mut self, files: Vec<(PathBuf, FileMeta)>) {
        for (path, meta) in files {
            if let Some(&i) = self.by_path.get(&path) {
                self.rows[i].file = Some(meta);
            }
        }
    }

    /// Drops the rows of `paths` (those listed) and their marks, in one pass over the rows
    /// whatever their number; `generation`: the current scan.
    pub fn remove_all(&mut self, paths: &[PathBuf], generation: u64) {
        let mut gone = vec![false; self.rows.len()];
        let mut any = false;
        for p in paths {
            if let Some(i) = self.by_path.remove(p.as_path()) {
                self.marks.remove(p.as_path());
                gone[i] = true;
                any = true;
                if self.rows[i].found_in == generation {
                    self.found_now -= 1;
                }
            }
        }
        if !any {
            return;
        }
        // Old index to new: the rows keep their order.
        let mut moved = vec![usize::MAX; self.rows.len()];
        let mut next = 0;
        for (i, g) in gone.iter().enumerate() {
            if !g {
                moved[i] = next;
                next += 1;
            }
        }
        let mut i = 0;
        self.rows.retain(|_| {
            i += 1;
            !gone[i - 1]
        });
        for v in self.by_path.values_mut() {
            *v = moved[*v];
        }
        let remap = |v: &mut Vec<usize>| {
            v.retain(|&i| !gone[i]);
            v.iter_mut().for_each(|i| *i = moved[*i]);
        };
        remap(&mut self.by_path_order);
        remap(&mut self.unordered);
        self.view.clear();
        self.change = Change::All;
    }

    /// Shows the rows whose text matches `filter`.
    pub fn set_filter(&mut self, filter: String) {
        self.filter = filter;
        self.change = Change::All;
    }

    /// Shows the rows of this verdict only (all of them: `None`).
    pub fn set_verdict_filter(&mut self, v: Option<Verdict>) {
        self.verdict_filter = v;
        self.change = Change::All;
    }

    /// Sorts by `c`: ascending when it is a new sort column, inverted when it is the same.
    pub fn sort_by(&mut self, c: Column) {
        if c == self.sort {
            self.descending = !self.descending;
        } else {
            self.sort = c;
            self.descending = false;
        }
        self.change = Change::All;
    }

    /// Inverts the order.
    pub fn invert(&mut self) {
        self.descending = !self.descending;
        self.change = Change::All;
    }

    /// Marks or unmarks the row of `path`.
    pub fn toggle_mark(&mut self, path: &Path) {
        if !self.marks.remove(path) {
            self.marks.insert(path.to_path_buf());
        }
    }

    /// Clears the marks; returns how many there were.
    pub fn clear_marks(&mut self) -> usize {
        let n = self.marks.len();
        self.marks.clear();
        n
    }

    /// Brings the view up to date with the rows and settings, sorting by age as of `now`;
    /// returns whether anything changed since the last refresh.
    pub fn refresh(&mut self, now: i64) -> bool {
        if !self.unordered.is_empty() {
            let mut new = std::mem::take(&mut self.unordered);
            let rows = &self.rows;
            let by_path = |a: usize, b: usize| rows[a].finding.path.cmp(&rows[b].finding.path);
            new.sort_unstable_by(|&a, &b| by_path(a, b));
            self.by_path_order = merge_sorted(&self.by_path_order, &new, &by_path);
        }
        match std::mem::take(&mut self.change) {
            Change::None => return false,
            Change::All => {
                self.view = self.rebuilt_view(now);
                self.content = columns::content_widths(self.visible());
            }
            Change::Rows { mut rows, changed } => {
                rows.sort_unstable();
                rows.dedup();
                if changed {
                    // Rows shown before and changed since leave their places first.
                    let mut out = vec![false; self.rows.len()];
                    for &i in &rows {
                        out[i] = true;
                    }
                    self.view.retain(|&i| !out[i]);
                }
                let shown = shown(&self.rows, &self.filter, self.verdict_filter);
                rows.retain(|&i| shown(i));
                let order = order(&self.rows, now, self.sort, self.descending);
                rows.sort_unstable_by(|&a, &b| order(a, b));
                self.view = merge_sorted(&self.view, &rows, &order);
                if changed {
                    self.content = columns::content_widths(self.visible());
                } else {
                    let widened = rows.iter().map(|&i| &self.rows[i]);
                    columns::widen(&mut self.content, widened);
                }
            }
        }
        true
    }

    /// The view built anew: the shown rows in path order, sorted by the sort column's key alone
    /// (a stable sort, so ties stay in path order, as [`order`] has them) with the keys gathered
    /// first, so that a million rows sort in a fraction of a second.
    fn rebuilt_view(&self, now: i64) -> Vec<usize> {
        let shown = shown(&self.rows, &self.filter, self.verdict_filter);
        let mut keyed: Vec<(i128, usize)> = Vec::new();
        let rows = &self.rows;
        let listed = self.by_path_order.iter().copied().filter(|&i| shown(i));
        // Text columns sort by the rank of their text among the distinct texts shown.
        let mut ranks: HashMap<&str, i128> = HashMap::new();
        for i in listed.clone() {
            if let Some(t) = text_key(self.sort, &rows[i]) {
                ranks.entry(t).or_default();
            }
        }
        let mut distinct: Vec<&str> = ranks.keys().copied().collect();
        distinct.sort_unstable();
        for (n, t) in distinct.into_iter().enumerate() {
            ranks.insert(t, n as i128);
        }
        for i in listed {
            let r = &rows[i];
            let key = match self.sort {
                Column::Verdict => r.verdict() as i128,
                Column::Pid => r.cells.owner_pid.map_or(i128::MIN, i128::from),
                Column::Age => i128::from(age_ms(r, now)),
                Column::Path => 0,
                _ => text_key(self.sort, r).map_or(0, |t| ranks[t]),
            };
            keyed.push((key, i));
        }
        if self.descending {
            keyed.sort_by_key(|&(k, _)| std::cmp::Reverse(k));
        } else {
            keyed.sort_by_key(|&(k, _)| k);
        }
        let mut view: Vec<usize> = keyed.into_iter().map(|(_, i)| i).collect();
        if self.descending && self.sort == Column::Path {
            view.reverse();
        }
        view
    }
}

/// What changed since the view was built: nothing, some rows (added, or shown differently
/// now), or anything (a row removed, the filter or the sort changed).
#[derive(Debug, Default)]
enum Change {
    #[default]
    None,
    Rows {
        rows: Vec<usize>,
        /// Some of `rows` were listed before (they may be in the view, at their old place).
        changed: bool,
    },
    All,
}

impl Change {
    /// The row at `i` was added (`listed: false`) or changed.
    fn row(&mut self, i: usize, listed: bool) {
        match self {
            Change::All => {}
            Change::None => {
                *self = Change::Rows {
                    rows: vec![i],
                    changed: listed,
                }
            }
            Change::Rows { rows, changed } => {
                rows.push(i);
                *changed |= listed;
            }
        }
    }
}

/// `view` and `new`, both in `order`, merged: each new row goes where a binary search puts it,
/// so a few rows join a long view with a few comparisons each.
fn merge_sorted(
    view: &[usize],
    new: &[usize],
    order: &impl Fn(usize, usize) -> std::cmp::Ordering,
) -> Vec<usize> {
    let mut out = Vec::with_capacity(view.len() + new.len());
    let mut from = 0;
    for &n in new {
        let at = from + view[from..].partition_point(|&v| order(v, n).is_lt());
        out.extend_from_slice(&view[from..at]);
        out.push(n);
        from = at;
    }
    out.extend_from_slice(&view[from..]);
    out
}

/// What a text column sorts by: its cell's text (`None` for the others).
fn text_key(sort: Column, r: &Row) -> Option<&str> {
    match sort {
        Column::Verdict | Column::Pid | Column::Age | Column::Path => None,
        c => r.cells.text(c),
    }
}

/// Whether the row at `i` of `rows` passes the filters.
fn shown<'a>(
    rows: &'a [Row],
    filter: &str,
    verdict: Option<Verdict>,
) -> impl Fn(usize) -> bool + use<'a> {
    let needle = filter.to_lowercase();
    move |i| {
        let r = &rows[i];
        verdict.is_none_or(|v| r.verdict() == v)
            && (needle.is_empty() || r.cells.search.contains(&needle))
    }
}

/// The order of the view: by the sort column, then by path (a total order: paths are unique).
fn order(
    rows: &[Row],
    now: i64,
    key: Column,
    descending: bool,
) -> impl Fn(usize, usize) -> std::cmp::Ordering + use<'_> {
    move |a, b| {
        let (ra, rb) = (&rows[a], &rows[b]);
        let primary = match key {
            Column::Verdict => ra.verdict().cmp(&rb.verdict()),
            Column::Pid => ra.cells.owner_pid.cmp(&rb.cells.owner_pid),
            Column::Age => age_ms(ra, now).cmp(&age_ms(rb, now)),
            Column::Path => std::cmp::Ordering::Equal,
            _ => text_key(key, ra).cmp(&text_key(key, rb)),
        };
        let by_path = || ra.finding.path.cmp(&rb.finding.path);
        if descending {
            primary.reverse().then_with(|| {
                if key == Column::Path {
                    by_path().reverse()
                } else {
                    by_path()
                }
            })
        } else {
            primary.then_with(by_path)
        }
    }
}

#[cfg(test)]
mod tests;
