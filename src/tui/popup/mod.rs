//! The pop-ups drawn over the screen, one file each: the help, the reclaim dialog, the undo
//! dialog, the dialog that stops a lock's holders, the one that says why a swap file was not
//! recovered and the prompt that takes an error message. A pop-up is a [`Popup`]: it brings its
//! own key bindings (listed in the help under its title), says what it shows ([`Content`]) and
//! what a key does to it ([`Outcome`]); this module frames, sizes, scrolls and draws every one
//! of them the same way. A Yes/No dialog is a [`Dialog`] of its [`Question`], which says only
//! what the dialog shows and what No leaves ([`dialog`] opens the one an action asks).
//! Adding a pop-up is one file and one line of [`ALL`]. The [`layer`] holds the pop-up open
//! and turns what its keys did into requests on the app's queue.
//!
//! Pop-ups are drawn above the key bar, never over it: the bar shows the pop-up's keys.

pub mod help;
pub mod journal;
pub mod layer;
pub mod reclaim;
pub mod refused;
pub mod restore;
pub mod signal;
pub mod why;

use std::any::Any;
use std::marker::PhantomData;
use std::path::Path;

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::KeyCode;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Padding, Paragraph, Widget};

use super::confirm::{Choice, ConfirmAction, ConfirmDialog, ConfirmedAction};
use super::keymap::{
    self, Action, BOTTOM, Bar, Binding, Context, DOWN, Key, Keys, PAGE_DOWN, PAGE_UP, TOP, UP, bar,
};
use super::layout::{DIALOG_WIDTH, popup};
use super::text::{self, scroll_hint};
use super::theme::Theme;

/// Every pop-up's bindings, in the order the help lists them.
pub static ALL: &[&Keys] = &[
    &reclaim::KEYS,
    &restore::KEYS,
    &journal::KEYS,
    &signal::KEYS,
    &refused::KEYS,
    &why::KEYS,
    &help::KEYS,
];

/// What pop-ups are drawn with.
pub struct Env<'a> {
    pub theme: Theme,
    /// Where reclaim keeps copies (the reclaim dialog names it).
    pub state_dir: Option<&'a Path>,
    /// The pop-ups' bindings (the help lists them).
    pub popups: &'a [&'static Keys],
    /// The width pop-ups have (the screen's).
    pub width: u16,
    /// The roots on screen (a lock outside them is said to be).
    pub roots: &'a [std::path::PathBuf],
}

/// What a pop-up shows.
pub struct Content {
    pub title: String,
    /// The text, unwrapped; it scrolls.
    pub body: Vec<Line<'static>>,
    /// The buttons; `None`: no buttons.
    pub buttons: Option<Buttons>,
    pub border: Style,
}

/// A pop-up's buttons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buttons {
    /// A Yes/No question, this one highlighted.
    YesNo(Choice),
    /// Nothing to say yes to: one button, *Close*.
    Close,
}

impl Buttons {
    /// A dialog's buttons: *Close* alone when it has nothing to say yes to.
    pub fn of(d: &ConfirmDialog) -> Buttons {
        if d.offers_yes() {
            Buttons::YesNo(d.highlight)
        } else {
            Buttons::Close
        }
    }
}

