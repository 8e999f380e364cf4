//! The lock table's columns and its rows on screen: which columns fit and how wide each is
//! ([`plan`], sized by the content of the rows shown, so an all-`-` COMMAND column does not
//! take 16 columns from the paths), and drawing the rows. The same plan maps a click on a
//! column title back to its column. Every title has room for the sort arrow, so sorting by
//! another column never moves the columns. A lock holding unsaved changes has
//! [`UNSAVED`] after its verdict; a marked row has [`MARK`] beside the selection marker.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Cell as TableCell, HighlightSpacing, Paragraph, Row as TableRow, StatefulWidget, Table,
    TableState, Widget,
};

use super::super::super::layout::{
    COLUMN_SPACING, MARK, SELECTED, SELECTED_WIDTH, TABLE_HEADER_HEIGHT, UNSAVED,
};
use super::super::super::rows::{COLUMNS, Column, Row, age_ms};
use super::super::super::text;
use super::super::super::theme::Theme;

/// Below this width the verdict column shows its symbol only.
pub const NARROW_WIDTH: u16 = 45;
/// The path column keeps at least this share of the width (in percent) ...
const PATH_MIN_PERCENT: u16 = 40;
/// ... and at least this many columns, before other columns are dropped to make room.
const PATH_MIN_WIDTH: u16 = 20;
/// Width of the sort arrow after a column title (` ▲`).
const ARROW_WIDTH: u16 = 2;

/// The widest cell of each column among the rows shown, by [`Column::index`]; 0 for a column
/// whose every cell is `-` (nothing known).
pub type ContentWidths = [u16; Column::ALL.len()];

/// At most this many columns per column, whatever the content. Every built-in dialect's id
/// fits whole (a test checks); a longer declared one is cut.
fn cap(c: Column) -> u16 {
    match c {
        Column::Verdict => 9,
        Column::Dialect => 20,
        Column::Pid => 10,
        Column::Command => 16,
        Column::Host => 16,
        Column::Age => 5,
        Column::Path => u16::MAX,
        // Not shown in the UI.
        _ => 0,
    }
}

/// The order in which columns give way to the path when the width is short.
const DROP_ORDER: [Column; 5] = [
    Column::Host,
    Column::Command,
    Column::Dialect,
    Column::Pid,
    Column::Age,
];

fn clamp16(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// The widths of every cell of `rows`.
pub fn content_widths<'a>(rows: impl Iterator<Item = &'a Row>) -> ContentWidths {
    let mut w = [0u16; Column::ALL.len()];
    widen(&mut w, rows);
    w
}

/// Widens `w` to fit the cells of `rows` too.
pub fn widen<'a>(w: &mut ContentWidths, rows: impl Iterator<Item = &'a Row>) {
    for r in rows {
        for (w, &cell) in w.iter_mut().zip(&r.cells.widths) {
            *w = (*w).max(cell);
        }
        let v = &mut w[Column::Verdict.index()];
        *v = (*v).max(verdict_width(r));
        // An age (up to `9999d`) is never wider than the column's cap, which is its title
        // with the sort arrow: what matters is whether the column has anything to show.
        if r.finding.modified_ms.is_some() {
            w[Column::Age.index()] = cap(Column::Age);
        }
    }
}

/// The width of [`verdict_text`]'s text, without making it.
fn verdict_width(r: &Row) -> u16 {
    let v = r.verdict();
    let symbol = text::width(v.symbol()) + 1 + v.as_str().len();
    let unsaved = if r.unsaved() {
        1 + text::width(UNSAVED)
    } else {
        0
    };
    clamp16(symbol + unsaved)
}

fn verdict_text(r: &Row) -> String {
    let v = r.verdict();
    if r.unsaved() {
        format!("{} {v} {UNSAVED}", v.symbol())
    } else {
        format!("{} {v}", v.symbol())
    }
}

fn age_text(r: &Row, now_ms: i64) -> String {
    match r.finding.modified_ms {
        Some(_) => text::age(age_ms(r, now_ms)),
        None => "-".into(),
    }
}

/// A column's title, with the sort arrow when the table is sorted by it.
fn title(c: Column, narrow: bool, sort: Column, descending: bool) -> String {
    let mut t = if narrow && c == Column::Verdict {
        "V".to_string()
    } else {
        c.title().to_string()
    };
    if c == sort {
        t.push_str(if descending { " ▼" } else { " ▲" });
    }
    t
}

