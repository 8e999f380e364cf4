//! The one key map of the UI: a table of (context, keys, label, description, action). The
//! handler, the key bar at the bottom of the screen and the `?` help screen are all read from
//! [`KEYMAP`], so the help can never drift from the real bindings.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Where a binding applies: the UI is in exactly one context at a time (plus [`Context::Global`],
/// which applies everywhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// Everywhere.
    Global,
    /// The lock table (with or without the detail pane).
    Table,
    /// Typing a filter after `/`.
    Filter,
    /// The confirm dialog of a reclaim.
    Confirm,
    /// The help screen.
    Help,
}

impl Context {
    pub fn title(self) -> &'static str {
        match self {
            Context::Global => "Everywhere",
            Context::Table => "Lock table",
            Context::Filter => "Filter (after /)",
            Context::Confirm => "Reclaim dialog",
            Context::Help => "Help",
        }
    }
}

/// What a key does. The application's `update` is the only interpreter of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    /// Esc in the table: clear an active filter, else quit.
    Back,
    Down,
    Up,
    Top,
    Bottom,
    PageDown,
    PageUp,
    StartFilter,
    CycleSort,
    InvertSort,
    NextVerdictFilter,
    PrevVerdictFilter,
    Rescan,
    ToggleDetails,
    Reclaim,
    ReclaimAllStale,
    ForceReclaim,
    Help,
    /// Filter editing: keep the filter and go back to the table.
    FilterDone,
    /// Filter editing: clear the filter and go back to the table.
    FilterClear,
    FilterBackspace,
    /// Filter editing: any printable character narrows the list.
    FilterInput,
    ConfirmYes,
    ConfirmNo,
    ConfirmToggle,
    ConfirmChoose,
    CloseHelp,
}

/// One key: a key code and the modifiers that must be held. For characters, Shift is implied by
/// the character itself and ignored when matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

impl Key {
    const fn plain(code: KeyCode) -> Key {
        Key {
            code,
            mods: KeyModifiers::NONE,
        }
    }

    const fn ch(c: char) -> Key {
        Key::plain(KeyCode::Char(c))
    }

    const fn ctrl(c: char) -> Key {
        Key {
            code: KeyCode::Char(c),
            mods: KeyModifiers::CONTROL,
        }
    }

    /// Whether a key event is this key.
    pub fn matches(&self, ev: &KeyEvent) -> bool {
        let relevant = KeyModifiers::CONTROL | KeyModifiers::ALT;
        match (self.code, ev.code) {
            (KeyCode::Char(a), KeyCode::Char(b)) => {
                a == b && (ev.modifiers & relevant) == (self.mods & relevant)
            }
            // Shift-Tab arrives as BackTab (with or without SHIFT reported).
            (KeyCode::BackTab, KeyCode::BackTab) => true,
            (a, b) => a == b && ev.modifiers == self.mods,
        }
    }
}

/// A binding: in `context`, any of `keys` triggers `action`.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub context: Context,
    pub keys: &'static [Key],
    /// How the keys are shown in the key bar and the help screen.
    pub label: &'static str,
    /// What the key does, in a few words (key bar) ...
    pub short: &'static str,
    /// ... and in a sentence (help screen).
    pub long: &'static str,
    pub action: Action,
    /// Shown in the key bar (the help screen shows every binding).
    pub in_bar: bool,
}

const fn bind(
    context: Context,
    keys: &'static [Key],
    label: &'static str,
    short: &'static str,
    long: &'static str,
    action: Action,
    in_bar: bool,
) -> Binding {
    Binding {
        context,
        keys,
        label,
        short,
        long,
        action,
        in_bar,
    }
}

use Action as A;
use Context as C;

