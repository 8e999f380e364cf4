//! Where each part of the screen goes. One function of the terminal size and a few settings,
//! shared by drawing and by the app: the app reads page heights from it (PgUp/PgDn, keeping
//! the selection in view) and maps mouse clicks back to rows and columns with it, so what is
//! drawn and what a key or a click does always agree.

use ratatui::layout::{Constraint, Layout, Rect};

/// The header line (progress, verdict counts, filters).
pub const HEADER_HEIGHT: u16 = 1;
/// The key bar at the bottom.
pub const KEY_BAR_HEIGHT: u16 = 1;
/// The status message wraps to at most this many lines ...
pub const STATUS_MAX_LINES: u16 = 2;
/// ... and only when the terminal has at least this many lines (else one).
pub const STATUS_WRAP_MIN_HEIGHT: u16 = 12;
/// The table's column titles.
pub const TABLE_HEADER_HEIGHT: u16 = 1;
/// Share of the body (in percent) the detail pane takes when it is open.
pub const DETAIL_PERCENT: u16 = 55;
/// The marker before the selected row (so the selection shows without color or styles).
pub const SELECTED: &str = "▶ ";
/// Columns of the selection marker; a marked row shows [`MARK`] in its second column.
pub const SELECTED_WIDTH: u16 = 2;
/// A row marked with Space.
pub const MARK: &str = "*";
/// After the verdict of a lock a flag keeps, holding unsaved changes (a row where removing
/// loses work).
pub const UNSAVED: &str = "✎";
/// Space between table columns.
pub const COLUMN_SPACING: u16 = 1;
/// The help pop-up is at most this wide.
pub const HELP_WIDTH: u16 = 96;
/// The confirm dialog is at most this wide.
pub const DIALOG_WIDTH: u16 = 80;
/// Lines a mouse wheel step scrolls.
pub const WHEEL_STEP: u16 = 3;

/// The parts of the main screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Screen {
    pub header: Rect,
    /// The table, its column titles included.
    pub table: Rect,
    /// The detail pane (borders included), when it is open.
    pub detail: Option<Rect>,
    pub status: Rect,
    pub keys: Rect,
}

impl Screen {
    /// The layout of `area` with the detail pane open or not and a status message of
    /// `status_lines` lines.
    pub fn new(area: Rect, details: bool, status_lines: u16) -> Screen {
        let [header, body, status, keys] = Layout::vertical([
            Constraint::Length(HEADER_HEIGHT),
            Constraint::Fill(1),
            Constraint::Length(status_lines.max(1)),
            Constraint::Length(KEY_BAR_HEIGHT),
        ])
        .areas(area);
        let (table, detail) = if details {
            let [table, detail] = Layout::vertical([
                Constraint::Percentage(100 - DETAIL_PERCENT),
                Constraint::Percentage(DETAIL_PERCENT),
            ])
            .areas(body);
            (table, Some(detail))
        } else {
            (body, None)
        };
        Screen {
            header,
            table,
            detail,
            status,
            keys,
        }
    }

    /// The table's rows (below the column titles).
    pub fn table_body(&self) -> Rect {
        let mut r = self.table;
        r.y = r.y.saturating_add(TABLE_HEADER_HEIGHT).min(r.bottom());
        r.height = r.height.saturating_sub(TABLE_HEADER_HEIGHT);
        r
    }

    /// Where pop-ups go: everything above the key bar (which shows the pop-up's keys).
    pub fn popups(&self) -> Rect {
        Rect {
            height: self.keys.y.saturating_sub(self.header.y),
            ..self.header
        }
    }

    /// The text area of the detail pane (inside its border).
    pub fn detail_inner(&self) -> Option<Rect> {
        self.detail
            .map(|d| d.inner(ratatui::layout::Margin::new(1, 1)))
    }

    /// How many lines a status message may take in a terminal `height` lines high.
    pub fn status_room(height: u16) -> u16 {
        if height >= STATUS_WRAP_MIN_HEIGHT {
            STATUS_MAX_LINES
        } else {
            1
        }
    }
}

/// A pop-up rectangle: at most `w` x `h`, centered, never larger than `area`.
pub fn popup(area: Rect, w: u16, h: u16) -> Rect {
    area.centered(
        Constraint::Length(w.min(area.width)),
        Constraint::Length(h.min(area.height)),
    )
}

/// Whether a point is inside a rectangle.
pub fn contains(r: Rect, x: u16, y: u16) -> bool {
    x >= r.x && x < r.right() && y >= r.y && y < r.bottom()
}