/// The columns shown at `width` and the width of each, in display order, the path last with
/// whatever is left. A column is as wide as its widest cell (capped) or its title, sort arrow
/// included (every title has room for it, whichever column is sorted). Columns with nothing to
/// show are dropped when the path does not fit whole; the others, in [`DROP_ORDER`], when the
/// path would get less than its share.
pub fn plan(width: u16, content: &ContentWidths) -> Vec<(Column, u16)> {
    let narrow = width < NARROW_WIDTH;
    let col_width = |c: Column| -> u16 {
        let t = if narrow && c == Column::Verdict {
            1 + ARROW_WIDTH
        } else {
            clamp16(text::width(&c.title())) + ARROW_WIDTH
        };
        let body = if narrow && c == Column::Verdict {
            1
        } else {
            content[c.index()].min(cap(c))
        };
        t.max(body)
    };
    let mut kept: Vec<Column> = COLUMNS
        .iter()
        .copied()
        .filter(|&c| c != Column::Path)
        .collect();
    if narrow {
        kept.retain(|&c| c == Column::Verdict);
    }
    let path_want = content[Column::Path.index()]
        .max(clamp16(text::width(&Column::Path.title())) + ARROW_WIDTH)
        .min(PATH_MIN_WIDTH.max(width.saturating_mul(PATH_MIN_PERCENT) / 100));
    let room = |kept: &[Column]| -> u16 {
        let used: u16 = kept
            .iter()
            .map(|&c| col_width(c).saturating_add(COLUMN_SPACING))
            .fold(SELECTED_WIDTH, u16::saturating_add);
        width.saturating_sub(used)
    };
    // Columns with nothing to show give way as soon as the path is cut; the others only
    // when the path would get less than its share.
    let path_full = content[Column::Path.index()];
    for c in DROP_ORDER.into_iter().filter(|&c| content[c.index()] == 0) {
        if room(&kept) >= path_full {
            break;
        }
        kept.retain(|&k| k != c);
    }
    for c in DROP_ORDER {
        if room(&kept) >= path_want {
            break;
        }
        kept.retain(|&k| k != c);
    }
    let path = room(&kept);
    let mut out: Vec<(Column, u16)> = kept.into_iter().map(|c| (c, col_width(c))).collect();
    out.push((Column::Path, path));
    out
}

/// The column under column `x` of the table (0 is the table's left edge), if any.
pub fn column_at(plan: &[(Column, u16)], x: u16) -> Option<Column> {
    let mut left = SELECTED_WIDTH;
    for &(c, w) in plan {
        let right = left.saturating_add(w).saturating_add(COLUMN_SPACING);
        if x >= left && x < right {
            return Some(c);
        }
        left = right;
    }
    None
}

/// What the table shows besides its rows.
pub struct TableProps<'a> {
    pub theme: Theme,
    pub plan: &'a [(Column, u16)],
    pub sort: Column,
    pub descending: bool,
    pub now_ms: i64,
    /// The selected row's index among the rows drawn.
    pub selected: Option<usize>,
    /// Which of the rows drawn are marked.
    pub marked: &'a [bool],
    /// Shown in place of the rows when there are none.
    pub empty: &'a str,
}

/// Draws the column titles and `rows` (the rows on screen, first to last).
pub fn render(p: &TableProps<'_>, rows: &[&Row], area: Rect, buf: &mut Buffer) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let narrow = area.width < NARROW_WIDTH;
    let header = TableRow::new(
        p.plan
            .iter()
            .map(|(c, _)| TableCell::from(title(*c, narrow, p.sort, p.descending))),
    )
    .style(p.theme.header());
    let widths: Vec<Constraint> = p
        .plan
        .iter()
        .map(|&(c, w)| match c {
            Column::Path => Constraint::Fill(1),
            _ => Constraint::Length(w),
        })
        .collect();
    let path_width = p
        .plan
        .iter()
        .find(|(c, _)| *c == Column::Path)
        .map_or(0, |&(_, w)| usize::from(w));
    let table_rows: Vec<TableRow> = rows.iter().map(|r| row(p, r, narrow, path_width)).collect();
    let table = Table::new(table_rows, widths)
        .header(header)
        .column_spacing(COLUMN_SPACING)
        .row_highlight_style(p.theme.selected())
        .highlight_symbol(SELECTED)
        .highlight_spacing(HighlightSpacing::Always);
    let mut state = TableState::new().with_selected(p.selected);
    StatefulWidget::render(table, area, buf, &mut state);
    let first = area.y.saturating_add(TABLE_HEADER_HEIGHT);
    for (i, _) in p.marked.iter().enumerate().filter(|(_, m)| **m) {
        let y = first.saturating_add(i as u16);
        if y < area.bottom() && area.width > 1 {
            buf[(area.x + 1, y)]
                .set_symbol(MARK)
                .set_style(p.theme.key());
        }
    }
    if rows.is_empty() {
        let [_, rest] =
            Layout::vertical([Constraint::Length(TABLE_HEADER_HEIGHT), Constraint::Fill(1)])
                .areas(area);
        Paragraph::new(Span::styled(p.empty, p.theme.dim()))
            .centered()
            .render(rest, buf);
    }
}