/// What a key did to a pop-up.
#[derive(Debug)]
pub enum Outcome {
    /// Still open.
    Stay,
    /// Closed; the status line says this, if anything.
    Closed(Option<&'static str>),
    /// Closed with nothing done, for this reason (a warning).
    Refused(String),
    /// The user said yes.
    Confirmed(ConfirmedAction),
    /// Undo these reclaims, after the undo dialog's yes (picked in the journal view).
    Undo(locksmith::reclaim::Plan),
    /// Closed with an error message: select the lock it is about.
    Find(String),
}

/// A pop-up.
pub trait Popup: std::fmt::Debug {
    fn keys(&self) -> &'static Keys;
    /// At most this many columns wide.
    fn width(&self) -> u16;
    fn content(&self, env: &Env<'_>) -> Content;
    /// Lines the text is scrolled down.
    fn scroll(&self) -> u16;
    fn set_scroll(&mut self, lines: u16);
    /// What a key of [`Popup::keys`] does (scrolling is handled for every pop-up, before).
    fn act(&mut self, action: Action) -> Outcome;
    fn as_any(&self) -> &dyn Any;
    /// Moves a cursor of its own for a moving key (`page`: the lines in view); `false` when
    /// the pop-up has none (the key then scrolls its text).
    fn navigate(&mut self, _action: Action, _page: u16) -> bool {
        false
    }
    /// The line of its text that must stay in view (its cursor's), if any.
    fn focus(&self) -> Option<u16> {
        None
    }
    /// Text typed or pasted into it (a pop-up whose keys list [`Action::TextInput`]).
    fn type_text(&mut self, _text: &str) {}
    /// Its Yes/No question, if it asks one.
    fn dialog(&self) -> Option<&ConfirmDialog> {
        None
    }
    /// Its Yes/No question, for what the UI learns while it is open.
    fn dialog_mut(&mut self) -> Option<&mut ConfirmDialog> {
        None
    }
}

/// What one kind of Yes/No dialog says; [`Dialog`] does the rest (the buttons, the scrolling,
/// the keys of [`question`]).
pub trait Question: 'static {
    /// Its bindings (a [`question`]).
    const KEYS: &'static Keys;
    /// What the status line says after No.
    const CANCELLED: &'static str;
    /// Its title and text (unwrapped), and the style of its border.
    fn content(d: &ConfirmDialog, env: &Env<'_>) -> (String, Vec<Line<'static>>, Style);
    /// What closing it says (`outcome`, the default), when it has more to say.
    fn closed(_d: &ConfirmDialog, outcome: Outcome) -> Outcome {
        outcome
    }
    /// A key of its own (beyond the question's): `true` when it handled it.
    fn act(_d: &mut ConfirmDialog, _action: Action) -> bool {
        false
    }
}

/// A Yes/No dialog asking `Q`, *No* highlighted until moved; when there is nothing to say yes
/// to, one button, *Close*.
pub struct Dialog<Q>(pub ConfirmDialog, PhantomData<Q>);

impl<Q: Question> Dialog<Q> {
    pub fn new(dialog: ConfirmDialog) -> Self {
        Dialog(dialog, PhantomData)
    }
}

impl<Q> std::fmt::Debug for Dialog<Q> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Dialog").field(&self.0).finish()
    }
}

impl<Q: Question> Popup for Dialog<Q> {
    fn keys(&self) -> &'static Keys {
        Q::KEYS
    }

    fn width(&self) -> u16 {
        DIALOG_WIDTH
    }

    fn content(&self, env: &Env<'_>) -> Content {
        let (title, body, border) = Q::content(&self.0, env);
        Content {
            title,
            body,
            buttons: Some(Buttons::of(&self.0)),
            border,
        }
    }

    fn scroll(&self) -> u16 {
        self.0.scroll
    }

    fn set_scroll(&mut self, lines: u16) {
        self.0.scroll = lines;
    }

    fn act(&mut self, action: Action) -> Outcome {
        if Q::act(&mut self.0, action) {
            return Outcome::Stay;
        }
        let outcome = answer(&mut self.0, action, Q::CANCELLED);
        Q::closed(&self.0, outcome)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn dialog(&self) -> Option<&ConfirmDialog> {
        Some(&self.0)
    }

    fn dialog_mut(&mut self) -> Option<&mut ConfirmDialog> {
        Some(&mut self.0)
    }
}