/// Every binding of the UI, in the order the help screen lists them.
pub static KEYMAP: &[Binding] = &[
    bind(
        C::Global,
        &[Key::ctrl('c')],
        "Ctrl-C",
        "quit",
        "Quit at once",
        A::Quit,
        false,
    ),
    bind(
        C::Table,
        &[Key::ch('j'), Key::plain(KeyCode::Down)],
        "j/↓",
        "down",
        "Select the next lock",
        A::Down,
        false,
    ),
    bind(
        C::Table,
        &[Key::ch('k'), Key::plain(KeyCode::Up)],
        "k/↑",
        "up",
        "Select the previous lock",
        A::Up,
        false,
    ),
    bind(
        C::Table,
        &[Key::ch('g'), Key::plain(KeyCode::Home)],
        "g",
        "top",
        "Select the first lock",
        A::Top,
        false,
    ),
    bind(
        C::Table,
        &[Key::ch('G'), Key::plain(KeyCode::End)],
        "G",
        "bottom",
        "Select the last lock",
        A::Bottom,
        false,
    ),
    bind(
        C::Table,
        &[Key::plain(KeyCode::PageDown), Key::ctrl('f')],
        "PgDn",
        "page down",
        "Move the selection one page down",
        A::PageDown,
        false,
    ),
    bind(
        C::Table,
        &[Key::plain(KeyCode::PageUp), Key::ctrl('b')],
        "PgUp",
        "page up",
        "Move the selection one page up",
        A::PageUp,
        false,
    ),
    bind(
        C::Table,
        &[Key::plain(KeyCode::Enter)],
        "Enter",
        "details",
        "Show or hide the evidence of the selected lock",
        A::ToggleDetails,
        true,
    ),
    bind(
        C::Table,
        &[Key::ch('d')],
        "d",
        "reclaim",
        "Reclaim (remove) the selected lock if it is stale, after confirmation",
        A::Reclaim,
        true,
    ),
    bind(
        C::Table,
        &[Key::ch('D')],
        "D",
        "all stale",
        "Reclaim every stale lock shown, after confirmation",
        A::ReclaimAllStale,
        true,
    ),
    bind(
        C::Table,
        &[Key::ch('F')],
        "F",
        "force foreign",
        "Force the reclaim of a foreign lock (owner on another host), after a warning",
        A::ForceReclaim,
        false,
    ),
    bind(
        C::Table,
        &[Key::ch('/')],
        "/",
        "filter",
        "Filter the list by text (path, dialect, command, host, pid)",
        A::StartFilter,
        true,
    ),
    bind(
        C::Table,
        &[Key::plain(KeyCode::Tab)],
        "Tab",
        "verdict",
        "Show only one verdict (cycles stale, live, foreign, unknown, free, all)",
        A::NextVerdictFilter,
        true,
    ),
    bind(
        C::Table,
        &[Key::plain(KeyCode::BackTab)],
        "S-Tab",
        "verdict back",
        "Cycle the verdict filter backwards",
        A::PrevVerdictFilter,
        false,
    ),
    bind(
        C::Table,
        &[Key::ch('s')],
        "s",
        "sort",
        "Sort by the next column",
        A::CycleSort,
        true,
    ),
    bind(
        C::Table,
        &[Key::ch('S')],
        "S",
        "invert sort",
        "Invert the sort order",
        A::InvertSort,
        false,
    ),
    bind(
        C::Table,
        &[Key::ch('r')],
        "r",
        "rescan",
        "Scan again from scratch",
        A::Rescan,
        true,
    ),
    bind(
        C::Table,
        &[Key::ch('?')],
        "?",
        "help",
        "Show this help",
        A::Help,
        true,
    ),
    bind(
        C::Table,
        &[Key::ch('q')],
        "q",
        "quit",
        "Quit",
        A::Quit,
        true,
    ),
    bind(
        C::Table,
        &[Key::plain(KeyCode::Esc)],
        "Esc",
        "back",
        "Clear the filter if one is set, else quit",
        A::Back,
        false,
    ),
    bind(
        C::Filter,
        &[Key::plain(KeyCode::Enter)],
        "Enter",
        "keep filter",
        "Keep the filter and go back to the list",
        A::FilterDone,
        true,
    ),
    bind(
        C::Filter,
        &[Key::plain(KeyCode::Esc)],
        "Esc",
        "clear filter",
        "Clear the filter and go back to the list",
        A::FilterClear,
        true,
    ),
    bind(
        C::Filter,
        &[Key::plain(KeyCode::Backspace)],
        "Backspace",
        "delete",
        "Delete the last character",
        A::FilterBackspace,
        true,
    ),
    bind(
        C::Filter,
        &[],
        "text",
        "narrow",
        "Any other character narrows the list as you type",
        A::FilterInput,
        false,
    ),
    bind(
        C::Confirm,
        &[Key::ch('y'), Key::ch('Y')],
        "y",
        "yes",
        "Yes: reclaim now",
        A::ConfirmYes,
        true,
    ),
    bind(
        C::Confirm,
        &[
            Key::ch('n'),
            Key::ch('N'),
            Key::plain(KeyCode::Esc),
            Key::ch('q'),
        ],
        "n/Esc",
        "no",
        "No: cancel, remove nothing",
        A::ConfirmNo,
        true,
    ),
    bind(
        C::Confirm,
        &[
            Key::plain(KeyCode::Left),
            Key::plain(KeyCode::Right),
            Key::plain(KeyCode::Tab),
            Key::plain(KeyCode::BackTab),
            Key::ch('h'),
            Key::ch('l'),
        ],
        "←/→/Tab",
        "move",
        "Move the highlight between Yes and No",
        A::ConfirmToggle,
        true,
    ),
    bind(
        C::Confirm,
        &[Key::plain(KeyCode::Enter)],
        "Enter",
        "choose",
        "Take the highlighted choice (No unless moved)",
        A::ConfirmChoose,
        true,
    ),
    bind(
        C::Help,
        &[
            Key::ch('?'),
            Key::ch('q'),
            Key::plain(KeyCode::Esc),
            Key::plain(KeyCode::Enter),
        ],
        "?/q/Esc",
        "close",
        "Close the help",
        A::CloseHelp,
        true,
    ),
    bind(
        C::Help,
        &[Key::ch('j'), Key::plain(KeyCode::Down)],
        "j/↓",
        "scroll",
        "Scroll the help down",
        A::Down,
        false,
    ),
    bind(
        C::Help,
        &[Key::ch('k'), Key::plain(KeyCode::Up)],
        "k/↑",
        "scroll",
        "Scroll the help up",
        A::Up,
        false,
    ),
];

