//! The one key map of the UI: a table of (context, keys, description, action). The
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
    /// The confirm dialog of a reclaim or an undo.
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
            Context::Confirm => "Confirm dialog",
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
    /// Down one line: the selection in the table, the text in the help and the dialog.
    Down,
    Up,
    Top,
    Bottom,
    PageDown,
    PageUp,
    /// Scroll the detail pane.
    DetailDown,
    DetailUp,
    StartFilter,
    CycleSort,
    InvertSort,
    NextVerdictFilter,
    PrevVerdictFilter,
    Rescan,
    ToggleDetails,
    Reclaim,
    ReclaimAllStale,
    /// End the stuck holder of the selected lock (after confirmation).
    EndHolder,
    /// Put back what the last reclaim of this session removed (from its copies), after a
    /// confirmation.
    Undo,
    CopyPath,
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
    /// Highlight the left button (Yes).
    ConfirmLeft,
    /// Highlight the right button (No).
    ConfirmRight,
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

    /// The key's name as the help, the key bar and messages show it: `j`, `↓`, `Ctrl-F`, `PgDn`.
    pub fn name(&self) -> String {
        let base = match self.code {
            KeyCode::Char(' ') => "Space".to_string(),
            KeyCode::Char(c) if self.mods.contains(KeyModifiers::CONTROL) => {
                return format!("Ctrl-{}", c.to_ascii_uppercase());
            }
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Down => "↓".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::Home => "Home".into(),
            KeyCode::End => "End".into(),
            KeyCode::PageDown => "PgDn".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::Enter => "Enter".into(),
            KeyCode::Esc => "Esc".into(),
            KeyCode::Tab => "Tab".into(),
            KeyCode::BackTab => "S-Tab".into(),
            KeyCode::Backspace => "Backspace".into(),
            other => format!("{other:?}"),
        };
        if self.mods.contains(KeyModifiers::SHIFT) {
            format!("S-{base}")
        } else {
            base
        }
    }
}

/// A binding: in `context`, any of `keys` triggers `action`.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub context: Context,
    /// The keys, the one shown in the key bar and in messages first.
    pub keys: &'static [Key],
    /// What the key does, in a few words (key bar) ...
    pub short: &'static str,
    /// ... and in a sentence (help screen).
    pub long: &'static str,
    pub action: Action,
    /// Shown in the key bar (the help screen shows every binding).
    pub in_bar: bool,
}

impl Binding {
    /// The names of the binding's keys; a capital letter bound with its small one is named
    /// once (`y` for `y` and `Y`).
    pub fn names(&self) -> Vec<String> {
        self.keys
            .iter()
            .filter(|k| match k.code {
                KeyCode::Char(c) if c.is_ascii_uppercase() && k.mods.is_empty() => {
                    !self.keys.contains(&Key::ch(c.to_ascii_lowercase()))
                }
                _ => true,
            })
            .map(Key::name)
            .collect()
    }

    /// Every key of the binding, as the help screen lists them: `PgDn/Ctrl-F`.
    pub fn label(&self) -> String {
        if self.keys.is_empty() {
            return "other keys".into();
        }
        self.names().join("/")
    }

    /// The binding's first key, as messages show it.
    pub fn key_name(&self) -> String {
        self.keys.first().map(Key::name).unwrap_or_default()
    }

    /// The binding's first two keys, as the key bar shows them (`n/Esc`).
    pub fn bar_label(&self) -> String {
        let names = self.names();
        names[..names.len().min(2)].join("/")
    }
}

const fn bind(
    context: Context,
    keys: &'static [Key],
    short: &'static str,
    long: &'static str,
    action: Action,
    in_bar: bool,
) -> Binding {
    Binding {
        context,
        keys,
        short,
        long,
        action,
        in_bar,
    }
}

use Action as A;
use Context as C;

