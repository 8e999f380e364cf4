//! The parts of the main screen, one module each, in the manner of gitui's components: the
//! [`header`], the lock [`table`] (with its filter and find prompts), the [`detail`] pane, the
//! [`status`] bar and the [`keybar`]. The pop-ups are components too, one file each, in
//! `popup`. Each owns its state, handles the keys of its context of the key map and draws
//! itself; what it wants beyond itself (a dialog, a rescan, a status message, a program to
//! run) it asks for through the app's queue (`queue`), and the app carries it out.
//!
//! The table is the one part whose keys move what others show: when its selection moves to
//! another lock, the detail pane's text goes back to its top and a status message about the
//! lock left behind goes, at once, and the table keeps the selection on screen by the layout
//! of that moment ([`screen`]). It is handed those parts, with the queue and the facts of the
//! moment, in a [`Cx`].

pub mod detail;
pub mod header;
pub mod keybar;
pub mod status;
pub mod table;

use ratatui::layout::Rect;

use super::layout::Screen;
use super::queue::Queue;
use detail::DetailPane;
use status::StatusBar;
use table::Table;

/// What `--readonly` says when a reclaim, an undo or `x` is asked for.
pub const READ_ONLY: &str =
    "read-only (--readonly): reclaim, undo and stopping holders are disabled";

/// What keeps destructive actions from starting now.
#[derive(Debug, Clone, Copy, Default)]
pub struct Busy {
    /// `--readonly`: never reclaim, never signal.
    pub readonly: bool,
    /// A reclaim or an undo is running.
    pub reclaiming: bool,
    /// Processes are being signalled (or looked at before).
    pub stopping: bool,
}

impl Busy {
    /// Why a reclaim or an undo cannot start now, if it cannot.
    pub fn refusal(&self) -> Option<&'static str> {
        if self.readonly {
            Some(READ_ONLY)
        } else if self.reclaiming {
            Some("a reclaim or an undo is already running")
        } else {
            None
        }
    }
}

/// What the table works with besides itself.
pub struct Cx<'a> {
    pub queue: &'a mut Queue,
    /// The status bar, whose message about a lock goes when the selection leaves it.
    pub status: &'a mut StatusBar,
    /// The detail pane, which shows the selected lock.
    pub detail: &'a mut DetailPane,
    /// The terminal's size.
    pub area: Rect,
    pub busy: Busy,
    /// The clock (ms since the epoch): ages are sorted as of it.
    pub now_ms: i64,
}

/// The screen's layout now: the detail pane takes its share when it is open over a lock, the
/// status line as many lines as its message takes at this size.
pub fn screen(area: Rect, detail: &DetailPane, status: &StatusBar, table: &Table) -> Screen {
    let lines = status.lines(area, table.prompt().is_some(), &table.position_text());
    Screen::new(area, detail.open(table.has_rows()), lines.len() as u16)
}