/// The dialog that asks the user about `action`, *No* highlighted.
pub fn dialog(action: ConfirmAction) -> Box<dyn Popup> {
    let d = ConfirmDialog::new(action);
    match &d.action {
        ConfirmAction::Reclaim { .. } | ConfirmAction::Force(_) => {
            Box::new(Dialog::<reclaim::Reclaim>::new(d))
        }
        ConfirmAction::Signal(_) => Box::new(Dialog::<signal::Signal>::new(d)),
        ConfirmAction::Restore(_) => Box::new(Dialog::<restore::Restore>::new(d)),
    }
}

/// The wrapped lines of a pop-up's text keep the indent of their first line (past a bullet).
fn indent_of(l: &Line<'_>) -> usize {
    match l.spans.as_slice() {
        // The help's two columns: descriptions that wrap stay in theirs.
        [keys, _] if keys.content.starts_with("  ") => keys.width(),
        _ => text::text_indent(l),
    }
}

/// A pop-up on a `screen`: its rectangle, its text wrapped to fit, and where the text and the
/// buttons go.
pub struct View {
    pub content: Content,
    pub area: Rect,
    pub text: Rect,
    pub buttons: Option<Rect>,
}

pub fn view(p: &dyn Popup, env: &Env<'_>, screen: Rect) -> View {
    let mut content = p.content(env);
    let w = p.width().min(screen.width);
    let padding = if content.buttons.is_some() { 1 } else { 0 };
    content.body = text::wrap_all(
        std::mem::take(&mut content.body),
        w.saturating_sub(2 + 2 * padding),
        indent_of,
    );
    // Two borders, and a blank line and the buttons.
    let chrome = 2 + if content.buttons.is_some() { 2 } else { 0 };
    let h = u16::try_from(content.body.len())
        .unwrap_or(u16::MAX)
        .saturating_add(chrome);
    let area = popup(screen, w, h);
    let inner = Block::bordered()
        .padding(Padding::horizontal(padding))
        .inner(area);
    let (text, buttons) = if content.buttons.is_some() {
        let [text, _gap, buttons] = Layout::vertical([
            Constraint::Fill(1),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .areas(inner);
        (text, Some(buttons))
    } else {
        (inner, None)
    };
    View {
        content,
        area,
        text,
        buttons,
    }
}

/// Lines in view and how far the text can scroll on a `screen`.
pub fn extent(p: &dyn Popup, env: &Env<'_>, screen: Rect) -> (u16, u16) {
    let v = view(p, env, screen);
    let total = u16::try_from(v.content.body.len()).unwrap_or(u16::MAX);
    (v.text.height, total.saturating_sub(v.text.height))
}

pub fn render(p: &dyn Popup, env: &Env<'_>, screen: Rect, buf: &mut Buffer) {
    let theme = env.theme;
    let v = view(p, env, screen);
    Clear.render(v.area, buf);
    let lines = v.content.body.len();
    let scroll = p.scroll().min(
        u16::try_from(lines)
            .unwrap_or(u16::MAX)
            .saturating_sub(v.text.height),
    );
    let ctx = Context::Popup(p.keys());
    let close = keymap::binding(ctx, Action::Close).map(Binding::label);
    let hint = match (
        scroll_hint(
            scroll,
            v.text.height,
            lines,
            &keymap::keys(ctx, Action::Down),
        ),
        close,
    ) {
        (Some(h), Some(c)) => Some(format!("{h}· {c} close ")),
        (None, Some(c)) => Some(format!(" {c} close ")),
        (h, None) => h,
    };
    let mut block = Block::bordered()
        .title(Span::styled(v.content.title, v.content.border))
        .border_style(v.content.border)
        .padding(Padding::horizontal(if v.buttons.is_some() { 1 } else { 0 }));
    if let Some(hint) = hint {
        block = block.title_bottom(Line::from(Span::styled(hint, theme.key())).right_aligned());
    }
    block.render(v.area, buf);
    Paragraph::new(v.content.body)
        .scroll((scroll, 0))
        .render(v.text, buf);
    match (v.buttons, v.content.buttons) {
        (Some(area), Some(Buttons::Close)) => {
            Paragraph::new(Line::from(Span::styled("[ Close ]", theme.button(true))))
                .centered()
                .render(area, buf);
        }
        (Some(area), Some(Buttons::YesNo(highlight))) => {
            let yes = if highlight == Choice::Yes {
                "[ Yes ]"
            } else {
                "  Yes  "
            };
            let no = if highlight == Choice::No {
                "[ No ]"
            } else {
                "  No  "
            };
            Paragraph::new(Line::from(vec![
                Span::styled(yes, theme.button(highlight == Choice::Yes)),
                Span::raw("   "),
                Span::styled(no, theme.button(highlight == Choice::No)),
            ]))
            .centered()
            .render(area, buf);
        }
        _ => {}
    }
}

/// What the keys of a Yes/No question do to its dialog; `cancelled` is what the status line
/// says after No.
fn answer(d: &mut ConfirmDialog, action: Action, cancelled: &'static str) -> Outcome {
    match action {
        Action::ToggleChoice => d.toggle(),
        Action::ChooseLeft => d.highlight(Choice::Yes),
        Action::ChooseRight => d.highlight(Choice::No),
        Action::Yes => {
            return match d.clone().yes() {
                Some(c) => Outcome::Confirmed(c),
                None => Outcome::Closed(Some(cancelled)),
            };
        }
        Action::Choose => {
            return match d.clone().choose() {
                Some(c) => Outcome::Confirmed(c),
                None => Outcome::Closed(Some(cancelled)),
            };
        }
        Action::No => return Outcome::Closed(Some(cancelled)),
        _ => {}
    }
    Outcome::Stay
}

const YES: &[Key] = &[Key::ch('y'), Key::ch('Y')];
const NO: &[Key] = &[
    Key::ch('n'),
    Key::ch('N'),
    Key::plain(KeyCode::Esc),
    Key::ch('q'),
];
const LEFT: &[Key] = &[Key::plain(KeyCode::Left), Key::ch('h')];
const RIGHT: &[Key] = &[Key::plain(KeyCode::Right), Key::ch('l')];
const TOGGLE: &[Key] = &[Key::plain(KeyCode::Tab), Key::plain(KeyCode::BackTab)];
const CHOOSE: &[Key] = &[Key::plain(KeyCode::Enter)];

/// The bindings of a pop-up that asks Yes or No: `yes` says what Yes does, `down` what
/// scrolling down shows.
pub const fn question(yes: &'static str, down: &'static str) -> [Binding; 12] {
    use keymap::bind;
    [
        bind(YES, "yes", yes, Action::Yes, bar(1)),
        bind(NO, "no", "No: cancel, do nothing", Action::No, bar(1)),
        bind(LEFT, "Yes", "Highlight Yes", Action::ChooseLeft, Bar::No),
        bind(RIGHT, "No", "Highlight No", Action::ChooseRight, Bar::No),
        bind(
            TOGGLE,
            "move",
            "Move the highlight to the other choice",
            Action::ToggleChoice,
            bar(2),
        ),
        bind(
            CHOOSE,
            "choose",
            "Take the highlighted choice (No unless moved)",
            Action::Choose,
            bar(2),
        ),
        bind(DOWN, "scroll", down, Action::Down, Bar::No),
        bind(UP, "scroll", "Scroll up", Action::Up, Bar::No),
        bind(
            PAGE_DOWN,
            "page down",
            "Scroll one page down",
            Action::PageDown,
            Bar::No,
        ),
        bind(
            PAGE_UP,
            "page up",
            "Scroll one page up",
            Action::PageUp,
            Bar::No,
        ),
        bind(TOP, "top", "Go to the top", Action::Top, Bar::No),
        bind(BOTTOM, "end", "Go to the end", Action::Bottom, Bar::No),
    ]
}