const DOWN: &[Key] = &[Key::ch('j'), Key::plain(KeyCode::Down)];
const UP: &[Key] = &[Key::ch('k'), Key::plain(KeyCode::Up)];
const TOP: &[Key] = &[Key::ch('g'), Key::plain(KeyCode::Home)];
const BOTTOM: &[Key] = &[Key::ch('G'), Key::plain(KeyCode::End)];
const PAGE_DOWN: &[Key] = &[Key::plain(KeyCode::PageDown), Key::ctrl('f')];
const PAGE_UP: &[Key] = &[Key::plain(KeyCode::PageUp), Key::ctrl('b')];

/// Every binding of the UI, in the order the help screen lists them.
pub static KEYMAP: &[Binding] = &[
    bind(
        C::Global,
        &[Key::ctrl('c')],
        "quit",
        "Quit at once",
        A::Quit,
        false,
    ),
    bind(
        C::Table,
        DOWN,
        "down",
        "Select the next lock",
        A::Down,
        false,
    ),
    bind(C::Table, UP, "up", "Select the previous lock", A::Up, false),
    bind(C::Table, TOP, "top", "Select the first lock", A::Top, false),
    bind(
        C::Table,
        BOTTOM,
        "bottom",
        "Select the last lock",
        A::Bottom,
        false,
    ),
    bind(
        C::Table,
        PAGE_DOWN,
        "page down",
        "Move the selection one page down",
        A::PageDown,
        false,
    ),
    bind(
        C::Table,
        PAGE_UP,
        "page up",
        "Move the selection one page up",
        A::PageUp,
        false,
    ),
    bind(
        C::Table,
        &[Key::plain(KeyCode::Enter)],
        "details",
        "Show or hide the evidence of the selected lock",
        A::ToggleDetails,
        true,
    ),
    bind(
        C::Table,
        &[Key::ch('J')],
        "details down",
        "Scroll the detail pane down (the mouse wheel over it too)",
        A::DetailDown,
        false,
    ),
    bind(
        C::Table,
        &[Key::ch('K')],
        "details up",
        "Scroll the detail pane up",
        A::DetailUp,
        false,
    ),
    bind(
        C::Table,
        &[Key::ch('d')],
        "reclaim",
        "Reclaim the selected lock after confirmation (unproven: a warning first)",
        A::Reclaim,
        true,
    ),
    bind(
        C::Table,
        &[Key::ch('D')],
        "all stale",
        "Reclaim every stale lock shown, after confirmation",
        A::ReclaimAllStale,
        true,
    ),
    bind(
        C::Table,
        &[Key::ch('e')],
        "end holder",
        "End the stuck holder of the selected lock, after confirmation",
        A::EndHolder,
        false,
    ),
    bind(
        C::Table,
        &[Key::ch('y')],
        "copy path",
        "Copy the path of the selected lock to the clipboard (OSC 52)",
        A::CopyPath,
        false,
    ),
    bind(
        C::Table,
        &[Key::ch('/')],
        "filter",
        "Filter the list by text (path, dialect, command, host, pid)",
        A::StartFilter,
        true,
    ),
    bind(
        C::Table,
        &[Key::plain(KeyCode::Tab)],
        "verdict",
        "Show only one verdict (cycles stale, live, foreign, unknown, free, all)",
        A::NextVerdictFilter,
        true,
    ),
    bind(
        C::Table,
        &[Key::plain(KeyCode::BackTab)],
        "verdict back",
        "Cycle the verdict filter backwards",
        A::PrevVerdictFilter,
        false,
    ),
    bind(
        C::Table,
        &[Key::ch('s')],
        "sort",
        "Sort by the next column (or click a column's title)",
        A::CycleSort,
        true,
    ),
    bind(
        C::Table,
        &[Key::ch('S')],
        "invert sort",
        "Invert the sort order",
        A::InvertSort,
        false,
    ),
    bind(
        C::Table,
        &[Key::ch('r')],
        "rescan",
        "Scan again from scratch (new locks also appear by themselves)",
        A::Rescan,
        true,
    ),
    bind(
        C::Table,
        &[Key::ch('u')],
        "undo",
        "Undo this session's last reclaim (a D as one step), after a yes",
        A::Undo,
        true,
    ),
    bind(
        C::Table,
        &[Key::ch('?')],
        "help",
        "Show this help",
        A::Help,
        true,
    ),
    bind(C::Table, &[Key::ch('q')], "quit", "Quit", A::Quit, true),
    bind(
        C::Table,
        &[Key::plain(KeyCode::Esc)],
        "back",
        "Clear the filter if one is set, else quit",
        A::Back,
        false,
    ),
    bind(
        C::Filter,
        &[Key::plain(KeyCode::Enter)],
        "keep filter",
        "Keep the filter and go back to the list",
        A::FilterDone,
        true,
    ),
    bind(
        C::Filter,
        &[Key::plain(KeyCode::Esc)],
        "clear filter",
        "Clear the filter and go back to the list",
        A::FilterClear,
        true,
    ),
    bind(
        C::Filter,
        &[Key::plain(KeyCode::Backspace)],
        "delete",
        "Delete the last character",
        A::FilterBackspace,
        true,
    ),
    bind(
        C::Filter,
        &[],
        "narrow",
        "Any other character narrows the list as you type",
        A::FilterInput,
        false,
    ),
    bind(
        C::Confirm,
        &[Key::ch('y'), Key::ch('Y')],
        "yes",
        "Yes: reclaim (or put back) now",
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
        "no",
        "No: cancel, change nothing",
        A::ConfirmNo,
        true,
    ),
    bind(
        C::Confirm,
        &[Key::plain(KeyCode::Left), Key::ch('h')],
        "Yes",
        "Highlight Yes",
        A::ConfirmLeft,
        false,
    ),
    bind(
        C::Confirm,
        &[Key::plain(KeyCode::Right), Key::ch('l')],
        "No",
        "Highlight No",
        A::ConfirmRight,
        false,
    ),
    bind(
        C::Confirm,
        &[Key::plain(KeyCode::Tab), Key::plain(KeyCode::BackTab)],
        "move",
        "Move the highlight to the other choice",
        A::ConfirmToggle,
        true,
    ),
    bind(
        C::Confirm,
        &[Key::plain(KeyCode::Enter)],
        "choose",
        "Take the highlighted choice (No unless moved)",
        A::ConfirmChoose,
        true,
    ),
    bind(
        C::Confirm,
        DOWN,
        "scroll",
        "Scroll the list down",
        A::Down,
        false,
    ),
    bind(C::Confirm, UP, "scroll", "Scroll the list up", A::Up, false),
    bind(
        C::Confirm,
        PAGE_DOWN,
        "page down",
        "Scroll the list one page down",
        A::PageDown,
        false,
    ),
    bind(
        C::Confirm,
        PAGE_UP,
        "page up",
        "Scroll the list one page up",
        A::PageUp,
        false,
    ),
    bind(
        C::Confirm,
        TOP,
        "top",
        "Go to the top of the list",
        A::Top,
        false,
    ),
    bind(
        C::Confirm,
        BOTTOM,
        "end",
        "Go to the end of the list",
        A::Bottom,
        false,
    ),
    bind(
        C::Help,
        &[
            Key::ch('?'),
            Key::ch('q'),
            Key::plain(KeyCode::Esc),
            Key::plain(KeyCode::Enter),
        ],
        "close",
        "Close the help",
        A::CloseHelp,
        true,
    ),
    bind(
        C::Help,
        DOWN,
        "scroll",
        "Scroll the help down",
        A::Down,
        true,
    ),
    bind(C::Help, UP, "scroll", "Scroll the help up", A::Up, false),
    bind(
        C::Help,
        PAGE_DOWN,
        "page down",
        "Scroll the help one page down",
        A::PageDown,
        false,
    ),
    bind(
        C::Help,
        PAGE_UP,
        "page up",
        "Scroll the help one page up",
        A::PageUp,
        false,
    ),
    bind(
        C::Help,
        TOP,
        "top",
        "Go to the top of the help",
        A::Top,
        false,
    ),
    bind(
        C::Help,
        BOTTOM,
        "end",
        "Go to the end of the help",
        A::Bottom,
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

/// The binding of an action in a context (first match).
pub fn binding(context: Context, action: Action) -> Option<&'static Binding> {
    bindings(context).find(|b| b.action == action)
}

/// The name of the key that triggers `action` in `context`, for messages ("`d` reclaims it"):
/// read from the map, so a message can never name a key that does something else.
pub fn key(context: Context, action: Action) -> String {
    binding(context, action).map_or_else(|| "?".into(), Binding::key_name)
}

/// Every key of `action` in `context`, as the help lists them (`j/↓`).
pub fn keys(context: Context, action: Action) -> String {
    binding(context, action).map_or_else(|| "?".into(), Binding::label)
}

/// The key map as the README shows it: one Markdown table, by context, every key of each
/// binding (a test keeps the README's copy equal to this).
#[cfg(test)]
pub fn markdown() -> String {
    let mut out = String::from("| where | keys | action |\n|---|---|---|\n");
    for ctx in [C::Table, C::Filter, C::Confirm, C::Help, C::Global] {
        for b in bindings(ctx) {
            let keys = if b.keys.is_empty() {
                "other keys".to_string()
            } else {
                let names: Vec<String> = b.names().iter().map(|k| format!("`{k}`")).collect();
                names.join(" ")
            };
            out.push_str(&format!("| {} | {keys} | {} |\n", ctx.title(), b.long));
        }
    }
    out
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
                            a.label(),
                            b.label()
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
        // Left is Yes and Right is No, wherever the highlight is; Tab toggles.
        assert_eq!(
            lookup(C::Confirm, &key(KeyCode::Left)),
            Some(A::ConfirmLeft)
        );
        assert_eq!(
            lookup(C::Confirm, &key(KeyCode::Right)),
            Some(A::ConfirmRight)
        );
        // In the dialog, q is "no", never quit.
        assert_eq!(
            lookup(C::Confirm, &key(KeyCode::Char('q'))),
            Some(A::ConfirmNo)
        );
    }

    #[test]
    fn labels_are_made_from_the_keys() {
        let label = |ctx, action| keys(ctx, action);
        assert_eq!(label(C::Table, A::Down), "j/↓");
        assert_eq!(label(C::Table, A::PageDown), "PgDn/Ctrl-F");
        assert_eq!(label(C::Table, A::PageUp), "PgUp/Ctrl-B");
        assert_eq!(label(C::Table, A::Top), "g/Home");
        assert_eq!(label(C::Table, A::Bottom), "G/End");
        assert_eq!(label(C::Table, A::PrevVerdictFilter), "S-Tab");
        assert_eq!(
            label(C::Confirm, A::ConfirmYes),
            "y",
            "Y is not listed twice"
        );
        assert_eq!(label(C::Confirm, A::ConfirmNo), "n/Esc/q");
        assert_eq!(super::key(C::Global, A::Quit), "Ctrl-C");
        // Every bound key of every binding triggers it.
        for b in KEYMAP {
            for k in b.keys {
                let ev = KeyEvent::new(k.code, k.mods);
                assert_eq!(lookup(b.context, &ev), Some(b.action), "{}", k.name());
            }
        }
    }

    #[test]
    fn the_readme_shows_this_key_map() {
        let readme = include_str!("../../README.md");
        let table = markdown();
        let start = "<!-- key map: generated from src/tui/keymap.rs -->\n";
        let inside = readme
            .split_once(start)
            .and_then(|(_, rest)| rest.split_once("<!-- end of key map -->"))
            .map(|(t, _)| t);
        assert_eq!(
            inside,
            Some(table.as_str()),
            "the README's key map differs from the key map; put this between its markers:\n{table}"
        );
    }
}