fn row<'a>(p: &TableProps<'_>, r: &'a Row, narrow: bool, path_width: usize) -> TableRow<'a> {
    let theme = p.theme;
    let v = r.verdict();
    TableRow::new(p.plan.iter().map(|(c, w)| match c {
        Column::Verdict if narrow => TableCell::from(Span::styled(v.symbol(), theme.verdict(v))),
        Column::Verdict if r.unsaved() => TableCell::from(Line::from(vec![
            Span::styled(format!("{} {v} ", v.symbol()), theme.verdict(v)),
            Span::styled(UNSAVED, theme.warn()),
        ])),
        Column::Verdict => TableCell::from(Span::styled(verdict_text(r), theme.verdict(v))),
        Column::Age => TableCell::from(age_text(r, p.now_ms)),
        Column::Path => TableCell::from(text::shorten_path(&r.cells.path, path_width)),
        // A host or container name keeps its kind and its start (`ctr:kube-apiserv…`), never
        // loses its middle.
        Column::Host => TableCell::from(text::ellipsize_end(&r.cells.host, usize::from(*w))),
        &c => TableCell::from(r.cells.text(c).unwrap_or_default()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_widths_are_those_of_the_texts_drawn() {
        use locksmith::Verdict;
        let mut rows: Vec<Row> = Verdict::ALL
            .iter()
            .map(|&v| {
                let f =
                    crate::tui::testkit::finding("/srv/tëst/ünïcode ☃.pid", "pidfile", v, Some(42));
                Row::new(f)
            })
            .collect();
        rows.push(Row::new(crate::tui::testkit::vim_unsaved(
            "/home/me/.notes.txt.swp",
        )));
        for r in &rows {
            assert_eq!(
                usize::from(verdict_width(r)),
                text::width(&verdict_text(r)),
                "{:?}",
                r.verdict()
            );
            for (c, cell) in [
                (Column::Dialect, &r.cells.dialect),
                (Column::Pid, &r.cells.pid),
                (Column::Command, &r.cells.command),
                (Column::Host, &r.cells.host),
                (Column::Path, &r.cells.path),
            ] {
                let want = if cell == "-" { 0 } else { text::width(cell) };
                assert_eq!(
                    usize::from(r.cells.widths[c.index()]),
                    want,
                    "{c:?}: {cell}"
                );
            }
        }
        // Every age fits the AGE column, whatever it is.
        for secs in [
            0,
            9,
            10,
            59,
            60,
            599,
            600,
            3599,
            3600,
            86_399,
            86_400,
            9_999 * 86_400,
        ] {
            assert!(
                text::width(&text::age(secs * 1000)) <= usize::from(cap(Column::Age)),
                "{secs}"
            );
        }
    }

    #[test]
    fn every_built_in_dialect_id_fits_its_column() {
        for d in locksmith::dialect::registry() {
            let id = d.id();
            assert!(
                clamp16(text::width(id.as_str())) <= cap(Column::Dialect),
                "{id} is cut in the table"
            );
        }
    }

    fn widths(pairs: &[(Column, u16)]) -> ContentWidths {
        let mut w = [0; Column::ALL.len()];
        for &(c, n) in pairs {
            w[c.index()] = n;
        }
        w
    }

    #[test]
    fn columns_are_sized_by_their_content_and_titles() {
        let content = widths(&[
            (Column::Verdict, 7),
            (Column::Dialect, 7),
            (Column::Pid, 5),
            (Column::Host, 2),
            (Column::Age, 2),
            (Column::Path, 60),
        ]);
        let p = plan(160, &content);
        assert_eq!(
            p,
            [
                (Column::Verdict, 9),
                (Column::Dialect, 9),
                (Column::Pid, 5),
                (Column::Command, 9),
                (Column::Host, 6),
                (Column::Age, 5),
                (Column::Path, 160 - 2 - 43 - 6),
            ],
            "titles set the minimum, with room for the sort arrow"
        );
        // Short of room, the column with nothing to show goes first, then the host.
        let p = plan(80, &content);
        let cols: Vec<Column> = p.iter().map(|&(c, _)| c).collect();
        assert!(!cols.contains(&Column::Command), "{p:?}");
        assert_eq!(p.last().unwrap().0, Column::Path);
        assert!(p.last().unwrap().1 >= 32, "{p:?}");
        // The column under a click.
        let p = plan(160, &content);
        assert_eq!(column_at(&p, 0), None, "the selection marker");
        assert_eq!(column_at(&p, 2), Some(Column::Verdict));
        assert_eq!(column_at(&p, 12), Some(Column::Dialect));
        assert_eq!(column_at(&p, 150), Some(Column::Path));
    }
}