/// The action a key triggers in a context ([`Context::Global`] bindings first). In the filter
/// context a printable character with no binding is [`Action::FilterInput`].
pub fn lookup(context: Context, ev: &KeyEvent) -> Option<Action> {
    let found = KEYMAP
        .iter()
        .filter(|b| b.context == Context::Global || b.context == context)
        .find(|b| b.keys.iter().any(|k| k.matches(ev)))
        .map(|b| b.action);
    if found.is_none()
        && context == Context::Filter
        && let KeyCode::Char(c) = ev.code
        && !ev
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        && !c.is_control()
    {
        return Some(Action::FilterInput);
    }
    found
}

/// The bindings of one context, in map order.
pub fn bindings(context: Context) -> impl Iterator<Item = &'static Binding> {
    KEYMAP.iter().filter(move |b| b.context == context)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn every_key_of_a_context_means_one_action() {
        for ctx in [C::Table, C::Filter, C::Confirm, C::Help] {
            let in_ctx: Vec<&Binding> = KEYMAP
                .iter()
                .filter(|b| b.context == ctx || b.context == C::Global)
                .collect();
            for (i, a) in in_ctx.iter().enumerate() {
                for b in &in_ctx[i + 1..] {
                    for k in a.keys {
                        assert!(
                            !b.keys.contains(k),
                            "{k:?} bound twice in {ctx:?}: {} and {}",
                            a.label,
                            b.label
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn lookup_reads_the_map() {
        assert_eq!(lookup(C::Table, &key(KeyCode::Char('j'))), Some(A::Down));
        assert_eq!(lookup(C::Table, &key(KeyCode::Down)), Some(A::Down));
        assert_eq!(lookup(C::Table, &key(KeyCode::Char('x'))), None);
        // Shift reported or not, 'S' is the capital letter.
        let shifted = KeyEvent::new(KeyCode::Char('S'), KeyModifiers::SHIFT);
        assert_eq!(lookup(C::Table, &shifted), Some(A::InvertSort));
        // Ctrl-C quits everywhere, and is not the letter c.
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        for ctx in [C::Table, C::Filter, C::Confirm, C::Help] {
            assert_eq!(lookup(ctx, &ctrl_c), Some(A::Quit));
        }
        assert_eq!(lookup(C::Table, &key(KeyCode::Char('c'))), None);
        // In the filter, letters are text, even those bound in the table.
        assert_eq!(
            lookup(C::Filter, &key(KeyCode::Char('q'))),
            Some(A::FilterInput)
        );
        assert_eq!(lookup(C::Filter, &key(KeyCode::Esc)), Some(A::FilterClear));
        // In the dialog, q is "no", never quit.
        assert_eq!(
            lookup(C::Confirm, &key(KeyCode::Char('q'))),
            Some(A::ConfirmNo)
        );
    }
}
