//! Drawing the main screen: `impl Widget for &App` lays the screen out ([`Screen`], the
//! same layout the app keeps its scroll positions by) and has each component draw its part:
//! the header, the table, the detail pane, the status line and the key bar, then the pop-up
//! open, above the key bar. Drawing changes nothing: a frame is a pure function of the
//! state. Every size is computed with saturating arithmetic: any terminal size renders, down
//! to a single cell. Text from lock files is escaped by the components before it is drawn.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use super::app::{App, Mode};
use super::components::detail;
use super::components::header::Facts;
use super::layout::Screen;

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self;
        let theme = app.opts.theme;
        let prompt = app.table.prompt();
        let position = app.table.position_text();
        let status = app.status_bar.lines(area, prompt.is_some(), &position);
        let screen = Screen::new(area, app.details_open(), status.len() as u16);
        let list = &app.table.list;
        let progress = &app.header.progress;
        let filter =
            (!list.filter().is_empty() && app.mode() != Mode::Filter).then_some(list.filter());
        let facts = Facts {
            theme,
            listed: list.rows().len(),
            counts: list.counts(),
            verdict_filter: list.verdict_filter(),
            filter,
            readonly: app.opts.readonly,
            roots: &app.opts.roots,
            marked: list.marked(),
        };
        app.header.render(&facts, screen.header, buf);
        let scanning = progress.scanning && !progress.quiet;
        app.table
            .render(theme, app.now_ms, scanning, screen.table, buf);
        if let (Some(area), Some(row)) = (screen.detail, app.table.selected_row()) {
            let waiting = app.table.selected_waiting();
            detail::render(
                row,
                waiting,
                app.detail.scroll,
                theme,
                app.now_ms,
                area,
                buf,
            );
        }
        app.status_bar
            .render(&status, prompt, &position, theme, screen.status, buf);
        app.bar().render(theme, screen.keys, buf);
        app.layer.render(&app.popup_env(), screen.popups(), buf);
    }
}
